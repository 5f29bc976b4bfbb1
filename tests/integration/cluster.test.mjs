// cluster.test.mjs — two gateways on a 3-node RabbitMQ cluster (loopback)
// with broker.queueType quorum and broker.uri the list of the three nodes:
//   - every agent inbox is a quorum queue;
//   - messages acknowledged to the sender while the recipient's gateway is
//     down sit in its quorum inbox; kill -9 of the node the gateways use
//     loses none of them; the gateways move on to a surviving node (the URI
//     list); the recipient drains every message exactly once, and messages
//     sent after the kill arrive too;
//   - a gateway killed with kill -9 and restarted at once takes its inboxes
//     over again (the message sent to its agent arrives) within the broker
//     heartbeat; the time is reported;
//   - overflow of a quorum inbox (a policy with a tiny max-length) is
//     dead-lettered to fleet.dlq.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callTool, callToolRaw, waitFor, sleep } from './harness.mjs';
import { HostFleet, pinAll, waitEntity } from './broker-harness.mjs';
import { startCluster } from './cluster-harness.mjs';

const N_BEFORE = 20;
const N_AFTER = 5;
const TAKEOVER_BOUND_MS = 20000;

/** Polls client until want messages with contents starting with prefix came (or timeout); returns every content seen. */
async function drain(client, prefix, want, timeout = 30000) {
  const got = [];
  const until = Date.now() + timeout;
  while (got.filter((c) => c.startsWith(prefix)).length < want && Date.now() < until) {
    const r = await callTool(client, 'fleet_poll', { wait_s: 1, max: 100 });
    for (const m of r.messages) got.push(m.content);
  }
  return got;
}

function counts(list) {
  const m = new Map();
  for (const c of list) m.set(c, (m.get(c) || 0) + 1);
  return m;
}

async function inboxQueues(node) {
  const qs = await node.listQueues(['name', 'type', 'messages', 'arguments']);
  return qs.filter((q) => q.name.startsWith('agent.'));
}

