// seal.test.mjs — no body in clear on the broker.
//
// Three gateways (hostA, hostB, hostC) on a private RabbitMQ, sealing on by
// default. A spy queue of our own (amqplib, guest) bound to fleet.msg with
// `#` sees every cross-host message: a send, its reply, a broadcast to
// everyone and one to a group. Each reaches its recipients in clear, and the
// spy sees none of the markers the bodies carry: every body is ciphertext,
// sealed to the host its envelope's sealedTo names. A broadcast went out once
// per host with members, each copy routed only to that host's key.
//
// Then the refusals, each to fleet.dlq with its own counter: a sealed body
// with one ciphertext byte flipped (re-signed, so the signature is good and
// only the seal is broken), a body sealed to another host, and a body in
// clear. Last, broker.seal false on both ends: traffic flows, bodies are in
// clear on the broker, and each fleetd logged its warning at start.

import assert from 'node:assert/strict';
import { callTool, selfGid, waitFor } from './harness.mjs';
import { useBroker, hostsTest, pinAll, waitStatus } from './broker-harness.mjs';
import {
  amqpClient,
  counters,
  envelopeOf,
  headersFor,
  readIdentity,
  sealBody,
  sendEnvelope,
  signEnvelope,
  uuid,
  waitCounter,
} from './trust-helpers.mjs';

const brokerRef = useBroker();

const SEAL_COUNTERS = ['verify_seal_broken', 'verify_sealed_elsewhere', 'verify_unsealed', 'verify_bad_signature'];

/** A queue of our own bound to fleet.msg with '#': every message on the exchange. */
async function spyOn(mq) {
  const ch = await mq.conn.createChannel();
  const { queue } = await ch.assertQueue('', { exclusive: true, autoDelete: true });
  await ch.bindQueue(queue, 'fleet.msg', '#');
  const seen = [];
  await ch.consume(queue, (m) => seen.push(m), { noAck: true });
  return { seen, close: () => ch.close().catch(() => {}) };
}

const hdr = (m, k) => String(envelopeOf(m)[k] ?? '');

