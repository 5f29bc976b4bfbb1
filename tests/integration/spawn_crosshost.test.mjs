// spawn_crosshost.test.mjs — fleet_spawn and fleet_stop from one host onto
// another over the broker's control plane: two fleetd on one private
// RabbitMQ, host B with spawn profiles and its own tmux server (fleetd B runs
// with TMUX pointing at it, as a fleetd started inside tmux would), a lead on
// host A. The spawned agent is a real program (agents/prompt_agent.mjs --mcp) that
// registers through fleet-mcp with the environment it is given. A SPAWN
// captured off fleet.control and published again (the same signed message,
// same spawnId) must start nothing new, also after host B's fleetd
// restarted; fleet_stop must take the agent out of both rosters and delete
// its inbox queue on the broker; only its spawner, the operator or whom
// host B's authority.stop names may stop it.
// Control messages that are unsigned, signed by the wrong key, from an
// unpinned host, malformed or expired are refused with a counter, and the
// gateway goes on serving.

import assert from 'node:assert/strict';
import path from 'node:path';
import { BIN_DIR, callTool, callToolRaw, resultText, waitFor } from './harness.mjs';
import { useBroker, hostsTest, pinAll, waitStatus } from './broker-harness.mjs';
import { panes, promptAgentProfile, spawnedInputs, startTmux, stopTmux, tmux } from './tmux-harness.mjs';
import { amqpClient, counters, envelopeOf, freshKey, headersFor, readIdentity, rfc3339, signEnvelope, uuid } from './trust-helpers.mjs';

const brokerRef = useBroker();

/** Host B's profiles; the agents it spawns record what is typed into them in
 * B's dir. */
const profilesOf = (hostB) => ({
  // A declared lead of host B may stop what it did not spawn only because
  // B's config says so (a role alone grants nothing).
  authority: { stop: ['role:lead'] },
  profiles: {
    agent: promptAgentProfile(hostB.dir, BIN_DIR, { groups: ['spawned'] }),
    mute: { backend: 'tmux', command: ['sleep', '600'], role: 'worker', readyTimeoutS: 2 },
  },
});

/** Starts both hosts: B with profiles and its tmux server; pins them. */
async function startHosts(hostA, hostB) {
  const sock = path.join(hostB.dir, 'tmux.sock');
  await startTmux(hostB, sock, 'exec cat');
  const startB = () => hostB.startFleetd({ config: profilesOf(hostB), env: { TMUX: `${sock},0,0` } });
  await Promise.all([hostA.startFleetd(), startB()]);
  await pinAll([hostA, hostB]);
  return { sock, startB };
}

/** Waits until client's fleet_list offers host with its profiles. */
async function waitHost(client, host) {
  await waitFor(async () => {
    const l = await callTool(client, 'fleet_list', {});
    return (l.hosts || []).some((h) => h.host === host && h.profiles.length > 0);
  }, { what: `${host} with its profiles in fleet_list` });
}

const listed = async (client, gid) => (await callTool(client, 'fleet_list', {})).entities.some((e) => e.gid === gid);

