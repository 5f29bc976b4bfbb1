// dlq.test.mjs — fleetctl dlq against a private RabbitMQ: messages
// dead-lettered by forgeries show up in `dlq list` with the reason the
// receiving gateway gave and RabbitMQ's x-death, reading loses nothing,
// `show` has the body, `replay` refuses what still fails verification and
// puts back what now passes (a message from a host that was unpinned when it
// arrived and is pinned again), and `purge` empties the queue.

import assert from 'node:assert/strict';
import { callTool, selfGid } from './harness.mjs';
import { useBroker, hostsTest, pinAll, waitStatus } from './broker-harness.mjs';
import { dashboardUrl, getJson } from './dashboard-helpers.mjs';
import {
  amqpClient,
  freshKey,
  headersFor,
  parseJson,
  readIdentity,
  sendEnvelope,
  signEnvelope,
  waitCounter,
} from './trust-helpers.mjs';
import { fleetTest, waitFor } from './harness.mjs';

const brokerRef = useBroker();

async function dlq(host, args) {
  return host.fleetctl(['--json', 'dlq', ...args]);
}

async function dlqList(host) {
  const r = await dlq(host, ['list']);
  assert.equal(r.code, 0, `dlq list: ${r.stderr}`);
  return JSON.parse(r.stdout).messages;
}

// The messages below are built in JavaScript and travel in clear, so hostB
// takes bodies in clear (broker.acceptUnsealed): a replay must pass that
// policy as well as the signature check.
hostsTest('fleetctl dlq: list with reasons, show, replay only what now verifies, purge', brokerRef, { timeout: 120000, start: false }, async (world) => {
  const { hostA, hostB, broker } = world;
  await hostA.startFleetd();
  await hostB.startFleetd({ config: { http: { listen: '127.0.0.1:0' } }, broker: { acceptUnsealed: true } });
  await pinAll(world.hosts);
  const keyA = readIdentity(hostA.stateDir);
  const alice = await hostA.mcpClient('alice', { role: 'lead' });
  const bob = await hostB.mcpClient('bob');
  const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
  const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
  await waitStatus(bob, 'alice', 'hostA', 'online');
  const mq = await amqpClient(broker.uri);
  const inbox = `agent.${bobGid}.inbox.v2`;
  try {
    const signed = (body, { host = 'hostA', key = keyA.privateKey } = {}) => {
      const env = sendEnvelope({ from: aliceGid, to: bobGid, host, fromName: 'alice' });
      return { env, body, headers: headersFor(env, signEnvelope(env, body, key)) };
    };
    // Two forgeries: a body changed after signing, and a signer nobody pinned.
    const tampered = signed('the body that was signed');
    await mq.publish('fleet.msg', bobGid, tampered.headers, 'the body that was signed, changed');
    const unpinned = signed('from nowhere', { host: 'hostX', key: freshKey().privateKey });
    await mq.publish('fleet.msg', bobGid, unpinned.headers, unpinned.body);
    await waitCounter(hostB, 'verify_bad_signature', 1);
    await waitCounter(hostB, 'verify_unpinned', 1);
    await waitFor(async () => (await mq.count('fleet.dlq')) === 2, { what: 'two dead letters' });

    // list on the host that rejected them: fleet's reason and x-death.
    const list = await dlqList(hostB);
    assert.equal(list.length, 2, JSON.stringify(list));
    const byId = Object.fromEntries(list.map((m) => [m.msgId, m]));
    const t = byId[tampered.env.msgId];
    const u = byId[unpinned.env.msgId];
    assert.ok(t && u, JSON.stringify(list));
    assert.match(t.reason, /signature does not verify/);
    assert.equal(t.fleetReason, t.reason);
    assert.match(u.reason, /not pinned here \(fleetctl peer add hostX KEY\)/);
    for (const m of [t, u]) {
      assert.equal(m.xDeath.reason, 'rejected');
      assert.equal(m.xDeath.queue, inbox);
      assert.equal(m.xDeath.count, 1);
      assert.match(m.xDeath.time, /^\d{4}-\d\d-\d\dT/);
      assert.equal(m.kind, 'SEND');
      assert.equal(m.envelope.to, bobGid);
    }
    assert.equal(t.fromHost, 'hostA');
    assert.equal(u.fromHost, 'hostX');
    // Reading lost nothing: still both on the broker, and a second look agrees.
    assert.equal(await mq.count('fleet.dlq'), 2);
    assert.deepEqual((await dlqList(hostB)).map((m) => m.msgId).sort(), Object.keys(byId).sort());
    // The human table names the reasons.
    const table = await hostB.fleetctl(['dlq', 'list']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /MSGID\s+KIND\s+FROM HOST\s+X-DEATH\s+REASON/);
    assert.match(table.stdout, new RegExp(`${tampered.env.msgId}\\s+SEND\\s+hostA\\s+rejected\\s+the signature does not verify`));
    // Another host reads the same queue: it did not reject them, so it says
    // why its own origin check refuses them now.
    const fromA = Object.fromEntries((await dlqList(hostA)).map((m) => [m.msgId, m]));
    assert.equal(Object.keys(fromA).length, 2);
    assert.equal(fromA[tampered.env.msgId].fleetReason, null, "hostA rejected nothing");
    assert.match(fromA[tampered.env.msgId].reason, /signature does not verify/);
    assert.match(fromA[unpinned.env.msgId].reason, /not pinned here/);
    assert.ok(Object.values(fromA).every((m) => m.verifiesNow === false));

    // The dashboard's view of the same queue, read in the background.
    const d = await dashboardUrl(hostB);
    await waitFor(async () => (await getJson(d, '/api/dlq')).messages?.length === 2, { what: '/api/dlq lists both' });
    const api = await getJson(d, '/api/dlq');
    assert.equal(api.available, true);
    assert.deepEqual(api.messages.map((m) => m.reason).sort(), [t.reason, u.reason].sort());
    // A read in flight holds them unacknowledged; once it is done, both are back.
    await waitFor(async () => (await mq.count('fleet.dlq')) === 2, { what: 'the background read lost nothing' });

    // show: the envelope and the body as dead-lettered.
    const shown = parseJson(await dlq(hostB, ['show', tampered.env.msgId]), 'dlq show');
    assert.equal(shown.content, 'the body that was signed, changed');
    assert.equal(shown.envelope.msgId, tampered.env.msgId);
    const missing = await dlq(hostB, ['show', '00000000-0000-4000-8000-000000000000']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no message 00000000-0000-4000-8000-000000000000 in fleet\.dlq/);

    // replay of a forgery is refused, and it stays.
    const r1 = await dlq(hostB, ['replay', tampered.env.msgId]);
    assert.equal(r1.code, 1, r1.stdout);
    assert.match(r1.stderr, /refused to replay .*still fails verification: the signature does not verify/);
    assert.equal(await mq.count('fleet.dlq'), 2, 'a refused replay removes nothing');

    // A real message from hostA while hostB had dropped hostA's pin ...
    assert.equal((await hostB.fleetctl(['peer', 'remove', 'hostA'])).code, 0);
    const real = signed('sent while hostA was not pinned');
    await mq.publish('fleet.msg', bobGid, real.headers, real.body);
    await waitCounter(hostB, 'verify_unpinned', 2);
    await waitFor(async () => (await mq.count('fleet.dlq')) === 3, { what: 'three dead letters' });
    const r2 = await dlq(hostB, ['replay', real.env.msgId]);
    assert.equal(r2.code, 1);
    assert.match(r2.stderr, /still fails verification: its host is not pinned here/);
    // ... passes once hostA is pinned again: it goes back to bob's inbox.
    assert.equal((await hostB.fleetctl(['peer', 'add', 'hostA', keyA.publicKey])).code, 0);
    await waitStatus(bob, 'alice', 'hostA', 'online');
    const r3 = await hostB.fleetctl(['dlq', 'replay', real.env.msgId]);
    assert.equal(r3.code, 0, r3.stderr);
    assert.match(r3.stdout, new RegExp(`replayed ${real.env.msgId} into its inbox`));
    const got = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(got.messages.map((m) => [m.msgId, m.content]), [[real.env.msgId, real.body]]);
    assert.equal(await mq.count('fleet.dlq'), 2);

    // purge: nothing is older than an hour; then everything goes.
    const p0 = parseJson(await dlq(hostB, ['purge', '--older-than', '1h']), 'purge --older-than');
    assert.equal(p0.purged, 0);
    assert.equal(await mq.count('fleet.dlq'), 2);
    const p1 = await hostB.fleetctl(['dlq', 'purge']);
    assert.equal(p1.code, 0, p1.stderr);
    assert.match(p1.stdout, /purged 2 message\(s\) from fleet\.dlq/);
    assert.equal(await mq.count('fleet.dlq'), 0);
    assert.deepEqual(await dlqList(hostB), []);
    assert.match((await hostB.fleetctl(['dlq', 'list'])).stdout, /fleet\.dlq is empty/);
  } finally {
    await mq.conn.close().catch(() => {});
  }
});