hostsTest('every cross-host body is ciphertext on the broker; broken or misdirected seals are dead-lettered', brokerRef, { hosts: ['hostA', 'hostB', 'hostC'], timeout: 150000 }, async ({ hostA, hostB, hostC, broker }, t) => {
  const mq = await amqpClient(broker.uri);
  const spy = await spyOn(mq);
  try {
    const alice = await hostA.mcpClient('alice', { role: 'lead' });
    const bob = await hostB.mcpClient('bob', { groups: ['ops'] });
    const carol = await hostC.mcpClient('carol');
    const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
    const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
    await waitStatus(alice, 'bob', 'hostB', 'online');
    await waitStatus(alice, 'carol', 'hostC', 'online');
    await waitStatus(bob, 'alice', 'hostA', 'online');
    // Each gateway has taken the others' host beats (fleet_list's hosts
    // come from them), which say envelope 1.1: from here on, what goes to
    // one host goes packed.
    for (const [c, others] of [[alice, ['hostB', 'hostC']], [bob, ['hostA']]])
      await waitFor(async () => {
        const hosts = (await callTool(c, 'fleet_list', {})).hosts.map((h) => h.host);
        return others.every((h) => hosts.includes(h));
      }, { what: `the host beats of ${others.join(', ')}` });
    const run = uuid().slice(0, 8);
    const marker = (what) => `MARKER-${what}-${run}`;

    // A send, and its reply.
    const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: `${marker('send')} secret for bob only` });
    assert.equal(sent.status, 'sent', JSON.stringify(sent));
    const got = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.equal(got.messages.length, 1, JSON.stringify(got));
    assert.equal(got.messages[0].content, `${marker('send')} secret for bob only`);
    await callTool(bob, 'fleet_reply', { to: aliceGid, content: marker('reply'), inReplyTo: got.messages[0].msgId });
    const rep = await callTool(alice, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(rep.messages.map((m) => m.content), [marker('reply')]);

    // A broadcast to everyone: one copy for hostB, one for hostC.
    const all = await callTool(alice, 'fleet_broadcast', { content: marker('all') });
    assert.equal(all.remote, 'published', JSON.stringify(all));
    for (const [who, c] of [['bob', bob], ['carol', carol]]) {
      const p = await callTool(c, 'fleet_poll', { wait_s: 10 });
      assert.deepEqual(p.messages.map((m) => m.content), [marker('all')], `${who}: ${JSON.stringify(p)}`);
    }
    // A broadcast to a group only hostB has a member of: one copy, for hostB.
    await callTool(alice, 'fleet_broadcast', { group: 'ops', content: marker('ops') });
    const ops = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(ops.messages.map((m) => m.content), [marker('ops')]);
    assert.deepEqual((await callTool(carol, 'fleet_poll', { wait_s: 0.3 })).messages, [], 'carol is not in ops');

    // What the spy saw.
    const ours = () => spy.seen.filter((m) => [aliceGid, bobGid].includes(hdr(m, 'from')));
    await waitFor(() => ours().length >= 5, { what: 'the spy to see 5 messages', timeout: 5000 });
    const msgs = ours();
    t.diagnostic(`spy saw: ${msgs.map((m) => `${m.fields.routingKey} sealedTo=${hdr(m, 'sealedTo')} ${m.content.length}B`).join('; ')}`);
    for (const m of msgs) {
      const body = m.content.toString('latin1');
      assert.ok(!body.includes('MARKER') && !body.includes('secret'), `plaintext on the broker: ${m.fields.routingKey}: ${body}`);
      assert.ok(hdr(m, 'sealedTo'), `sealed: ${JSON.stringify(m.properties.headers)}`);
      assert.equal(m.properties.contentType, 'application/octet-stream');
      // Metadata stays readable: kind, host, the sender's name.
      assert.ok(hdr(m, 'kind') && hdr(m, 'host') && hdr(m, 'msgId'));
      // Each went to one host whose beat says envelope 1.1: packed into one header.
      assert.deepEqual(Object.keys(m.properties.headers), ['env'], `packed: ${JSON.stringify(m.properties.headers)}`);
    }
    const keys = msgs.map((m) => `${m.fields.routingKey}>${hdr(m, 'sealedTo')}`).sort();
    assert.deepEqual(keys, [`${aliceGid}>hostA`, `${bobGid}>hostB`, 'broadcast.hostB.all>hostB', 'broadcast.hostB.ops>hostB', 'broadcast.hostC.all>hostC'].sort(),
      'one sealed copy per recipient host, routed by that host');

    // ---- refusals ------------------------------------------------------------
    const keyA = readIdentity(hostA.stateDir);
    const pkB = readIdentity(hostB.stateDir).publicKey;
    const pkC = readIdentity(hostC.stateDir).publicKey;
    const inbox = `agent.${bobGid}.inbox.v2`;

    /** Publishes a crafted message to bob; expects it in fleet.dlq and only counter to move on hostB. */
    async function expectRefused(what, counter, env, wire) {
      const before = await counters(hostB);
      await mq.publish('fleet.msg', bobGid, headersFor(env, signEnvelope(env, wire, keyA.privateKey)), wire);
      const dl = await mq.takeFromDlq(env.msgId);
      assert.ok(dl.content.equals(wire), `${what}: the dead letter is the published body`);
      assert.equal(dl.properties.headers['x-death'][0].queue, inbox, `${what}: from bob's inbox`);
      await waitCounter(hostB, counter, (before[counter] ?? 0) + 1);
      const after = await counters(hostB);
      for (const c of SEAL_COUNTERS) {
        assert.equal(after[c] ?? 0, (before[c] ?? 0) + (c === counter ? 1 : 0), `${what}: counter ${c}: ${JSON.stringify(after)}`);
      }
      assert.deepEqual((await callTool(bob, 'fleet_poll', { wait_s: 0 })).messages, [], `${what}: nothing delivered`);
      t.diagnostic(`${what}: dead-lettered, ${counter} +1`);
    }
    const toBob = () => sendEnvelope({ from: aliceGid, to: bobGid, host: 'hostA', fromName: 'alice' });

    // Control: a message sealed in JavaScript is delivered.
    const okEnv = { ...toBob(), sealedTo: 'hostB' };
    const okWire = await sealBody('sealed in JavaScript', pkB, keyA.json.secretKey);
    await mq.publish('fleet.msg', bobGid, headersFor(okEnv, signEnvelope(okEnv, okWire, keyA.privateKey)), okWire);
    const okGot = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(okGot.messages.map((m) => m.content), ['sealed in JavaScript']);

    // One ciphertext byte flipped, signed again: the signature holds, the seal does not.
    const flipped = Buffer.from(await sealBody('flip me', pkB, keyA.json.secretKey));
    flipped[flipped.length - 2] ^= 0x01;
    await expectRefused('flipped ciphertext byte', 'verify_seal_broken', { ...toBob(), sealedTo: 'hostB' }, flipped);
    // Sealed to hostC's key while claiming hostB: does not open either.
    await expectRefused('sealed to the wrong key', 'verify_seal_broken', { ...toBob(), sealedTo: 'hostB' }, await sealBody('for carol', pkC, keyA.json.secretKey));
    // Sealed to hostC, and saying so, but put in bob's inbox.
    await expectRefused('sealed to another host', 'verify_sealed_elsewhere', { ...toBob(), sealedTo: 'hostC' }, await sealBody('for carol', pkC, keyA.json.secretKey));
    // In clear, while hostB does not take bodies in clear.
    await expectRefused('body in clear', 'verify_unsealed', toBob(), Buffer.from('in clear'));
    // A flipped byte without re-signing fails the signature first.
    const unsigned = Buffer.from(await sealBody('tampered', pkB, keyA.json.secretKey));
    const env = { ...toBob(), sealedTo: 'hostB' };
    const sig = signEnvelope(env, unsigned, keyA.privateKey);
    unsigned[30] ^= 0x01;
    const before = await counters(hostB);
    await mq.publish('fleet.msg', bobGid, headersFor(env, sig), unsigned);
    await mq.takeFromDlq(env.msgId);
    await waitCounter(hostB, 'verify_bad_signature', (before.verify_bad_signature ?? 0) + 1);
  } finally {
    await spy.close();
    await mq.close();
  }
});