hostsTest('fleet_spawn onto another host: ready, listed on both, a repeated SPAWN starts nothing, fleet_stop removes it and its inbox', brokerRef, { start: false }, async ({ hostA, hostB, broker }) => {
  const { sock, startB } = await startHosts(hostA, hostB);
  const amqp = await amqpClient(broker.uri);
  try {
    // Capture what reaches hostB's control key (fleet.control is direct: a
    // second queue bound to the same key gets a copy).
    const cap = await amqp.conn.createChannel();
    const q = (await cap.assertQueue('', { exclusive: true })).queue;
    await cap.bindQueue(q, 'fleet.control', 'hostB');

    const lead = await hostA.mcpClient('lead', { role: 'lead' });
    const bystander = await hostA.mcpClient('bystander', { role: 'worker' });
    const watcher = await hostB.mcpClient('watcher', { role: 'worker' });
    await waitHost(lead, 'hostB');
    await waitStatus(watcher, 'lead', 'hostA', 'online');
    await waitStatus(watcher, 'bystander', 'hostA', 'online');
    const before = await panes(hostB, sock);

    // Unknown profile: the error comes from host B and names its profiles.
    const unknown = await callToolRaw(lead, 'fleet_spawn', { profile: 'nope', host: 'hostB', wait_s: 10 });
    assert.equal(unknown.isError, true);
    assert.match(resultText(unknown), /unknown profile 'nope' on host 'hostB'.*agent, mute/);
    const noHost = await callToolRaw(lead, 'fleet_spawn', { profile: 'agent', host: 'hostZ' });
    assert.equal(noHost.isError, true);
    assert.match(resultText(noHost), /unknown host 'hostZ'.*hostB/);

    const res = await callTool(lead, 'fleet_spawn', { profile: 'agent', host: 'hostB', name: 'w1', brief: 'first task from A', wait_s: 30 });
    assert.equal(res.status, 'ready', JSON.stringify(res));
    assert.equal(res.host, 'hostB');
    assert.equal(res.name, 'w1');
    assert.equal(res.profile, 'agent');
    assert.match(res.gid, /^[0-9a-f-]{36}$/i);
    const mine = await panes(hostB, sock);
    assert.equal(mine.length, before.length + 1, 'one new pane on host B');
    const agentPane = mine.find((p) => !before.includes(p));
    // The brief is typed into the worker's pane on B, once.
    await waitFor(() => spawnedInputs(hostB.dir).includes('first task from A'), { what: 'the brief typed into the worker' });
    assert.ok(agentPane);
    await waitFor(() => listed(lead, res.gid), { what: 'the spawned gid in host A\'s fleet_list' });

    // The same SPAWN again (captured, republished verbatim): nothing new.
    const spawnMsg = await waitFor(async () => {
      for (;;) {
        const m = await cap.get(q, { noAck: true });
        if (!m) return null;
        const env = envelopeOf(m);
        if (env.kind === 'SPAWN' && env.spawnId === res.gid) return m;
      }
    }, { what: 'the SPAWN captured off fleet.control' });
    const replay = () => amqp.publish('fleet.control', 'hostB', spawnMsg.properties.headers, spawnMsg.content);
    await replay();
    await waitFor(async () => (await counters(hostB)).spawn_duplicates === 1, { what: 'spawn_duplicates 1 on B' });
    assert.equal((await counters(hostB)).spawns_for_hosts, 1, 'one launch for another host');
    assert.equal((await panes(hostB, sock)).length, before.length + 1, 'no second pane');

    // Only its spawner (or whom B's config names) may stop it.
    const refused = await callToolRaw(bystander, 'fleet_stop', { to: res.gid });
    assert.equal(refused.isError, true);
    assert.match(resultText(refused), /only the agent that spawned 'w1'/);
    assert.ok(await listed(lead, res.gid), 'still there after the refused stop');

    // However often the SPAWN came, its brief was typed once.
    assert.equal(spawnedInputs(hostB.dir).filter((l) => l === 'first task from A').length, 1, 'the brief typed once');
    const stopped = await callTool(lead, 'fleet_stop', { to: 'w1@hostB' });
    assert.equal(stopped.status, 'stopped');
    assert.equal(stopped.gid, res.gid);
    assert.equal(stopped.host, 'hostB');
    assert.equal(await listed(lead, res.gid), false, 'gone from host A\'s roster at once');
    await waitFor(async () => !(await listed(watcher, res.gid)), { what: 'gone from host B\'s roster' });
    await waitFor(async () => !(await panes(hostB, sock)).includes(agentPane), { what: 'its pane closed' });
    await waitFor(async () => {
      try {
        await amqp.count(`agent.${res.gid}.inbox.v2`);
        return false;
      } catch (e) {
        return /404|NOT_FOUND/.test(String(e.message));
      }
    }, { what: 'its inbox queue deleted on the broker' });

    // After a restart of host B the spawnId is still known: nothing starts.
    await hostB.stopFleetd();
    await startB();
    await replay();
    await waitFor(async () => (await counters(hostB)).spawn_duplicates === 1, { what: 'spawn_duplicates 1 after the restart' });
    const c = await counters(hostB);
    assert.equal(c.spawns_for_hosts, 0, 'nothing launched after the restart');
    assert.equal((await panes(hostB, sock)).length, before.length, 'no new pane after the restart');
    await cap.close();
  } finally {
    await amqp.conn.close().catch(() => {});
    await stopTmux(hostB, sock);
  }
});

hostsTest('fleet_spawn onto another host of an agent that never registers: not ready within N s, its window closed', brokerRef, { start: false }, async ({ hostA, hostB }) => {
  const { sock } = await startHosts(hostA, hostB);
  try {
    const lead = await hostA.mcpClient('lead', { role: 'lead' });
    await waitHost(lead, 'hostB');
    const before = await panes(hostB, sock);
    const res = await callToolRaw(lead, 'fleet_spawn', { profile: 'mute', host: 'hostB', wait_s: 20 });
    assert.equal(res.isError, true, JSON.stringify(res));
    assert.match(resultText(res), /not ready within 2 s/);
    assert.deepEqual(await panes(hostB, sock), before, 'its window is gone');
    assert.equal((await counters(hostB)).spawn_failures, 1);

    // wait_s 0: pending as soon as the window is open; it still fails on B.
    const quick = await callTool(lead, 'fleet_spawn', { profile: 'mute', host: 'hostB', wait_s: 0 });
    assert.equal(quick.status, 'pending', JSON.stringify(quick));
    assert.equal(quick.host, 'hostB');
    assert.equal((await panes(hostB, sock)).length, before.length + 1, 'its window is open');
    await waitFor(async () => (await counters(hostB)).spawn_failures === 2, { what: 'the second spawn failing on B' });
    assert.deepEqual(await panes(hostB, sock), before, 'its window is gone too');
  } finally {
    await stopTmux(hostB, sock);
  }
});

