// worker_flow.mjs — one real agent CLI as a spawned fleet worker, checked at
// the fake model: what the tests of opencode and Codex share.
//
// workerFlow(f, t, agent) spawns the agent with the profile that
// `fleetctl profile AGENT` prints (written as printed), on a private tmux
// server whose environment (a temp HOME, the agent's own config pointing at
// the fake model, the switches that keep it offline) agent.env() gives, and
// runs its steps as subtests on the one worker:
//
//   ready      it registers, and its idle input line matches the profile's prompt
//   briefs     one line, several lines: each reaches the model once, as one
//              user turn, and the sender hears `replied`
//   busy       a brief sent while the model holds a turn open (on a gate the
//              test opens once fleetd has found the agent busy, counted in
//              inject_busy_deferred) arrives once, after that turn; the
//              sender hears `injected` or `replied`
//   nudge      a broadcast held for the worker: the nudge reaches the model,
//              which polls (fleet_poll) and gets the broadcast
//   hostile    control bytes, an end-of-paste sequence inside a multi-line
//              brief, a leading ! or /, a ! inside one line: nothing runs,
//              the agent lives on, each arrives once as inject_text.h says
//              and the sender hears a note of what was changed
//   restart    fleetd stops and starts again under the worker: it is online
//              again with its gid, and a brief after that arrives once
//   stop       `fleetctl stop` ends it: gone from the roster, its pane closed
//
// agent: { name ('opencode' | 'codex'), env(model, f, profile) → the tmux
// server's environment (it writes the agent's own config) }.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  CLIS_DIR,
  TmuxServer,
  callTool,
  configWithProfile,
  count,
  describeRequests,
  fleetctlJson,
  gate,
  profileFor,
  startModel,
  waitFor,
} from './cli_harness.mjs';

export const NUDGE_RE = /call the fleet_poll tool/;

/**
 * What a pane is typed for text, by the rule of gateway/inject/inject_text.h: a C0
 * control byte other than newline and tab becomes its Control Pictures
 * stand-in (U+2400 + byte), DEL U+2421, a C1 control U+FFFD, a CR before a
 * newline is dropped; a text whose first non-blank character is one of
 * commandChars gets "(fleet) " in front.
 */
export function typedFor(text, commandChars = '!/#') {
  const lead = text.match(/^[ \t\n]*/)[0].length;
  const prefix = lead < text.length && commandChars.includes(text[lead]) ? '(fleet) ' : '';
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0d && text[i + 1] === '\n') continue;
    if (c < 0x20 && c !== 0x0a && c !== 0x09) out += String.fromCharCode(0x2400 + c);
    else if (c === 0x7f) out += '\u2421';
    else if (c >= 0x80 && c <= 0x9f) out += '\ufffd';
    else out += text[i];
  }
  return prefix + out;
}

// opencode ends a pasted text with a space in its input line, which it
// sends; typedBy() takes such trailing blanks off what the model got.
const typedBy = (p) => (p == null ? p : p.replace(/[ ]+$/, ''));

/** The tool of request r whose name ends in `name` (opencode: fleet_fleet_x, Codex: mcp__fleet__fleet_x). */
export function toolName(r, name) {
  const t = r.tools.find((n) => n === name || n.endsWith(`_${name}`));
  assert.ok(t, `the model was not offered ${name}: ${r.tools.join(' ')}`);
  return t;
}

/** The newest tool result of r whose tool name ends in name, or undefined. */
export function resultOf(r, name) {
  return [...r.toolResults].reverse().find((x) => x.name && (x.name === name || x.name.endsWith(`_${name}`)));
}

/**
 * The model's script for a worker: a brief (a user turn carrying a tag
 * `[bN]`) is answered with fleet_reply to its sender; a gated brief first
 * waits for its gate; the nudge is answered with fleet_poll; a turn after a
 * tool result ends with a short text.
 */