fleetTest('fleetctl dlq in single-host mode says there is no queue; bad arguments are usage errors', async (f) => {
  await f.startFleetd();
  const r = await f.fleetctl(['dlq', 'list']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /single-host mode has no fleet\.dlq/);
  const u = await f.fleetctl(['dlq', 'purge', '--older-than', 'soon']);
  assert.equal(u.code, 2);
  assert.match(u.stderr, /--older-than needs a duration/);
  for (const ok of ['90', '90s', '15m', '2h', '7d']) {
    const r2 = await f.fleetctl(['dlq', 'purge', `--older-than=${ok}`]);
    assert.equal(r2.code, 1, `--older-than ${ok} parses and reaches fleetd: ${r2.stderr}`);
    assert.match(r2.stderr, /single-host mode/);
  }
  for (const bad of ['5x', '-1', '1.5h', '']) {
    const r2 = await f.fleetctl(['dlq', 'purge', '--older-than', bad]);
    assert.equal(r2.code, 2, `--older-than '${bad}' is a usage error`);
  }
  const v = await f.fleetctl(['status', '--older-than', '1h']);
  assert.equal(v.code, 2);
  assert.match(v.stderr, /--older-than is for dlq purge/);
  const w = await f.fleetctl(['dlq', 'show']);
  assert.equal(w.code, 2);
});
