// inject_hostile.test.mjs — text typed into a pane is data, never keys.
//
// The worker is agents/prompt_agent.mjs with --commands: like a real coding
// agent it quits on Ctrl-C or Ctrl-D, runs "!cmd" as a shell command and
// quits on "/exit", and a shell sits under it in the pane. Each hostile
// brief tries to touch a marker file: through a control byte acting as a
// key (Ctrl-C, Ctrl-D, a carriage return submitting early, DEL, ESC [ 201 ~
// ending the bracketed paste), or through a leading command character. None
// may: every marker stays absent, the agent stays up, each brief arrives
// once as one input with fleet's visible stand-ins, and the sender hears
// injected with a note of what was changed. A nudge line takes the same
// path (covered in nudge tests); briefs from another host too
// (inject_crosshost.test.mjs).

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { BIN_DIR, callTool, fleetTest, sleep, waitFor } from './harness.mjs';
import { startPromptAgent, stopTmux } from './tmux-harness.mjs';

const PREFIX = '(fleet) ';
/** The stand-in of a C0 byte: its Control Pictures character. */
const pic = (b) => String.fromCodePoint(0x2400 + b);

fleetTest('no byte of a brief acts as a key: control bytes, a paste end and leading commands run nothing', async (f) => {
  let a;
  try {
    await f.startFleetd({ config: { nudge: { enabled: false, quietMs: 200 }, inject: { timeoutS: 20 } } });
    a = await startPromptAgent(f, {
      mcp: true,
      commands: true,
      binDir: BIN_DIR,
      env: { FLEET_SOCKET: f.socket, FLEET_NAME: 'w', FLEET_ROLE: 'worker' },
    });
    const lead = await f.mcpClient('lead', { role: 'lead' });
    await waitFor(async () => {
      const l = await callTool(lead, 'fleet_list', {});
      return l.entities.some((e) => e.name === 'w' && e.status === 'online');
    }, { what: 'the worker online' });

    const marker = (n) => path.join(f.dir, `marker-${n}`);
    // The agent itself proves the marker test works: its own "!" runs.
    const cases = [
      { name: 'ctrl-c', content: `x\x03touch ${marker(1)}\r`, want: `x${pic(3)}touch ${marker(1)}${pic(13)}` },
      { name: 'ctrl-d', content: `x\x04touch ${marker(2)}\r`, want: `x${pic(4)}touch ${marker(2)}${pic(13)}` },
      {
        name: 'carriage return submits early',
        content: `hi\r/exit\rtouch ${marker(3)}\r`,
        want: `hi${pic(13)}/exit${pic(13)}touch ${marker(3)}${pic(13)}`,
      },
      {
        name: 'paste end inside a paste',
        content: `two\nlines\x1b[201~\r/exit\rtouch ${marker(4)}\r`,
        want: `two\nlines\u241b[201~${pic(13)}/exit${pic(13)}touch ${marker(4)}${pic(13)}`,
      },
      { name: 'DEL', content: `\x7f!touch ${marker(5)}`, want: `\u2421!touch ${marker(5)}` },
      { name: 'C1 CSI', content: `\u009b2J\u0085!touch ${marker(6)}`, want: `\ufffd2J\ufffd!touch ${marker(6)}` },
      { name: 'other C0', content: `\x01\x1a\x1c\x08z`, want: `${pic(1)}${pic(0x1a)}${pic(0x1c)}${pic(8)}z` },
      { name: 'leading !', content: `! touch ${marker(7)}`, want: `${PREFIX}! touch ${marker(7)}`, command: '!' },
      { name: 'leading /', content: '/exit', want: `${PREFIX}/exit`, command: '/' },
      { name: 'leading / after blanks', content: ' \n/exit', want: `${PREFIX} \n/exit`, command: '/' },
      { name: 'leading #', content: '#note', want: `${PREFIX}#note`, command: '#' },
      // A "!" anywhere switches some agents to a shell (opencode): typed as a
      // paste, it stays text.
      { name: 'a ! inside', content: `hi; !touch ${marker(9)}`, want: `hi; !touch ${marker(9)}`, plain: true },
    ];
    const want = [];
    for (const c of cases) {
      const r = await callTool(lead, 'fleet_send', { to: 'w', content: c.content });
      assert.equal(r.status, 'injected', `${c.name}: ${JSON.stringify(r)}`);
      if (c.plain) {
        assert.equal(r.note, undefined, `${c.name}: nothing was changed: ${JSON.stringify(r)}`);
      } else {
        assert.ok(r.note, `${c.name}: the sender hears what was changed: ${JSON.stringify(r)}`);
        if (c.command) assert.match(r.note, new RegExp(`leading '\\${c.command}'`), c.name);
        else assert.match(r.note, /control or invalid byte/, c.name);
      }
      want.push(c.want);
    }
    // Plain text is typed as it is, with no note.
    const plain = await callTool(lead, 'fleet_send', { to: 'w', content: 'plain text, a / and a ! inside' });
    assert.equal(plain.status, 'injected');
    assert.equal(plain.note, undefined);
    want.push('plain text, a / and a ! inside');

    await sleep(800); // anything a key could have started has run by now
    for (const n of [1, 2, 3, 4, 5, 6, 7, 9]) assert.equal(existsSync(marker(n)), false, `marker ${n} was not created`);
    assert.deepEqual(a.submitted(), want, 'each brief arrived once, whole, as one input, with stand-ins');
    assert.equal((await a.cursorLine()), '>', 'the agent is still up at its prompt');

    // The marker check itself works: the agent's own command mode runs.
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path.join(f.dir, 'x'), '');
    const { tmux } = await import('./tmux-harness.mjs');
    await tmux(f, a.sock, 'send-keys', '-t', a.pane, '-l', `!touch ${marker(8)}`);
    await tmux(f, a.sock, 'send-keys', '-t', a.pane, 'Enter');
    await waitFor(() => existsSync(marker(8)), { what: 'a typed "!touch" runs in the agent' });
  } finally {
    if (a) await stopTmux(f, a.sock);
  }
});
