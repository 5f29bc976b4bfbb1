// spawn.test.mjs — fleet_spawn and fleet_stop on this host, with a real tmux
// server on its own socket. The spawner tells fleetd its pane and tmux
// socket (TMUX_PANE, TMUX), so the new agent's window opens on that server.
// The spawned "agent" is a real program: agents/prompt_agent.mjs --mcp
// shows a prompt, starts fleet-mcp with the environment fleetd gave its
// window and registers, which is the readiness gate; its brief is then typed
// into its pane (and recorded once). A profile whose command never registers
// fails after its readyTimeoutS and its window is closed; fleet_stop closes
// the agent's pane and takes it out of fleet_list, and only its spawner (or
// the operator, or whom authority.stop names) may stop it.

import assert from 'node:assert/strict';
import path from 'node:path';
import { BIN_DIR, callTool, callToolRaw, fleetTest, resultText, waitFor } from './harness.mjs';
import { panes, promptAgentProfile, spawnedInputs, startTmux as startServer, stopTmux, tmux } from './tmux-harness.mjs';

/** A server on sock with one idle pane; returns its pane id. */
const startTmux = (f, sock) => startServer(f, sock, 'exec cat');

function profiles(f) {
  return {
    profiles: {
      agent: promptAgentProfile(f.dir, BIN_DIR, { groups: ['spawned'] }),
      mute: { backend: 'tmux', command: ['sleep', '600'], role: 'worker', readyTimeoutS: 2 },
    },
  };
}

async function withTmux(f, fn) {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    const pane = await startTmux(f, sock);
    await f.startFleetd({ config: profiles(f) });
    await fn(sock, pane);
  } finally {
    await stopTmux(f, sock);
  }
}