test('3-node cluster, quorum inboxes: node kill loses nothing, gateway takeover, overflow to fleet.dlq', { timeout: 240000 }, async (t) => {
  const t0 = Date.now();
  const cluster = await startCluster();
  t.diagnostic(`cluster of ${cluster.nodes.map((b) => b.port).join(', ')} up in ${Date.now() - t0} ms`);
  const [n0, n1, n2] = cluster.nodes;
  const hostA = new HostFleet('hostA', n0, 'cluster [hostA]');
  const hostB = new HostFleet('hostB', n0, 'cluster [hostB]');
  // Both start on n0 (the node killed below); the rest of the list is where they go next.
  const uriA = { uri: [n0.uri, n1.uri, n2.uri] };
  const uriB = { uri: [n0.uri, n2.uri, n1.uri] };
  hostA.brokerConfig = { queueType: 'quorum' };
  hostB.brokerConfig = { queueType: 'quorum' };
  let failure = null;
  try {
    await Promise.all([hostA.startFleetd({ broker: uriA }), hostB.startFleetd({ broker: uriB })]);
    await pinAll([hostA, hostB]);
    const alice = await hostA.mcpClient('alice');
    let bob = await hostB.mcpClient('bob');
    const { entity: bobEntity } = await waitEntity(alice, 'bob', 'hostB', () => true, { timeout: 20000 });
    assert.match(hostA.fleetdLog, new RegExp(`link up \\(127\\.0\\.0\\.1:${n0.port} `));

    // ---- inboxes are quorum queues ----
    const qs = await inboxQueues(n1);
    assert.ok(qs.length >= 2, `agent inboxes on the cluster: ${JSON.stringify(qs)}`);
    for (const q of qs) assert.equal(q.type, 'quorum', `${q.name} is a quorum queue`);
    const bobQ = qs.find((q) => q.name.includes(bobEntity.gid));
    assert.ok(bobQ, `bob's inbox among ${JSON.stringify(qs)}`);
    // Quorum queues know no reject-publish-dlx: the inbox says what it does.
    const arg = (q, name) => (Array.isArray(q.arguments) ? q.arguments.find((a) => a[0] === name)?.at(-1) : q.arguments?.[name]);
    const overflow = arg(bobQ, 'x-overflow');
    assert.equal(overflow, 'drop-head', `x-overflow of ${JSON.stringify(bobQ)}`);

    // ---- messages wait in bob's quorum inbox while hostB is down ----
    await hostB.closeClient(bob);
    await hostB.stopFleetd();
    for (let i = 0; i < N_BEFORE; i++) {
      const r = await callTool(alice, 'fleet_send', { to: 'bob', content: `before:${i}` });
      assert.equal(r.status, 'sent', `before:${i}: ${JSON.stringify(r)}`);
    }
    await waitFor(async () => (await inboxQueues(n1)).find((q) => q.name === bobQ.name)?.messages === N_BEFORE, {
      timeout: 10000,
      what: `${N_BEFORE} messages in ${bobQ.name}`,
    });

    // ---- kill -9 the node both gateways started on ----
    const tKill = Date.now();
    await n0.kill9();
    await waitFor(() => new RegExp(`link up \\(127\\.0\\.0\\.1:(${n1.port}|${n2.port}) `).test(hostA.fleetdLog), {
      timeout: 30000,
      what: 'hostA links up on a surviving node',
    });
    t.diagnostic(`hostA linked up on a surviving node ${Date.now() - tKill} ms after the kill`);
    // The queue's leader may have been on n0: its count reads 0 until a new one is elected.
    await waitFor(async () => (await inboxQueues(n1)).find((q) => q.name === bobQ.name)?.messages === N_BEFORE, {
      timeout: 20000,
      what: `the quorum inbox to show its ${N_BEFORE} messages again`,
    });
    for (let i = 0; i < N_AFTER; i++) {
      // The link may still be settling: a send refused outright is retried, one acknowledged counts.
      const r = await waitFor(
        async () => {
          const res = await callToolRaw(alice, 'fleet_send', { to: 'bob', content: `after:${i}` });
          return res.isError ? null : res.structuredContent;
        },
        { timeout: 20000, what: `after:${i} sent` }
      );
      assert.equal(r.status, 'sent', `after:${i}: ${JSON.stringify(r)}`);
    }

    // ---- hostB comes back (its first URI is the dead node) and drains ----
    await hostB.startFleetd({ broker: uriB });
    bob = await hostB.mcpClient('bob');
    const got = await drain(bob, '', N_BEFORE + N_AFTER);
    await sleep(1000);
    got.push(...(await drain(bob, 'none', 1, 1500)));
    const c = counts(got);
    for (let i = 0; i < N_BEFORE; i++) assert.equal(c.get(`before:${i}`), 1, `before:${i} drained once (got ${c.get(`before:${i}`) || 0})`);
    for (let i = 0; i < N_AFTER; i++) assert.equal(c.get(`after:${i}`), 1, `after:${i} drained once (got ${c.get(`after:${i}`) || 0})`);
    assert.equal(got.length, N_BEFORE + N_AFTER, `nothing else drained: ${JSON.stringify(got)}`);
    assert.match(hostB.fleetdLog, /cannot connect, retrying: .*127\.0\.0\.1:/);

    // ---- exclusive-consumer takeover after kill -9 of hostB's gateway ----
    await hostB.closeClient(bob);
    await hostB.kill9();
    const tRestart = Date.now();
    await hostB.startFleetd({ broker: uriB });
    const bob2 = await hostB.mcpClient('bob');
    const takeover = await waitFor(
      async () => {
        const r = await callToolRaw(alice, 'fleet_send', { to: 'bob', content: `takeover:${Date.now()}` });
        if (r.isError) return null;
        const p = await callTool(bob2, 'fleet_poll', { wait_s: 1 });
        return p.messages.length ? Date.now() - tRestart : null;
      },
      { timeout: TAKEOVER_BOUND_MS, interval: 200, what: 'bob receives again after the gateway restart' }
    );
    t.diagnostic(`takeover: hostB's restarted gateway consumed bob's inbox again ${takeover} ms after the restart`);
    await drain(bob2, 'none', 1, 1500); // leftovers of the retries above

    // ---- quorum overflow dead-letters to fleet.dlq ----
    await n1.ctl(['set_policy', '--apply-to', 'queues', 'fleet-tiny', '^agent\\.', '{"max-length":5}']);
    await hostB.closeClient(bob2);
    await hostB.stopFleetd();
    const sent = [];
    for (let i = 0; i < 8; i++) {
      const r = await callTool(alice, 'fleet_send', { to: 'bob', content: `over:${i}` });
      assert.equal(r.status, 'sent', `over:${i}: ${JSON.stringify(r)}`);
      sent.push(r.msgId);
    }
    // A quorum inbox drops from its head: the three oldest are dead letters.
    const dlq = await waitFor(
      async () => {
        const q = (await n1.listQueues(['name', 'type', 'messages'])).find((x) => x.name === 'fleet.dlq');
        return q && q.messages >= 3 ? q : null;
      },
      { timeout: 10000, what: 'three dead letters in fleet.dlq' }
    );
    assert.equal(dlq.type, 'quorum', 'fleet.dlq is a quorum queue too');
    const inbox = (await inboxQueues(n1)).find((q) => q.name === bobQ.name);
    assert.equal(inbox.messages, 5, 'the inbox holds its max-length');
    assert.equal(dlq.messages, 3, 'the three over the limit are dead letters');
    const listed = await hostA.fleetctl(['--json', 'dlq', 'list']);
    assert.equal(listed.code, 0, `dlq list: ${listed.stderr}`);
    const dead = JSON.parse(listed.stdout);
    const deadList = Array.isArray(dead) ? dead : dead.messages;
    assert.equal(deadList.length, 3, listed.stdout);
    for (const m of deadList) {
      assert.equal(m.xDeath.reason, 'maxlen', JSON.stringify(m));
      assert.equal(m.xDeath.queue, bobQ.name, JSON.stringify(m));
    }
    assert.deepEqual(deadList.map((m) => m.msgId).sort(), sent.slice(0, 3).sort(), 'the three oldest were dead-lettered');
    t.diagnostic(`overflow: 8 sent past max-length 5; fleet.dlq holds ${dlq.messages} (x-death maxlen), the inbox ${inbox.messages}`);
  } catch (e) {
    failure = e;
  }
  // Clean-up checks each fleetd exits 0 on SIGTERM with no sanitizer report.
  const cleanupErrors = [];
  await Promise.all([hostA, hostB].map((h) => h.cleanup().catch((e) => cleanupErrors.push(`[${h.hostId}] ${e.message}`))));
  await cluster.stop();
  const diag = () => `\n===== hostA =====${hostA.diagnostics()}\n===== hostB =====${hostB.diagnostics()}`;
  if (failure) {
    failure.message += diag();
    throw failure;
  }
  if (cleanupErrors.length) throw new Error(`clean-up failed:\n${cleanupErrors.join('\n')}${diag()}`);
});
