// late_presence.test.mjs — a message that overtakes its sender's first
// presence beat. A new agent's gateway announces it as it joins, but the beat
// travels fleet.roster while the agent's first message travels fleet.msg, so
// the message can arrive first. The receiving gateway parks it (unacked) until
// the beat comes, then delivers it; a sender that is never announced is
// dead-lettered as misattributed once a presence interval has passed. The
// messages are sealed to hostB, as a gateway publishes them.

import assert from 'node:assert/strict';
import { callTool, selfGid } from './harness.mjs';
import { useBroker, hostsTest, waitStatus, FAST_PRESENCE_MS } from './broker-harness.mjs';
import {
  amqpClient,
  counters,
  headersFor,
  presenceBeat,
  readIdentity,
  sealBody,
  sendEnvelope,
  signEnvelope,
  uuid,
  waitCounter,
} from './trust-helpers.mjs';

const brokerRef = useBroker();

hostsTest('a message that arrives before its sender\'s presence waits for it', brokerRef, async ({ hostA, hostB, broker }) => {
  const keyA = readIdentity(hostA.stateDir);
  const pkB = readIdentity(hostB.stateDir).publicKey;
  // What hostA's gateway would publish: the body sealed to hostB, signed
  // over the sealed bytes.
  const sealedTo = async (env, body) => {
    env.sealedTo = 'hostB';
    const wire = await sealBody(body, pkB, keyA.json.secretKey);
    return { headers: headersFor(env, signEnvelope(env, wire, keyA.privateKey)), wire };
  };
  const bob = await hostB.mcpClient('bob');
  const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
  const alice = await hostA.mcpClient('alice');
  await waitStatus(bob, 'alice', 'hostA', 'online'); // hostA's beats reach hostB
  const mq = await amqpClient(broker.uri);
  try {
    // A newcomer on hostA whose beat is "late": its message goes first.
    const newGid = uuid();
    const env = sendEnvelope({ from: newGid, to: bobGid, host: 'hostA', fromName: 'newcomer' });
    const body = 'sent before my presence arrived';
    const sealed = await sealedTo(env, body);
    await mq.publish('fleet.msg', bobGid, sealed.headers, sealed.wire);
    const early = await callTool(bob, 'fleet_poll', { wait_s: 0.3 });
    assert.deepEqual(early.messages, [], `not delivered before the sender is known: ${JSON.stringify(early)}`);

    const beat = presenceBeat({ gid: newGid, host: 'hostA', name: 'newcomer' });
    await mq.publish('fleet.roster', `roster.hostA.${newGid}`, headersFor(beat.env, signEnvelope(beat.env, beat.body, keyA.privateKey)), beat.body);
    const got = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.equal(got.messages.length, 1, JSON.stringify(got));
    assert.equal(got.messages[0].msgId, env.msgId);
    assert.equal(got.messages[0].from.name, 'newcomer');
    assert.equal((await counters(hostB)).verify_misattributed ?? 0, 0);

    // A sender no presence ever announces: dead-lettered after the wait.
    const ghost = sendEnvelope({ from: uuid(), to: bobGid, host: 'hostA', fromName: 'ghost' });
    const gbody = 'nobody announced me';
    const t0 = Date.now();
    const gsealed = await sealedTo(ghost, gbody);
    await mq.publish('fleet.msg', bobGid, gsealed.headers, gsealed.wire);
    const dl = await mq.takeFromDlq(ghost.msgId, { timeout: FAST_PRESENCE_MS + 10000 });
    assert.ok(dl.content.equals(gsealed.wire), 'the dead letter is the sealed body as published');
    assert.ok(Date.now() - t0 >= FAST_PRESENCE_MS, 'it waited about a presence interval first');
    await waitCounter(hostB, 'verify_misattributed', 1);
    const none = await callTool(bob, 'fleet_poll', { wait_s: 0 });
    assert.deepEqual(none.messages, []);
  } finally {
    await mq.close();
    await hostA.closeClient(alice);
  }
});