export function workerScript(state) {
  return async (r) => {
    if (r.side) return { text: 'Fleet worker' };
    if (r.lastUser == null) return { text: 'done' };
    if (NUDGE_RE.test(r.lastUser)) return { toolCalls: [{ name: toolName(r, 'fleet_poll'), input: {} }] };
    const tag = (r.lastUser.match(/\[b\d+\]/) || [])[0];
    if (tag && state.gates[tag]) {
      state.held[tag] = true;
      await state.gates[tag].promise;
    }
    if (tag) {
      return { toolCalls: [{ name: toolName(r, 'fleet_reply'), input: { to: 'lead', content: `got ${tag}` } }] };
    }
    return { text: 'ok' };
  };
}

/** Runs fn as a subtest; a failure carries the model's requests and fleetd's log. */
function step(t, f, model, name, fn) {
  return t.test(name, async () => {
    try {
      await fn();
    } catch (e) {
      try {
        e.message += `\n--- model requests:\n${describeRequests(model.requests)}${f.diagnostics()}`;
      } catch {
        // a read-only message
      }
      throw e;
    }
  });
}

export async function workerFlow(f, t, agent) {
  const state = { gates: {}, held: {} };
  const model = await startModel(f, workerScript(state));
  // Each delivered brief opens with fleet's provenance line (the user
  // guide, Hooks); the checks below are about the text after it.
  const PROVENANCE = /^\(fleet\) from lead@[A-Za-z0-9._:-]+ \(role [A-Za-z0-9._:-]+\), verified: local, msgId [^\n;]+; answer with fleet_reply to lead@[^\n]*\n/;
  const prompts = () => model.prompts().map((p) => p.replace(PROVENANCE, ''));
  const bin = path.join(CLIS_DIR, 'node_modules', '.bin');
  // PATH holds the pinned CLI, so the profile names it by absolute path.
  const prof = await profileFor(f, agent.name, { env: { PATH: `${bin}:${process.env.PATH}` } });
  assert.ok(path.isAbsolute(prof.profile.command[0]), `command[0] is absolute: ${prof.profile.command[0]}`);
  // A brief that cannot be typed fails within a minute (not the default
  // two), so a broken step ends the test sooner; a working one is not slowed.
  const config = configWithProfile(agent.name, prof.profile, { inject: { timeoutS: 60 } });
  await f.startFleetd({ config });
  const tmux = new TmuxServer(f);
  await tmux.start('exec cat', { env: await agent.env(model, f, prof) });
  const before = await tmux.panes();
  const lead = await f.mcpClient('lead', { role: 'lead' });
  let pane = null;
  let gid = null;
  const roster = async () => (await fleetctlJson(f, ['roster'])).entities;
  const online = async () => (await roster()).find((e) => e.name === 'w1' && e.status === 'online');
  const send = (content, wait_s = 45) => callTool(lead, 'fleet_send', { to: 'w1', content, wait_s }, { timeout: 170000 });
  const promptRe = new RegExp(prof.profile.prompt);
  const idle = () =>
    tmux.waitScreen(pane, async () => promptRe.test(await tmux.cursorLine(pane)), {
      timeout: 60000,
      what: `an idle input line matching ${prof.profile.prompt}`,
    });
  const onceEach = (tags) => {
    for (const tag of tags) {
      assert.equal(count(prompts(), (p) => p.includes(tag)), 1, `${tag} reached the model exactly once: ${JSON.stringify(prompts())}`);
    }
  };

  await step(t, f, model, 'spawned with the printed profile, it registers and idles at its prompt', async () => {
    const sp = await fleetctlJson(f, ['--as', 'ops', 'spawn', agent.name, '--name', 'w1', '--wait', '55'], {
      env: { TMUX: tmux.tmuxEnv() },
      timeout: 90000,
    });
    assert.equal(sp.status, 'ready', JSON.stringify(sp));
    gid = sp.gid;
    assert.ok(await online(), 'w1 is online in the roster');
    const now = await tmux.panes();
    pane = now.find((p) => !before.includes(p));
    assert.ok(pane, `the worker's pane opened on the test's tmux server: ${now}`);
    await idle();
  });

  const briefs = [];
  await step(t, f, model, 'a one-line and a three-line brief: each one user turn, once; the sender hears replied', async () => {
    const one = '[b1] Summarize the open issues in one line.';
    let r = await send(one);
    assert.equal(r.status, 'replied', JSON.stringify(r));
    assert.equal(r.reply.content, 'got [b1]');
    // (typed as a paste, with the provenance line above it: see typedBy)
    assert.ok(prompts().map(typedBy).includes(one), `the one-line brief arrived as typed: ${JSON.stringify(prompts())}`);
    assert.ok(model.prompts().some((p) => PROVENANCE.test(p) && typedBy(p).endsWith(one)), `it opened with fleet's provenance line: ${JSON.stringify(model.prompts())}`);
    await idle();
    const three = '[b2] Three lines follow:\nsecond line, with "quotes" and $(not a command)\nthird line\tand a tab';
    r = await send(three);
    assert.equal(r.status, 'replied', JSON.stringify(r));
    assert.equal(r.reply.content, 'got [b2]');
    const got = prompts().find((p) => p.includes('[b2]'));
    assert.equal(typedBy(got), three, 'the three lines arrived as one user turn, newlines intact');
    briefs.push('[b1]', '[b2]');
    onceEach(briefs);
    await idle();
  });

  await step(t, f, model, 'a brief sent while the agent is busy arrives once, after that turn', async () => {
    state.gates['[b3]'] = gate();
    const holdP = send('[b3] Start a long job.');
    await waitFor(() => state.held['[b3]'], { timeout: 60000, what: 'the model holding the [b3] turn' });
    // The turn stays open until fleetd has taken [b4] up and found the
    // agent busy (inject_busy_deferred), however slow the machine is.
    const deferred = async () => {
      const st = await fleetctlJson(f, ['status']);
      return (st.counters || st).inject_busy_deferred ?? 0;
    };
    const d0 = await deferred();
    let answer = null;
    const busyP = send('[b4] A brief while you are busy.').then((r) => (answer = r));
    await waitFor(async () => (await deferred()) > d0, { timeout: 60000, interval: 200, what: 'fleetd holding [b4] for the busy agent' });
    assert.equal(answer, null, 'the sender has no answer while the agent is busy');
    assert.equal(count(prompts(), (p) => p.includes('[b4]')), 0, '[b4] is not at the model while [b3] holds');
    state.gates['[b3]'].open();
    const [hold, busy] = await Promise.all([holdP, busyP]);
    assert.equal(hold.status, 'replied', JSON.stringify(hold));
    assert.ok(['injected', 'replied'].includes(busy.status), JSON.stringify(busy));
    await waitFor(() => count(prompts(), (p) => p.includes('[b4]')) === 1, { timeout: 60000, what: '[b4] at the model' });
    const order = prompts().filter((p) => /\[b[34]\]/.test(p));
    assert.ok(order[0].includes('[b3]') && order[1].includes('[b4]'), `[b4] came after [b3]: ${JSON.stringify(order)}`);
    briefs.push('[b3]', '[b4]');
    await idle();
    onceEach(briefs);
  });

  await step(t, f, model, 'the nudge for a held broadcast reaches the model, which polls and gets it', async () => {
    const n0 = count(prompts(), (p) => NUDGE_RE.test(p));
    const bc = await callTool(lead, 'fleet_broadcast', { content: 'broadcast-for-w1: rebase on main' });
    assert.ok(bc.recipients >= 1, JSON.stringify(bc));
    await waitFor(
      () => model.requests.some((r) => (resultOf(r, 'fleet_poll')?.text || '').includes('broadcast-for-w1')),
      { timeout: 90000, what: 'a fleet_poll result with the broadcast at the model' }
    );
    assert.ok(count(prompts(), (p) => NUDGE_RE.test(p)) > n0, 'the nudge reached the model as a user turn');
    const w1 = (await roster()).find((e) => e.name === 'w1');
    assert.equal(w1.held, 0, 'nothing is held for w1 after its poll');
    onceEach(briefs);
  });

  await step(t, f, model, 'a hostile brief runs nothing and the agent lives on', async () => {
    const m1 = path.join(f.dir, 'marker-bang');
    const m2 = path.join(f.dir, 'marker-paste');
    const m3 = path.join(f.dir, 'marker-ctl');
    const m4 = path.join(f.dir, 'marker-inline');
    const hostile = [
      // A leading ! is a shell command in both opencode and Codex.
      `!touch ${m1} [b5]`,
      // A leading / is a command; the end of a bracketed paste inside a
      // multi-line brief would let the rest be typed as keys.
      `/exit [b6]\nline two\x1b[201~\n!touch ${m2}\nline four`,
      // C0 controls: ^C and ^D stop an agent, CR submits early, ESC starts a sequence.
      `[b7] one\x03two\x04three\rfour\x1b[201~\n!touch ${m3}`,
      // A ! inside one line: opencode switches to its shell mode on a !
      // typed anywhere in its input, not only at its start.
      `[b8] all good; !touch ${m4}`,
    ];
    const results = [];
    for (const h of hostile) {
      // wait_s 0: the answer is `injected`, with the note of what was changed.
      results.push(await send(h, 0));
      assert.ok(await online(), `w1 is still online after ${JSON.stringify(h)}`);
    }
    for (const [i, r] of results.entries()) {
      assert.equal(r.status, 'injected', `hostile brief ${i} answered ${JSON.stringify(r)}`);
    }
    for (const m of [m1, m2, m3, m4]) assert.equal(existsSync(m), false, `${m} was not created`);
    await waitFor(() => hostile.every((_, i) => prompts().some((p) => p.includes(`[b${5 + i}]`))), {
      timeout: 60000,
      what: 'every hostile brief at the model',
    });
    for (const m of [m1, m2, m3, m4]) assert.equal(existsSync(m), false, `${m} was not created`);
    for (const i of [1, 2]) {
      assert.match(results[i].note || '', /stand-in/, `the sender hears what was changed: ${JSON.stringify(results[i])}`);
    }
    // Each reached the model once, as one user turn, made visible: what
    // inject_text.h says the pane is typed.
    for (const [i, h] of hostile.entries()) {
      const tag = `[b${5 + i}]`;
      const got = prompts().filter((p) => p.includes(tag));
      assert.equal(got.length, 1, `${tag} reached the model once: ${JSON.stringify(prompts())}`);
      assert.equal(typedBy(got[0]), typedFor(h, prof.profile.commandChars), `${tag} arrived neutralized`);
    }
    assert.ok((await tmux.panes()).includes(pane), 'the pane is still there');
    briefs.push('[b5]', '[b6]', '[b7]', '[b8]');
    await idle();
    onceEach(briefs);
  });

  await step(t, f, model, 'a fleetd restart under the worker: online again with its gid, a brief arrives once', async () => {
    await f.stopFleetd();
    await f.startFleetd({ config });
    await waitFor(
      async () => {
        const r = await f.fleetctl(['--json', 'roster']);
        if (r.code !== 0) return false;
        const es = JSON.parse(r.stdout).entities;
        const w1 = es.find((e) => e.name === 'w1');
        return w1 && w1.gid === gid && w1.status === 'online' && es.some((e) => e.name === 'lead' && e.status === 'online');
      },
      { timeout: 30000, interval: 250, what: 'w1 (with its gid) and lead online again' }
    );
    const r = await send('[b9] After the restart.');
    assert.equal(r.status, 'replied', JSON.stringify(r));
    briefs.push('[b9]');
    await idle();
    onceEach(briefs);
  });

  await step(t, f, model, 'fleetctl stop ends the worker', async () => {
    const s = await fleetctlJson(f, ['--as', 'ops', 'stop', 'w1']);
    assert.equal(s.status, 'stopped', JSON.stringify(s));
    assert.equal((await roster()).find((e) => e.name === 'w1'), undefined, 'w1 left the roster');
    await waitFor(async () => !(await tmux.panes()).includes(pane), { timeout: 20000, what: "the worker's pane closing" });
  });
}
