// inject_busy.test.mjs — a profile's `busy` pattern: an agent whose input
// line looks like an empty prompt while it works, on a screen that stays
// still (as Codex's does), is busy while a line of its screen matches the
// pattern. A brief for it waits (counted in inject_busy_deferred, nothing
// typed) and goes in once, when that line is gone.
//
// The spawned agent is agents/prompt_agent.mjs: its BUSY file holding
// "still" makes it print "• Working (3s • esc to interrupt)" once and
// prompt again, so neither the prompt nor the quiet test can tell.

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BIN_DIR, callTool, fleetctlJson, fleetTest, sleep, waitFor } from './harness.mjs';
import { promptAgentProfile, spawnedInputs, startTmux, stopTmux, tmux } from './tmux-harness.mjs';

const BUSY = '^(•|◦) .*\\(([0-9]+[hms] ?)+ • esc to interrupt';

async function deferred(f) {
  const st = await fleetctlJson(f, ['status']);
  return (st.counters || st).inject_busy_deferred ?? 0;
}

fleetTest('a brief waits while a line of the screen matches the profile busy pattern, then goes in once', async (f) => {
  const sock = path.join(f.dir, 'tmux.sock');
  const busyFile = path.join(f.dir, 'spawned-busy');
  try {
    const pane = await startTmux(f, sock, 'exec cat');
    await f.startFleetd({
      config: { profiles: { agent: promptAgentProfile(f.dir, BIN_DIR, { busy: BUSY, quietMs: 300 }) } },
    });
    const boss = await f.mcpClient('boss', { role: 'lead', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const res = await callTool(boss, 'fleet_spawn', { profile: 'agent', name: 'w' });
    assert.equal(res.status, 'ready', JSON.stringify(res));
    const first = await callTool(boss, 'fleet_send', { to: 'w', content: 'while idle' });
    assert.equal(first.status, 'injected', JSON.stringify(first));
    await waitFor(() => spawnedInputs(f.dir).length === 1, { what: 'the first brief typed in' });

    // At work, with its prompt back on a still screen.
    writeFileSync(busyFile, 'still');
    const screen = async () => {
      const [sp] = (await tmux(f, sock, 'list-panes', '-a', '-F', '#{pane_id} #{window_name}'))
        .split('\n')
        .filter((l) => l && !l.startsWith(`${pane} `));
      return tmux(f, sock, 'capture-pane', '-p', '-t', sp.split(' ')[0]);
    };
    await waitFor(async () => /esc to interrupt\)\n> *\n/.test(await screen()), { what: 'the status line and the prompt' });
    const d0 = await deferred(f);
    let answer = null;
    const sending = callTool(boss, 'fleet_send', { to: 'w', content: 'while at work' }).then((r) => (answer = r));
    await waitFor(async () => (await deferred(f)) > d0, { interval: 100, what: 'the brief held for the busy agent' });
    await sleep(1500); // looks again and again: the line is still there, so still busy
    assert.equal(answer, null, 'no answer while it works');
    assert.deepEqual(spawnedInputs(f.dir), ['while idle'], 'nothing was typed while the status line showed');

    rmSync(busyFile);
    await sending;
    assert.equal(answer.status, 'injected', JSON.stringify(answer));
    await waitFor(() => spawnedInputs(f.dir).length === 2, { what: 'the brief typed in after the work' });
    await sleep(500);
    assert.deepEqual(spawnedInputs(f.dir), ['while idle', 'while at work'], 'it went in once, after the work');
  } finally {
    await stopTmux(f, sock);
  }
});
