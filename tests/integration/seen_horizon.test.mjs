// seen_horizon.test.mjs — a captured message cannot be delivered twice once
// the seen-set has rolled over. hostB keeps at most 100 msgIds
// (store.maxSeen: 100). As an attacker with a gateway's login would, the
// test captures a SEND alice@hostA sent bob (signed by hostA, in clear as
// broker.acceptUnsealed allows), lets it be delivered, then floods bob's
// inbox with 180 more valid messages, so that the captured msgId falls out
// of the seen-set, and publishes the captured bytes again. hostB refuses it
// (dead-lettered, verify_too_old, logged), bob gets nothing, and a fresh
// message still goes through; after a restart the horizon still holds.

import assert from 'node:assert/strict';
import { callTool, selfGid } from './harness.mjs';
import { hostsTest, pinAll, useBroker, waitStatus } from './broker-harness.mjs';
import { amqpClient, counters, headersFor, readIdentity, sendEnvelope, signEnvelope, uuid, waitCounter } from './trust-helpers.mjs';

const brokerRef = useBroker();
const MAX_SEEN = 100;

hostsTest('the seen-set rolled over by a flood: a captured message replayed is refused, not delivered twice', brokerRef, { timeout: 180000, start: false, broker: { acceptUnsealed: true } }, async ({ hostA, hostB, broker }) => {
  await hostA.startFleetd();
  await hostB.startFleetd({ config: { store: { maxSeen: MAX_SEEN } } });
  await pinAll([hostA, hostB]);
  const keyA = readIdentity(hostA.stateDir);
  const alice = await hostA.mcpClient('alice');
  const bob = await hostB.mcpClient('bob');
  const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
  const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
  await waitStatus(bob, 'alice', 'hostA', 'online');
  const mq = await amqpClient(broker.uri);
  try {
    const signed = (body) => {
      const env = sendEnvelope({ from: aliceGid, to: bobGid, host: 'hostA', fromName: 'alice' });
      return { env, body, headers: headersFor(env, signEnvelope(env, body, keyA.privateKey)) };
    };
    /** Polls bob until n messages came; returns their msgIds. */
    async function drain(n, client = bob) {
      const ids = [];
      while (ids.length < n) {
        const p = await callTool(client, 'fleet_poll', { wait_s: 10, max: 100 });
        assert.ok(p.messages.length > 0, `bob got ${ids.length} of ${n}`);
        ids.push(...p.messages.map((m) => m.msgId));
      }
      return ids;
    }

    const captured = signed(`captured ${uuid()}`);
    await mq.publish('fleet.msg', bobGid, captured.headers, captured.body);
    assert.deepEqual(await drain(1), [captured.env.msgId]);

    // The flood: more valid messages than the seen-set keeps, drained as they come.
    for (let round = 0; round < 3; round++) {
      const batch = Array.from({ length: 60 }, (_, i) => signed(`flood ${round}.${i}`));
      for (const m of batch) await mq.publish('fleet.msg', bobGid, m.headers, m.body);
      assert.equal((await drain(batch.length)).length, batch.length);
    }
    assert.match(hostB.fleetdLog, /the seen-set reached its bound of 100 msgIds/);

    // The captured bytes again.
    const before = await counters(hostB);
    await mq.publish('fleet.msg', bobGid, captured.headers, captured.body);
    const dl = await mq.takeFromDlq(captured.env.msgId);
    assert.equal(dl.content.toString('utf8'), captured.body);
    await waitCounter(hostB, 'verify_too_old', (before.verify_too_old ?? 0) + 1);
    const after = await counters(hostB);
    assert.equal(after.verify_duplicate ?? 0, before.verify_duplicate ?? 0);
    const p = await callTool(bob, 'fleet_poll', { wait_s: 1 });
    assert.deepEqual(p.messages, [], `the replay is not delivered: ${JSON.stringify(p)}`);
    assert.match(hostB.fleetdLog, /older than the oldest msgId this host still remembers/);

    // A fresh message still goes through.
    const fresh = signed('fresh after the flood');
    await mq.publish('fleet.msg', bobGid, fresh.headers, fresh.body);
    assert.deepEqual(await drain(1), [fresh.env.msgId]);

    // After a restart, the horizon still holds.
    await hostB.closeClient(bob);
    await hostB.stopFleetd();
    await hostB.startFleetd({ config: { store: { maxSeen: MAX_SEEN } } });
    const bob2 = await hostB.mcpClient('bob');
    await waitStatus(bob2, 'alice', 'hostA', 'online');
    const b2 = await counters(hostB);
    await mq.publish('fleet.msg', bobGid, captured.headers, captured.body);
    await mq.takeFromDlq(captured.env.msgId);
    await waitCounter(hostB, 'verify_too_old', (b2.verify_too_old ?? 0) + 1);
    assert.deepEqual((await callTool(bob2, 'fleet_poll', { wait_s: 1 })).messages, []);
    assert.equal(await mq.count('fleet.dlq'), 0, 'every dead letter was accounted for');
  } finally {
    await mq.close();
  }
});