fleetTest('fleet_spawn starts an agent that registers: ready, in fleet_list with its role; fleet_stop by the spawner removes it', async (f) => {
  await withTmux(f, async (sock, pane) => {
    const boss = await f.mcpClient('boss', { role: 'architect', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const other = await f.mcpClient('other', { role: 'worker' });
    const before = await panes(f, sock);

    const res = await callTool(boss, 'fleet_spawn', { profile: 'agent', brief: 'your first task' });
    assert.equal(res.status, 'ready');
    assert.match(res.gid, /^[0-9a-f-]{36}$/i);
    assert.equal(res.name, 'agent-1');
    assert.equal(res.profile, 'agent');

    const list = await callTool(boss, 'fleet_list', {});
    const e = list.entities.find((x) => x.gid === res.gid);
    assert.ok(e, `spawned gid in fleet_list: ${JSON.stringify(list.entities)}`);
    assert.equal(e.name, 'agent-1');
    assert.equal(e.role, 'worker');
    assert.deepEqual(e.groups, ['spawned']);
    assert.equal(e.status, 'online');
    const mine = await panes(f, sock);
    assert.equal(mine.length, before.length + 1, 'one new pane');
    const agentPane = mine.find((p) => !before.includes(p));

    // The brief is typed into its pane, once, as a brief from the spawner.
    await waitFor(() => spawnedInputs(f.dir).includes('your first task'), { what: 'the brief typed into the agent' });
    assert.equal(spawnedInputs(f.dir).filter((l) => l === 'your first task').length, 1);
    assert.ok(agentPane);

    // Someone unrelated may not stop it.
    const refused = await callToolRaw(other, 'fleet_stop', { to: res.gid });
    assert.equal(refused.isError, true);
    assert.match(resultText(refused), /only the agent that spawned/);

    const stopped = await callTool(boss, 'fleet_stop', { to: 'agent-1' });
    assert.equal(stopped.status, 'stopped');
    assert.equal(stopped.gid, res.gid);
    const after = await callTool(boss, 'fleet_list', {});
    assert.equal(after.entities.find((x) => x.gid === res.gid), undefined, 'gone from fleet_list');
    await waitFor(async () => (await panes(f, sock)).length === before.length, { what: 'the agent pane closed' });
    assert.ok(!(await panes(f, sock)).includes(agentPane));

    const status = JSON.parse((await f.fleetctl(['--json', 'status'])).stdout);
    const counters = status.counters || status;
    assert.equal(counters.spawns, 1);
    assert.equal(counters.stops, 1);

    // Stopped for good: not back after a restart.
    await f.stopFleetd();
    await f.startFleetd({ config: profiles(f) });
    const lead = await f.mcpClient('lead2', { role: 'lead' });
    const again = await callTool(lead, 'fleet_list', {});
    assert.equal(again.entities.find((x) => x.name === 'agent-1'), undefined, 'not back after a restart');
    assert.ok(again.entities.find((x) => x.name === 'boss'), 'others are');
  });
});

fleetTest('fleet_spawn with an unknown profile names the profiles that exist', async (f) => {
  await withTmux(f, async (sock, pane) => {
    const boss = await f.mcpClient('boss', { role: 'lead', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const res = await callToolRaw(boss, 'fleet_spawn', { profile: 'nope' });
    assert.equal(res.isError, true);
    assert.match(resultText(res), /unknown profile 'nope'/);
    assert.match(resultText(res), /agent, mute/);
    const other = await callToolRaw(boss, 'fleet_spawn', { profile: 'agent', host: 'elsewhere' });
    assert.equal(other.isError, true);
    assert.match(resultText(other), /unknown host 'elsewhere'.*no broker/);
  });
});

fleetTest('a spawn that never registers fails "not ready within 2 s" and its window is closed', async (f) => {
  await withTmux(f, async (sock, pane) => {
    const boss = await f.mcpClient('boss', { role: 'lead', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const before = await panes(f, sock);
    const res = await callToolRaw(boss, 'fleet_spawn', { profile: 'mute' });
    assert.equal(res.isError, true);
    assert.match(resultText(res), /not ready within 2 s/);
    assert.deepEqual(await panes(f, sock), before, 'the window is gone');
    const list = await callTool(boss, 'fleet_list', {});
    assert.equal(list.entities.find((x) => x.name === 'mute-1'), undefined);
    const status = JSON.parse((await f.fleetctl(['--json', 'status'])).stdout);
    const counters = status.counters || status;
    assert.equal(counters.spawn_failures, 1);
  });
});

fleetTest('fleet_spawn with wait_s 0 returns pending; the agent registers later', async (f) => {
  await withTmux(f, async (sock, pane) => {
    const boss = await f.mcpClient('boss', { role: 'lead', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const res = await callTool(boss, 'fleet_spawn', { profile: 'agent', name: 'late', wait_s: 0 });
    assert.equal(res.status, 'pending');
    assert.equal(res.name, 'late');
    await waitFor(async () => {
      const l = await callTool(boss, 'fleet_list', {});
      return l.entities.find((x) => x.gid === res.gid && x.status === 'online');
    }, { what: 'the pending spawn registering' });
  });
});

fleetTest('fleetctl spawn and stop: the window opens on the caller\'s tmux server; usage errors are plain', async (f) => {
  await withTmux(f, async (sock) => {
    const env = { TMUX: `${sock},0,0` };
    const before = await panes(f, sock);
    const r = await f.fleetctl(['--as', 'ops', 'spawn', 'agent', '--name', 'helper', '--wait', '20'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^spawned helper \([0-9a-f-]{36}\) on \S+ from profile agent: ready$/m);
    assert.equal((await panes(f, sock)).length, before.length + 1, 'the window opened on this tmux server');
    const roster = JSON.parse((await f.fleetctl(['--json', 'roster'])).stdout);
    assert.ok(roster.entities.find((e) => e.name === 'helper'), JSON.stringify(roster.entities));

    const unknown = await f.fleetctl(['--as', 'ops', 'spawn', 'nope'], { env });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /unknown profile 'nope'/);
    const misuse = await f.fleetctl(['--as', 'ops', 'send', 'helper', 'hi', '--name', 'x']);
    assert.equal(misuse.code, 2);
    assert.match(misuse.stderr, /--host, --name and --brief are for spawn/);

    const s = await f.fleetctl(['--as', 'ops', 'stop', 'helper'], { env });
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stdout, /^stopped helper \([0-9a-f-]{36}\)/m);
    const after = JSON.parse((await f.fleetctl(['--json', 'roster'])).stdout);
    assert.equal(after.entities.find((e) => e.name === 'helper'), undefined, 'gone from the roster');
    await waitFor(async () => (await panes(f, sock)).length === before.length, { what: 'the pane closed' });
  });
});
