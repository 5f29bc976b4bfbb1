// hook_restart.test.mjs — a worker's hook waiter across a fleetd restart
// (clients/fleet-hook.c, gateway/verbs/hook.c), with a scripted stand-in for
// the agent: agents/prompt_agent.mjs in a tmux pane (it records every input
// typed into it, and draws a busy screen while its busy flag exists), and
// fleet-hook run as Claude Code runs it (the hook's JSON on stdin, FLEET_GID
// and FLEET_SOCKET in its environment).
//
// The waiter of a Stop is parked; a new turn starts (UserPromptSubmit); fleetd
// restarts. The waiter connects again and asks again, marked reconnect: the
// new fleetd parks it and leaves the worker's state unknown (the Stop it
// reports is old news), so a brief sent while the turn runs is neither handed
// to the waiter nor typed (the screen is busy). The turn's real Stop makes
// the worker idle again, and the brief goes to that Stop's waiter, once.
// Both kinds of restart: SIGTERM and kill -9.

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { BIN_DIR, callTool, fleetTest, fleetctlJson, sleep, waitFor } from './harness.mjs';
import { startHook, track } from './hook-harness.mjs';
import { startPromptAgent, stopTmux } from './tmux-harness.mjs';

const CONFIG = { nudge: { enabled: false, quietMs: 200 }, inject: { timeoutS: 60 } };

/** Runs fleet-hook for gid as an agent's hook would (event, --wake when wake); returns { child, done }. */
const runHook = (f, gid, event, { wake = false, extra = {}, shell = false } = {}) =>
  startHook({ gid, socket: f.socket, args: wake ? ['--wake'] : [], input: { session_id: 's-1', hook_event_name: event, ...extra }, shell });

async function status(f) {
  return fleetctlJson(f, ['status']);
}

/** The worker's row in fleet_list, asked of a lead that may still be reconnecting. */
async function workerRow(lead, name) {
  try {
    return (await callTool(lead, 'fleet_list', {})).entities.find((e) => e.name === name && e.status === 'online');
  } catch {
    return undefined; // fleet-mcp not connected again yet
  }
}

for (const how of ['SIGTERM', 'kill -9']) {
  fleetTest(`a waiter back after a fleetd restart (${how}) is parked, the busy worker is not taken for idle, and a brief waits for the real Stop`, async (f) => {
    await f.startFleetd({ config: CONFIG });
    const a = await startPromptAgent(f, {
      label: 'w',
      mcp: true,
      binDir: BIN_DIR,
      env: { FLEET_SOCKET: f.socket, FLEET_NAME: 'w', FLEET_ROLE: 'worker' },
    });
    const lead = await f.mcpClient('lead', { role: 'lead' });
    let old;
    let stop;
    try {
      const gid = (await waitFor(() => workerRow(lead, 'w'), { what: 'w online' })).gid;
      // The last turn's Stop parks its waiter; then a new turn starts.
      old = runHook(f, gid, 'Stop', { wake: true });
      await waitFor(async () => (await status(f)).hookDelivery?.waiters === 1, { what: 'the waiter parked' });
      writeFileSync(a.busy, '');
      await runHook(f, gid, 'UserPromptSubmit', { extra: { prompt: 'a long task' } }).done;
      assert.equal((await workerRow(lead, 'w')).activity.state, 'busy');

      if (how === 'SIGTERM') await f.stopFleetd();
      else await f.kill9();
      await f.startFleetd({ config: CONFIG });

      // The waiter is back, parked; the worker is online again.
      await waitFor(async () => (await status(f)).hookDelivery?.waiters === 1, { timeout: 60000, what: 'the waiter parked again' });
      const row = await waitFor(() => workerRow(lead, 'w'), { what: 'w online again' });
      assert.equal(row.activity, undefined, `its state is unknown, not the old Stop's idle: ${JSON.stringify(row.activity)}`);
      const old1 = track(old.done);

      // A brief while the turn runs: not handed to the waiter, not typed.
      const sending = track(callTool(lead, 'fleet_send', { to: 'w', content: 'AFTER-RESTART' }));
      await sleep(3000);
      assert.equal(old1.done, false, `the waiter was not woken mid-turn: ${JSON.stringify(old1.value)}`);
      assert.equal(sending.done, false, 'the brief waits');
      assert.deepEqual(a.submitted(), [], 'nothing typed into the busy pane');

      // The turn's real Stop: idle, and its waiter (the newest) gets the brief, once.
      stop = runHook(f, gid, 'Stop', { wake: true });
      const got = await stop.done;
      assert.equal(got.code, 2, JSON.stringify(got));
      assert.match(got.stderr, /\nAFTER-RESTART$/);
      assert.equal((await sending.p).status, 'injected');
      rmSync(a.busy, { force: true });
      await sleep(1000);
      assert.deepEqual(a.submitted(), [], 'nothing typed');
      assert.equal(old1.done, false, 'the old waiter got nothing');
      const st = await status(f);
      assert.equal(st.hooks.reconnects, 1);
      assert.equal(st.hookDelivery.briefs, 1);
    } finally {
      old?.child.kill('SIGKILL');
      stop?.child.kill('SIGKILL');
      await stopTmux(f, a.sock);
    }
  });
}