hostsTest('broker.seal false on both ends: traffic flows in clear, and each fleetd warns at start', brokerRef, { broker: { seal: false } }, async ({ hostA, hostB, broker }) => {
  for (const h of [hostA, hostB])
    assert.match(h.fleetdLog, /broker\.seal is false: message bodies cross the broker in clear/, `${h.hostId} warned at start`);
  const mq = await amqpClient(broker.uri);
  const spy = await spyOn(mq);
  try {
    const alice = await hostA.mcpClient('alice');
    const bob = await hostB.mcpClient('bob');
    const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
    await waitStatus(alice, 'bob', 'hostB', 'online');
    await waitStatus(bob, 'alice', 'hostA', 'online');
    const sending = callTool(alice, 'fleet_send', { to: 'bob', content: 'in clear, on purpose', wait_s: 20 });
    sending.catch(() => {});
    const got = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.equal(got.messages[0]?.content, 'in clear, on purpose', JSON.stringify(got));
    await callTool(bob, 'fleet_reply', { to: aliceGid, content: 'pong in clear', inReplyTo: got.messages[0].msgId });
    const sent = await sending;
    assert.equal(sent.status, 'replied', JSON.stringify(sent));
    assert.equal(sent.reply.content, 'pong in clear');
    await callTool(alice, 'fleet_broadcast', { content: 'broadcast in clear' });
    const b = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(b.messages.map((m) => m.content), ['broadcast in clear']);
    // On the broker: one broadcast under the shared key, every body readable.
    await waitFor(() => spy.seen.length >= 3, { what: 'the spy to see 3 messages', timeout: 5000 });
    const bodies = spy.seen.map((m) => m.content.toString('utf8'));
    assert.ok(bodies.includes('in clear, on purpose') && bodies.includes('broadcast in clear'), JSON.stringify(bodies));
    assert.ok(spy.seen.every((m) => !hdr(m, 'sealedTo')));
    assert.ok(spy.seen.some((m) => m.fields.routingKey === 'broadcast.all'));
  } finally {
    await spy.close();
    await mq.close();
  }
});

hostsTest('a mixed fleet during a rollout: bodies in clear are taken only with broker.acceptUnsealed', brokerRef, { start: false }, async ({ hostA, hostB }) => {
  hostA.brokerConfig = { seal: false };
  hostB.brokerConfig = {}; // sealing, and no bodies in clear
  await Promise.all([hostA.startFleetd(), hostB.startFleetd()]);
  await pinAll([hostA, hostB]);
  const alice = await hostA.mcpClient('alice');
  let bob = await hostB.mcpClient('bob');
  await waitStatus(alice, 'bob', 'hostB', 'online');
  await waitStatus(bob, 'alice', 'hostA', 'online');
  // hostA sends in clear: hostB refuses it.
  const before = await counters(hostB);
  await callTool(alice, 'fleet_send', { to: 'bob', content: 'clear during rollout' });
  await waitCounter(hostB, 'verify_unsealed', (before.verify_unsealed ?? 0) + 1);
  assert.deepEqual((await callTool(bob, 'fleet_poll', { wait_s: 0 })).messages, []);
  // hostB seals to hostA, which (with seal off) still opens sealed bodies.
  await callTool(bob, 'fleet_send', { to: 'alice', content: 'sealed, to a host that does not seal' });
  const a = await callTool(alice, 'fleet_poll', { wait_s: 10 });
  assert.deepEqual(a.messages.map((m) => m.content), ['sealed, to a host that does not seal']);
  // hostB restarted with acceptUnsealed: now it takes hostA's clear bodies.
  await hostB.closeClient(bob);
  await hostB.stopFleetd();
  hostB.brokerConfig = { acceptUnsealed: true };
  await hostB.startFleetd();
  bob = await hostB.mcpClient('bob');
  await waitStatus(alice, 'bob', 'hostB', 'online');
  await waitStatus(bob, 'alice', 'hostA', 'online');
  await callTool(alice, 'fleet_send', { to: 'bob', content: 'clear, accepted' });
  const b = await callTool(bob, 'fleet_poll', { wait_s: 10 });
  assert.deepEqual(b.messages.map((m) => m.content), ['clear, accepted']);
});
