// inject_busy.test.mjs — a profile's `busy` pattern: an agent whose input
// line looks like an empty prompt while it works, on a screen that stays
// still (as Codex's does), is busy while a line of its screen matches the
// pattern. A brief for it waits (counted in inject_busy_deferred, nothing
// typed) and goes in once, when that line is gone.
//
// The spawned agent is agents/prompt_agent.mjs: its BUSY file holding
// "still:LINE" makes it print LINE once and prompt again, so neither the
// prompt nor the quiet test can tell. LINE is what the agent shows at work
// (Codex's status line; Claude Code's status bar, which on a loaded machine
// can stay still for longer than quietMs), and the pattern is the one
// `fleetctl profile` prints for that agent.

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BIN_DIR, callTool, fleetctlJson, fleetTest, sleep, waitFor } from './harness.mjs';
import { promptAgentProfile, spawnedInputs, startTmux, stopTmux, tmux } from './tmux-harness.mjs';

// What each agent shows while at work, and, for Claude Code, at rest
// (2.1.332, seen in its pane).
const AGENTS = [
  { agent: 'codex', atWork: '• Working (3s • esc to interrupt)' },
  { agent: 'claude', atWork: '  ⏸ manual mode on · esc to interrupt · ← for agents', atRest: '  ⏸ manual mode on · ? for shortcuts · ← for agents' },
];

async function deferred(f) {
  const st = await fleetctlJson(f, ['status']);
  return (st.counters || st).inject_busy_deferred ?? 0;
}

for (const { agent, atWork, atRest } of AGENTS) {
fleetTest(`a brief waits while a line of the screen matches the busy pattern of fleetctl's ${agent} profile, then goes in once`, async (f) => {
  const printed = await f.fleetctl(['--json', 'profile', agent, '--dir', path.join(f.dir, 'prof'), '--cwd', f.dir], { noSocket: true });
  const BUSY = JSON.parse(printed.stdout).profile.busy;
  assert.ok(BUSY, `the ${agent} profile has a busy pattern`);
  assert.match(atWork, new RegExp(BUSY), 'the pattern matches the line at work');
  if (atRest) assert.doesNotMatch(atRest, new RegExp(BUSY), 'and not the line at rest');
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
    writeFileSync(busyFile, `still:${atWork}`);
    const screen = async () => {
      const [sp] = (await tmux(f, sock, 'list-panes', '-a', '-F', '#{pane_id} #{window_name}'))
        .split('\n')
        .filter((l) => l && !l.startsWith(`${pane} `));
      return tmux(f, sock, 'capture-pane', '-p', '-t', sp.split(' ')[0]);
    };
    await waitFor(async () => (await screen()).includes(`${atWork.trimEnd()}\n>`), { what: 'the status line and the prompt' });
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
}
