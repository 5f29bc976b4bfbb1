// envelope_forms.test.mjs — the two forms of the envelope on the broker
// during a rolling upgrade. A gateway sends a message packed into the one
// `env` header (envelope 1.1) only to a host whose host beat said 1.1 or
// later; to a host on 1.0, or one it has not heard from, each field goes in
// a header of its own, which every 1.x gateway reads. Two hosts are played
// here in JavaScript, one beating as 1.0 and one as 1.1, each with one agent
// whose inbox is a queue of the test's own; hostA's alice sends to both, and
// the test reads what the broker holds, checks the form, and verifies the
// signature in JavaScript whichever way the fields travelled.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { callTool, waitFor } from './harness.mjs';
import { useBroker, hostsTest } from './broker-harness.mjs';
import {
  amqpClient,
  canonical,
  envelopeOf,
  freshKey,
  headersFor,
  readIdentity,
  rfc3339,
  signEnvelope,
  uuid,
} from './trust-helpers.mjs';

const brokerRef = useBroker();

/** A signed host beat of host in envelope version v, listing one agent. */
function hostBeat(host, v, agent, key) {
  const now = Date.now();
  const env = {
    v,
    kind: 'PRESENCE',
    msgId: uuid(),
    fromName: '_gateway',
    host,
    ts: rfc3339(now),
    expiresAt: rfc3339(now + 60000),
  };
  const body = JSON.stringify({
    host,
    version: '0.1.0',
    entities: 1,
    profiles: [],
    agents: [{ name: agent.name, role: 'worker', groups: [], status: 'online', gid: agent.gid }],
  });
  return { headers: headersFor(env, signEnvelope(env, body, key.privateKey)), body };
}

hostsTest('to a host on envelope 1.0 each field is a header; to one on 1.1 the envelope is packed', brokerRef, { hosts: ['hostA'] }, async ({ hostA, broker }) => {
  const mq = await amqpClient(broker.uri);
  const ch = await mq.conn.createChannel();
  try {
    const pkA = crypto.createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(readIdentity(hostA.stateDir).publicKey, 'base64').toString('base64url') },
      format: 'jwk',
    });
    const hosts = {
      hostO: { v: '1.0', key: freshKey(), agent: { name: 'olga', gid: uuid() } },
      hostN: { v: '1.1', key: freshKey(), agent: { name: 'nina', gid: uuid() } },
    };
    for (const [host, h] of Object.entries(hosts)) {
      const r = await hostA.fleetctl(['peer', 'add', host, h.key.publicKey]);
      assert.equal(r.code, 0, r.stderr);
      // The agent's inbox: a queue of the test's own, bound by its gid.
      h.queue = (await ch.assertQueue('', { exclusive: true, autoDelete: true })).queue;
      await ch.bindQueue(h.queue, 'fleet.msg', h.agent.gid);
      const beat = hostBeat(host, h.v, h.agent, h.key);
      await mq.publish('fleet.roster', `roster.${host}._gateway`, beat.headers, beat.body);
    }
    const alice = await hostA.mcpClient('alice');
    await waitFor(async () => {
      const list = await callTool(alice, 'fleet_list', {});
      return ['olga', 'nina'].every((n) => list.entities.some((e) => e.name === n && e.status === 'online'));
    }, { what: 'olga and nina listed online on hostA' });

    for (const [host, h] of Object.entries(hosts)) {
      const sent = await callTool(alice, 'fleet_send', { to: h.agent.name, content: `to ${h.agent.name}` });
      assert.equal(sent.status, 'sent', JSON.stringify(sent));
      const m = await waitFor(() => ch.get(h.queue, { noAck: true }), { what: `the message to ${h.agent.name}` });
      const names = Object.keys(m.properties.headers).sort();
      if (h.v === '1.0') {
        assert.ok(!names.includes('env'), `${host} (1.0): no packed header: ${names}`);
        for (const k of ['v', 'kind', 'msgId', 'from', 'to', 'host', 'ts', 'sealedTo', 'sig'])
          assert.ok(names.includes(k), `${host} (1.0): header ${k} of its own: ${names}`);
      } else {
        assert.deepEqual(names, ['env'], `${host} (1.1): the envelope packed`);
      }
      const env = envelopeOf(m);
      assert.equal(env.kind, 'SEND');
      assert.equal(env.to, h.agent.gid);
      assert.equal(env.sealedTo, host);
      assert.equal(env.msgId, sent.msgId);
      assert.equal(m.properties.messageId, sent.msgId);
      // The signature covers the fields, not how they travelled.
      const ok = crypto.verify(null, canonical(env, m.content), pkA, Buffer.from(env.sig, 'base64'));
      assert.ok(ok, `${host}: hostA's signature verifies over the fields as read`);
    }
    await hostA.closeClient(alice);
  } finally {
    await ch.close().catch(() => {});
    await mq.close();
  }
});
