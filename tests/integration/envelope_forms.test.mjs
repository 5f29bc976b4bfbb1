// envelope_forms.test.mjs — the forms of the envelope on the broker
// during a rolling upgrade. A gateway sends a message packed into the one
// `env` header (envelope 1.1) only to a host whose host beat said 1.1 or
// later; to a host on 1.0, or one it has not heard from, each field goes in
// a header of its own, which every 1.x gateway reads. Two hosts are played
// here in JavaScript, one beating as 1.0 and one as 1.1, each with one agent
// whose inbox is a queue of the test's own; hostA's alice sends to both, and
// the test reads what the broker holds, checks the form, and verifies the
// signature in JavaScript whichever way the fields travelled.
//
// The second test is the pair-sealed form (envelope 1.2): a host played
// here beats 1.2, so hostA's messages to it carry no signature and open
// under the pair key of (hostA, that host), derived here from
// docs/wire-format.md. It sends both forms back, pair-sealed and signed,
// and both are taken; then every envelope field and the body of a captured
// pair-sealed message are changed one at a time, and each copy is
// dead-lettered under the reason the documented order of checks gives.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { callTool, selfGid, waitFor } from './harness.mjs';
import { useBroker, hostsTest, pinAll } from './broker-harness.mjs';
import {
  amqpClient,
  canonical,
  counters,
  envelopeOf,
  freshKey,
  headersFor,
  pairKey,
  pairOpen,
  pairSeal,
  readIdentity,
  rfc3339,
  sealBody,
  sendEnvelope,
  signEnvelope,
  sodiumSecretKey,
  uuid,
  waitCounter,
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

const VERIFY_COUNTERS = [
  'verify_bad_signature', 'verify_unpinned', 'verify_misattributed', 'verify_wrong_recipient',
  'verify_expired', 'verify_duplicate', 'verify_newer_major', 'verify_malformed', 'verify_unsealed',
  'verify_seal_broken', 'verify_sealed_elsewhere',
];

hostsTest('to a host on envelope 1.2 a message goes pair-sealed; both forms are taken; every field is covered', brokerRef, { hosts: ['hostA'], timeout: 240000 }, async ({ hostA, broker }, t) => {
  const mq = await amqpClient(broker.uri);
  const ch = await mq.conn.createChannel();
  try {
    const idA = readIdentity(hostA.stateDir);
    const skA = Buffer.from(idA.json.secretKey, 'base64');
    const P = { host: 'hostP', key: freshKey(), agent: { name: 'pia', gid: uuid() } };
    P.sk = sodiumSecretKey(P.key.privateKey);
    const Q = { host: 'hostQ', key: freshKey() }; // pinned, never heard from
    for (const h of [P, Q]) {
      const r = await hostA.fleetctl(['peer', 'add', h.host, h.key.publicKey]);
      assert.equal(r.code, 0, r.stderr);
    }
    // pia's inbox, dead-lettering into fleet.dlq like a gateway's.
    P.queue = (await ch.assertQueue(`agent.${P.agent.gid}.inbox.v2`, {
      exclusive: true, autoDelete: true, arguments: { 'x-dead-letter-exchange': 'fleet.dlx' },
    })).queue;
    await ch.bindQueue(P.queue, 'fleet.msg', P.agent.gid);
    const beat = hostBeat(P.host, '1.2', P.agent, P.key);
    await mq.publish('fleet.roster', `roster.${P.host}._gateway`, beat.headers, beat.body);

    const alice = await hostA.mcpClient('alice');
    const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
    await waitFor(async () => {
      const list = await callTool(alice, 'fleet_list', {});
      return list.entities.some((e) => e.name === 'pia' && e.status === 'online');
    }, { what: 'pia listed online on hostA' });

    // hostA -> hostP: pair-sealed, packed, no sig; hostP opens it with the
    // key it derives at its end.
    const sent = await callTool(alice, 'fleet_send', { to: 'pia', content: 'to pia, pair-sealed ✅' });
    assert.equal(sent.status, 'sent', JSON.stringify(sent));
    const m = await waitFor(() => ch.get(P.queue, { noAck: true }), { what: 'the message to pia' });
    assert.deepEqual(Object.keys(m.properties.headers), ['env'], 'the envelope packed');
    const env = envelopeOf(m);
    assert.equal(env.v, '1.2');
    assert.equal(env.sig, undefined, 'no signature in the pair-sealed form');
    assert.equal(env.sealedTo, P.host);
    assert.equal(env.host, 'hostA');
    const kAP = await pairKey(P.sk, idA.publicKey, 'hostA', P.host, false);
    const opened = await pairOpen(env, m.content, kAP);
    assert.equal(opened?.toString('utf8'), 'to pia, pair-sealed ✅', 'hostP opens it with the pair key');
    assert.equal(await pairOpen(env, m.content, await pairKey(P.sk, idA.publicKey, P.host, 'hostA', true)), null,
      "the other direction's key does not open it");
    // A `to` that differs in its first character (a gid may itself start with 'f').
    const otherTo = P.agent.gid.replace(/^./, (c) => (c === 'f' ? '0' : 'f'));
    assert.equal(await pairOpen({ ...env, to: otherTo }, m.content, kAP), null,
      'a changed field does not open it');

    // hostP -> hostA, both forms.
    const kPA = await pairKey(P.sk, idA.publicKey, P.host, 'hostA', true);
    const fromPia = (over = {}) => sendEnvelope({
      from: P.agent.gid, to: aliceGid, host: P.host, fromName: 'pia', over: { v: '1.2', sealedTo: 'hostA', ...over },
    });
    const good = fromPia();
    await mq.publish('fleet.msg', aliceGid, headersFor(good), await pairSeal(good, 'pair-sealed from pia', kPA));
    const old = fromPia({ v: '1.0' });
    const oldBody = await sealBody('signed and boxed from pia', idA.publicKey, P.sk.toString('base64'));
    await mq.publish('fleet.msg', aliceGid, headersFor(old, signEnvelope(old, oldBody, P.key.privateKey)), oldBody);
    const got = [];
    await waitFor(async () => {
      got.push(...(await callTool(alice, 'fleet_poll', { wait_s: 2 })).messages);
      return got.length >= 2;
    }, { what: 'both forms reach alice', timeout: 20000 });
    assert.deepEqual(got.map((x) => x.content).sort(), ['pair-sealed from pia', 'signed and boxed from pia']);
    assert.ok(got.every((x) => x.from.gid === P.agent.gid));

    /** Publishes to alice's inbox; expects it dead-lettered and only counter to move. */
    async function expectRefused(what, counter, headers, body) {
      const before = await counters(hostA);
      await mq.publish('fleet.msg', aliceGid, headers, body);
      const dl = await mq.takeFromDlq(headers.msgId);
      assert.equal(dl.properties.headers['x-death']?.[0]?.reason, 'rejected', `${what}: rejected by the gateway`);
      await waitCounter(hostA, counter, (before[counter] ?? 0) + 1);
      const after = await counters(hostA);
      for (const c of VERIFY_COUNTERS) {
        const want = (before[c] ?? 0) + (c === counter ? 1 : 0);
        assert.equal(after[c] ?? 0, want, `${what}: counter ${c} (want only ${counter} to move)`);
      }
      assert.equal(after.remote_dead_lettered, (before.remote_dead_lettered ?? 0) + 1, `${what}: dead-lettered`);
      t.diagnostic(`${what}: dead-lettered, ${counter} +1`);
    }

    // A captured pair-sealed message, each field of its envelope changed
    // (an absent one added), then its body: the seal covers them all. A
    // changed host names another pinned host (another pair key); a changed
    // sealedTo names another host; v of a newer major is refused first.
    const cap = fromPia({ inReplyTo: undefined });
    const capBody = await pairSeal(cap, 'captured', kPA);
    const changes = {
      v: ['1.3', 'verify_seal_broken'],
      kind: ['REPLY', 'verify_seal_broken'],
      msgId: [uuid(), 'verify_seal_broken'],
      traceId: [uuid(), 'verify_seal_broken'],
      from: [uuid(), 'verify_seal_broken'],
      to: [uuid(), 'verify_seal_broken'],
      inReplyTo: [uuid(), 'verify_seal_broken'],
      turnId: [uuid(), 'verify_seal_broken'],
      spawnId: [uuid(), 'verify_seal_broken'],
      fromName: ['mallory', 'verify_seal_broken'],
      host: [Q.host, 'verify_seal_broken'],
      ts: [rfc3339(Date.now() - 1000), 'verify_seal_broken'],
      expiresAt: [rfc3339(Date.now() + 7200 * 1000), 'verify_seal_broken'],
      sealedTo: [Q.host, 'verify_sealed_elsewhere'],
    };
    for (const [field, [value, counter]] of Object.entries(changes)) {
      assert.notEqual(cap[field], value);
      const changed = { ...cap, [field]: value };
      await expectRefused(`${field} changed`, counter, headersFor(changed), capBody);
    }
    const flipped = Buffer.from(capBody);
    flipped[flipped.length - 20] ^= 0x01;
    await expectRefused('body changed', 'verify_seal_broken', headersFor(cap), flipped);
    await expectRefused('a newer major', 'verify_newer_major', headersFor({ ...cap, v: '2.0' }), capBody);
    await expectRefused('signature stripped and no seal', 'verify_bad_signature',
      headersFor({ ...cap, sealedTo: undefined }), capBody);

    // The later checks, in order, on messages whose seal does open.
    const notPia = fromPia({ from: aliceGid });
    await expectRefused('from does not live on hostP', 'verify_misattributed', headersFor(notPia), await pairSeal(notPia, 'x', kPA));
    const elsewhere = fromPia({ to: P.agent.gid });
    await expectRefused('to is not the routing key', 'verify_wrong_recipient', headersFor(elsewhere), await pairSeal(elsewhere, 'x', kPA));
    const expired = fromPia({ ts: rfc3339(Date.now() - 120000), expiresAt: rfc3339(Date.now() - 60000) });
    await expectRefused('expired', 'verify_expired', headersFor(expired), await pairSeal(expired, 'x', kPA));
    await expectRefused('seen', 'verify_duplicate', headersFor(good), await pairSeal(good, 'pair-sealed from pia', kPA));

    const none = await callTool(alice, 'fleet_poll', { wait_s: 0 });
    assert.deepEqual(none.messages, [], `nothing refused reached alice: ${JSON.stringify(none)}`);

    // On its recipient host, fleetctl dlq checks a pair-sealed message: one
    // whose seal opens verifies, one changed does not and is not replayed.
    const opens = fromPia({ from: aliceGid });
    await mq.publish('fleet.msg', aliceGid, headersFor(opens), await pairSeal(opens, 'x', kPA));
    const broken = fromPia();
    const brokenBody = await pairSeal(broken, 'y', kPA);
    brokenBody[brokenBody.length - 1] ^= 0x01;
    await mq.publish('fleet.msg', aliceGid, headersFor(broken), brokenBody);
    const dead = await waitFor(async () => {
      const r = await hostA.fleetctl(['--json', 'dlq', 'list']);
      const all = JSON.parse(r.stdout).messages ?? [];
      const a = all.find((x) => x.msgId === opens.msgId);
      const b = all.find((x) => x.msgId === broken.msgId);
      return a && b && { a, b };
    }, { what: 'both dead letters listed on hostA' });
    assert.equal(dead.a.verifiesNow, true, `its seal opens on hostA: ${JSON.stringify(dead.a)}`);
    assert.equal(dead.b.verifiesNow, false, `a changed seal does not: ${JSON.stringify(dead.b)}`);
    const rb = await hostA.fleetctl(['dlq', 'replay', broken.msgId]);
    assert.notEqual(rb.code, 0);
    assert.match(rb.stderr, /refused to replay .*still fails verification: it does not open under the pair key/);
    assert.equal((await hostA.fleetctl(['dlq', 'purge'])).code, 0);

    // A pair-sealed message to hostP, dead-lettered there: hostA cannot
    // check who sent it (only its recipient can), so it does not say it
    // verifies, and refuses to replay it, naming the host to ask.
    const again = await callTool(alice, 'fleet_send', { to: 'pia', content: 'to pia, then the dlq' });
    const dm = await waitFor(() => ch.get(P.queue), { what: 'the second message to pia' });
    ch.nack(dm, false, false);
    const listed = await waitFor(async () => {
      const r = await hostA.fleetctl(['--json', 'dlq', 'list']);
      const all = JSON.parse(r.stdout).messages ?? [];
      return all.find((x) => x.msgId === again.msgId);
    }, { what: 'the dead letter listed on hostA' });
    assert.equal(listed.verifiesNow, null, `not checkable on hostA: ${JSON.stringify(listed)}`);
    const rp = await hostA.fleetctl(['dlq', 'replay', again.msgId]);
    assert.notEqual(rp.code, 0);
    assert.match(rp.stderr, /pair-sealed to host 'hostP': only that host can check who sent it/);
    await hostA.closeClient(alice);
  } finally {
    await ch.close().catch(() => {});
    await mq.close();
  }
});

// A rolling upgrade, or an operator who wants every message signed: hostB
// runs with broker.pairSeal false. It still reads the pair-sealed form and
// still announces 1.2, so hostA pair-seals to it; it signs what it sends.
// A queue of the test's own, bound to both agents' keys, sees each form.
hostsTest('a gateway with broker.pairSeal false signs what it sends and takes the pair-sealed form', brokerRef, { start: false }, async ({ hostA, hostB, broker }) => {
  hostB.brokerConfig.pairSeal = false;
  await Promise.all([hostA.startFleetd(), hostB.startFleetd()]);
  await pinAll([hostA, hostB]);
  const mq = await amqpClient(broker.uri);
  const ch = await mq.conn.createChannel();
  try {
    const alice = await hostA.mcpClient('alice');
    const bob = await hostB.mcpClient('bob');
    const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
    const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
    const tap = (await ch.assertQueue('', { exclusive: true, autoDelete: true })).queue;
    await ch.bindQueue(tap, 'fleet.msg', aliceGid);
    await ch.bindQueue(tap, 'fleet.msg', bobGid);
    await waitFor(async () => {
      const a = await callTool(alice, 'fleet_list', {});
      const b = await callTool(bob, 'fleet_list', {});
      // A host's beat (its hosts entry) says which envelope it reads.
      return a.entities.some((e) => e.name === 'bob' && e.status === 'online') &&
        b.entities.some((e) => e.name === 'alice' && e.status === 'online') &&
        (a.hosts ?? []).some((h) => h.host === 'hostB') && (b.hosts ?? []).some((h) => h.host === 'hostA');
    }, { what: "alice and bob see each other, and each gateway took the other's host beat" });

    const toBob = await callTool(alice, 'fleet_send', { to: 'bob', content: 'alice to bob' });
    assert.equal(toBob.status, 'sent', JSON.stringify(toBob));
    const atBob = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(atBob.messages.map((m) => m.content), ['alice to bob']);
    const toAlice = await callTool(bob, 'fleet_send', { to: 'alice', content: 'bob to alice' });
    assert.equal(toAlice.status, 'sent', JSON.stringify(toAlice));
    const atAlice = await callTool(alice, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(atAlice.messages.map((m) => m.content), ['bob to alice']);

    const seen = {};
    await waitFor(async () => {
      for (let m; (m = await ch.get(tap, { noAck: true })); ) {
        const env = envelopeOf(m);
        seen[env.host] = env;
      }
      return seen.hostA && seen.hostB;
    }, { what: 'both messages on the tap queue' });
    assert.equal(seen.hostA.sig, undefined, 'hostA (pairSeal default) pair-seals to hostB');
    assert.equal(seen.hostA.sealedTo, 'hostB');
    assert.ok(seen.hostB.sig, 'hostB (pairSeal false) signs');
    assert.equal(seen.hostB.sealedTo, 'hostA');
    const c = await counters(hostB);
    assert.equal(c.remote_dead_lettered ?? 0, 0);
    await hostA.closeClient(alice);
    await hostB.closeClient(bob);
  } finally {
    await ch.close().catch(() => {});
    await mq.close();
  }
});
