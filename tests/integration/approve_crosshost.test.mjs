// approve_crosshost.test.mjs — a lead on host A answers the permission
// request of the worker it spawned on host B, over the control plane: two
// fleetd on one private RabbitMQ, host B with a spawn profile and its own
// tmux server. The worker is a real program (agents/prompt_agent.mjs --mcp);
// its PermissionRequest hook is fleet-hook on host B's socket, driven with
// the JSON Claude Code gives it. Checked:
//   - the BLOCKED message crosses to the spawner on host A like any message;
//   - a session of host A that host B has not authorised is refused by B;
//   - an APPROVE forged in the spawner's name (not signed by host A's key)
//     is refused, and the hook goes on waiting;
//   - the spawner's allow reaches the hook on B;
//   - that APPROVE, captured off fleet.control and published again, is
//     refused as a replay and counted.

import assert from 'node:assert/strict';
import path from 'node:path';
import { BIN_DIR, callTool, callToolRaw, resultText, sleep, waitFor } from './harness.mjs';
import { startHook, track } from './hook-harness.mjs';
import { useBroker, hostsTest, pinAll, waitStatus } from './broker-harness.mjs';
import { promptAgentProfile, startTmux, stopTmux } from './tmux-harness.mjs';
import { amqpClient, counters, envelopeOf, freshKey, headersFor, rfc3339, signEnvelope, status, uuid } from './trust-helpers.mjs';

const brokerRef = useBroker();

/** fleet-hook on host's socket as worker gid: { result, done(), kill() }. */
function hook(host, gid, input) {
  const { child, done } = startHook({ gid, socket: host.socket, input });
  const t = track(done);
  return { result: done, done: () => t.done, kill: () => child.kill('SIGKILL') };
}

hostsTest('fleet_approve across hosts: BLOCKED reaches the spawner on A; B refuses an unauthorised, a forged and a replayed APPROVE', brokerRef, { start: false }, async ({ hostA, hostB, broker }) => {
  const sock = path.join(hostB.dir, 'tmux.sock');
  await startTmux(hostB, sock, 'exec cat');
  await Promise.all([
    hostA.startFleetd(),
    hostB.startFleetd({
      config: { profiles: { agent: promptAgentProfile(hostB.dir, BIN_DIR) }, hooks: { approveTimeoutMs: 60000 } },
      env: { TMUX: `${sock},0,0` },
    }),
  ]);
  await pinAll([hostA, hostB]);
  const amqp = await amqpClient(broker.uri);
  let asked = null;
  try {
    const cap = await amqp.conn.createChannel();
    const q = (await cap.assertQueue('', { exclusive: true })).queue;
    await cap.bindQueue(q, 'fleet.control', 'hostB');

    const lead = await hostA.mcpClient('lead', { role: 'lead' });
    const bystander = await hostA.mcpClient('bystander', { role: 'lead' });
    const watcher = await hostB.mcpClient('watcher', { role: 'worker' });
    await waitFor(async () => ((await callTool(lead, 'fleet_list', {})).hosts || []).some((h) => h.host === 'hostB' && h.profiles.length > 0), { what: 'hostB in fleet_list' });
    await waitStatus(watcher, 'lead', 'hostA', 'online');
    await waitStatus(watcher, 'bystander', 'hostA', 'online');
    const leadGid = (await callTool(lead, 'fleet_list', {})).entities.find((e) => e.name === 'lead' && e.host === 'hostA').gid;

    const w = await callTool(lead, 'fleet_spawn', { profile: 'agent', host: 'hostB', name: 'w1', wait_s: 30 });
    assert.equal(w.status, 'ready', JSON.stringify(w));
    await waitStatus(lead, 'w1', 'hostB', 'online');

    asked = hook(hostB, w.gid, {
      session_id: 's-1', hook_event_name: 'PermissionRequest', tool_name: 'Bash',
      tool_input: { command: 'make test' }, permission_suggestions: [],
    });
    // The BLOCKED message crosses to the spawner on A.
    let m = null;
    for (let i = 0; i < 6 && !m; i++) {
      m = (await callTool(lead, 'fleet_poll', { wait_s: 10 })).messages.find((x) => x.kind === 'BLOCKED') || null;
    }
    assert.ok(m, 'a BLOCKED message reached the lead on host A');
    assert.equal(m.from.gid, w.gid);
    assert.equal(m.request.tool, 'Bash');
    assert.equal(m.request.input, '{"command":"make test"}');
    const id = m.request.requestId;

    // A session of A that B has not authorised: refused by B.
    const no = await callToolRaw(bystander, 'fleet_approve', { to: 'w1@hostB', requestId: id, decision: 'allow' });
    assert.equal(no.isError, true);
    assert.match(resultText(no), /authority\.approve/);

    // Forged in the lead's name, signed by a key that is not host A's.
    const now = Date.now();
    const forged = { v: '1.0', kind: 'APPROVE', msgId: uuid(), traceId: uuid(), from: leadGid, fromName: 'lead', spawnId: w.gid, host: 'hostA', ts: rfc3339(now), expiresAt: rfc3339(now + 60000) };
    const body = JSON.stringify({ requestId: id, decision: 'allow', role: 'lead' });
    const base = (await counters(hostB)).control_refused || 0;
    await amqp.publish('fleet.control', 'hostB', headersFor(forged, signEnvelope(forged, body, freshKey().privateKey)), body);
    await waitFor(async () => (await counters(hostB)).control_refused >= base + 1, { what: 'the forged APPROVE refused' });
    await sleep(300);
    assert.equal(asked.done(), false, 'the hook still waits after the forged APPROVE');

    // The spawner allows: the hook on B answers allow.
    const ok = await callTool(lead, 'fleet_approve', { to: 'w1@hostB', requestId: id, decision: 'allow' });
    assert.equal(ok.status, 'allowed');
    assert.equal(ok.host, 'hostB');
    const out = await asked.result;
    assert.deepEqual(JSON.parse(out.stdout), {
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });

    // The lead's APPROVE, captured and published again: refused as a replay.
    const approve = await waitFor(async () => {
      let last = null;
      for (;;) {
        const got = await cap.get(q, { noAck: true });
        if (!got) return last;
        const env = envelopeOf(got);
        if (env.kind === 'APPROVE' && env.from === leadGid) last = got;
      }
    }, { what: 'the lead\'s APPROVE captured off fleet.control' });
    const before = await counters(hostB);
    await amqp.publish('fleet.control', 'hostB', approve.properties.headers, approve.content);
    await waitFor(async () => (await status(hostB)).approvals?.replayed === 1, { what: 'the replayed APPROVE counted on B' });
    const after = await counters(hostB);
    assert.equal(after.control_refused, before.control_refused + 1, 'and refused');
    const st = (await status(hostB)).approvals;
    assert.equal(st.allowed, 1);
    assert.equal(st.refused, 1);
    await cap.close();
  } finally {
    asked?.kill();
    await amqp.conn.close().catch(() => {});
    await stopTmux(hostB, sock);
  }
});