hostsTest('fleetctl spawn --host and stop NAME@HOST, with --json', brokerRef, { start: false }, async ({ hostA, hostB }) => {
  const { sock } = await startHosts(hostA, hostB);
  try {
    const lead = await hostA.mcpClient('lead', { role: 'lead' });
    await waitHost(lead, 'hostB');
    const before = await panes(hostB, sock);
    const sp = await hostA.fleetctl(['--json', 'spawn', 'agent', '--host', 'hostB', '--name', 'w2', '--brief', 'hello w2', '--wait', '30'], { timeout: 60000 });
    assert.equal(sp.code, 0, sp.stderr);
    const res = JSON.parse(sp.stdout);
    assert.equal(res.status, 'ready');
    assert.equal(res.host, 'hostB');
    assert.equal((await panes(hostB, sock)).length, before.length + 1);
    const bad = await hostA.fleetctl(['spawn', 'nope', '--host', 'hostB', '--wait', '10']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /unknown profile 'nope' on host 'hostB'/);
    // The operator spawned it, so the operator may stop it.
    const st = await hostA.fleetctl(['--json', 'stop', 'w2@hostB']);
    assert.equal(st.code, 0, st.stderr);
    assert.equal(JSON.parse(st.stdout).status, 'stopped');
    await waitFor(async () => (await panes(hostB, sock)).length === before.length, { what: 'its pane closed' });
    assert.equal(await listed(lead, res.gid), false);

    // Stopped on its own host by a lead there: host A drops it too, from
    // the gone beat (a beat that stops for the TTL would leave it listed
    // as offline).
    const sp3 = await hostA.fleetctl(['--json', 'spawn', 'agent', '--host', 'hostB', '--name', 'w3', '--wait', '30'], { timeout: 60000 });
    assert.equal(sp3.code, 0, sp3.stderr);
    const w3 = JSON.parse(sp3.stdout);
    await waitFor(() => listed(lead, w3.gid), { what: 'w3 in host A\'s roster' });
    const bLead = await hostB.mcpClient('blead', { role: 'lead' });
    assert.equal((await callTool(bLead, 'fleet_stop', { to: 'w3' })).status, 'stopped');
    await waitFor(async () => !(await listed(lead, w3.gid)), { what: 'w3 gone from host A\'s roster' });
  } finally {
    await stopTmux(hostB, sock);
  }
});

hostsTest('bad control input is refused with a counter, and fleetd keeps serving', brokerRef, { start: false }, async ({ hostA, hostB, broker }) => {
  const { sock } = await startHosts(hostA, hostB);
  const amqp = await amqpClient(broker.uri);
  try {
    const lead = await hostA.mcpClient('lead', { role: 'lead' });
    await waitHost(lead, 'hostB');
    const leadGid = (await callTool(lead, 'fleet_list', {})).entities.find((e) => e.name === 'lead').gid;
    const spawnEnv = (over = {}) => {
      const now = Date.now();
      return { v: '1.0', kind: 'SPAWN', msgId: uuid(), traceId: uuid(), from: leadGid, fromName: 'lead', spawnId: uuid(), host: 'hostA', ts: rfc3339(now), expiresAt: rfc3339(now + 60000), ...over };
    };
    const body = JSON.stringify({ profile: 'agent' });
    const send = (env, b, key) => amqp.publish('fleet.control', 'hostB', headersFor(env, key ? signEnvelope(env, b, key) : undefined), b);
    const before = await counters(hostB);
    const base = before.control_refused || 0;

    // Unsigned, signed by a key that is not hostA's, from a host nobody pinned.
    await send(spawnEnv(), body);
    await send(spawnEnv(), body, freshKey().privateKey);
    await send(spawnEnv({ host: 'hostQ' }), body, freshKey().privateKey);
    await waitFor(async () => (await counters(hostB)).control_refused === base + 3, { what: 'three refusals' });
    let c = await counters(hostB);
    assert.ok(c.verify_bad_signature >= 2, JSON.stringify(c));
    assert.ok(c.verify_unpinned >= 1, JSON.stringify(c));

    // Signed by hostA's own key but malformed: not JSON, no profile, a spawnId that is not a UUID, expired.
    const keyA = readIdentity(hostA.stateDir).privateKey;
    await send(spawnEnv(), 'not json', keyA);
    await send(spawnEnv(), '{"name":"x"}', keyA);
    await send(spawnEnv({ spawnId: 'nope' }), body, keyA);
    await send(spawnEnv({ expiresAt: rfc3339(Date.now() - 1000) }), body, keyA);
    await waitFor(async () => (await counters(hostB)).control_refused === base + 7, { what: 'seven refusals' });
    c = await counters(hostB);
    assert.equal(c.spawns_for_hosts || 0, 0, 'nothing was launched');
    assert.equal((await panes(hostB, sock)).length, 1, 'no window opened');

    // Still serving: a real spawn works.
    const res = await callTool(lead, 'fleet_spawn', { profile: 'agent', host: 'hostB', wait_s: 30 });
    assert.equal(res.status, 'ready');
  } finally {
    await amqp.conn.close().catch(() => {});
    await stopTmux(hostB, sock);
  }
});
