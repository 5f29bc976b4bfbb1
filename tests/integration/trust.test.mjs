// trust.test.mjs — what a receiving gateway believes. Two gateways (hostA,
// hostB) on a private RabbitMQ pin each other's keys with fleetctl; then
// this file talks to the broker with amqplib (not fleet's encoder) and signs
// envelopes in JavaScript (trust-helpers.mjs, written from
// docs/wire-format.md) with hostA's key read from its node-identity.json.
//
// A correctly signed message from alice@hostA reaches bob@hostB (so the JS
// encoder matches fleet's). Each forgery is never delivered, lands in
// fleet.dlq, and moves exactly its own fleetctl status counter: a body or a
// signed header changed after signing, an unpinned signer, a `from` that
// lives on hostB, a valid message replayed into another inbox, an expired
// one, a duplicate msgId (also after hostB's fleetd restarts), a newer major
// version. Then: a second key for a pinned host is refused; presence signed
// by the wrong key or an unpinned host is ignored and counted; a
// node-identity.json readable by others stops fleetd.

import assert from 'node:assert/strict';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { bin, callTool, fleetTest, selfGid, sleep } from './harness.mjs';
import { useBroker, hostsTest, findEntity, waitEntity, waitStatus } from './broker-harness.mjs';
import {
  amqpClient,
  counters,
  freshKey,
  headersFor,
  MSG_ID,
  packedHeadersFor,
  parseJson,
  pinAll,
  presenceBeat,
  readIdentity,
  rfc3339,
  sendEnvelope,
  signEnvelope,
  uuid,
  waitCounter,
} from './trust-helpers.mjs';

const brokerRef = useBroker();

const VERIFY_COUNTERS = [
  'verify_bad_signature',
  'verify_unpinned',
  'verify_misattributed',
  'verify_wrong_recipient',
  'verify_expired',
  'verify_duplicate',
  'verify_newer_major',
  'verify_malformed',
];

/** Two pinned gateways, alice on hostA, bob and carol on hostB, an amqplib client. */
async function pinnedWorld({ hostA, hostB, broker }) {
  const ids = await pinAll([hostA, hostB]);
  const keyA = readIdentity(hostA.stateDir);
  assert.equal(keyA.publicKey, ids.hostA.publicKey, "node-identity.json's secret key belongs to fleetctl identity's publicKey");
  assert.equal(keyA.json.publicKey, ids.hostA.publicKey);

  const alice = await hostA.mcpClient('alice', { role: 'lead' });
  const bob = await hostB.mcpClient('bob');
  const carol = await hostB.mcpClient('carol');
  const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
  const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
  const carolGid = selfGid(await callTool(carol, 'fleet_list', {}));
  assert.ok(aliceGid && bobGid && carolGid, 'every client has a gid');
  // Signed presence got through both ways, so the pins work.
  await waitStatus(bob, 'alice', 'hostA', 'online');
  await waitStatus(alice, 'bob', 'hostB', 'online');
  await waitStatus(alice, 'carol', 'hostB', 'online');

  const mq = await amqpClient(broker.uri);
  return { ids, keyA, alice, bob, carol, aliceGid, bobGid, carolGid, mq };
}

// The messages below are signed in JavaScript and travel in clear, so the
// gateways take bodies in clear here (broker.acceptUnsealed); sealing and
// its own refusals are seal.test.mjs's.
hostsTest('forged, replayed, expired, duplicate and newer-major messages are dead-lettered, never delivered', brokerRef, { timeout: 150000, broker: { acceptUnsealed: true } }, async (world, t) => {
  const { hostA, hostB } = world;
  const w = await pinnedWorld(world);
  const { keyA, bob, carol, aliceGid, bobGid, carolGid, mq } = w;
  try {
    const inbox = (gid) => `agent.${gid}.inbox.v2`;

    /** A SEND from alice@hostA to bob, signed with hostA's key. */
    function aliceToBob(over = {}, body = `hello bob ${uuid()}`) {
      const env = sendEnvelope({ from: aliceGid, to: bobGid, host: 'hostA', fromName: 'alice', over });
      return { env, body, sig: signEnvelope(env, body, keyA.privateKey) };
    }

    async function nothingDelivered(what) {
      for (const [name, c] of [
        ['bob', bob],
        ['carol', carol],
      ]) {
        const p = await callTool(c, 'fleet_poll', { wait_s: 0 });
        assert.deepEqual(p.messages, [], `${what}: ${name} must get nothing: ${JSON.stringify(p)}`);
      }
    }

    /**
     * Publishes headers+body on fleet.msg with key; expects it in fleet.dlq
     * (dead-lettered from queue) and exactly counter to go up by one on hostB.
     */
    async function expectRefused(what, counter, { key = bobGid, headers, body, queue = inbox(key) }) {
      const before = await counters(hostB);
      await mq.publish('fleet.msg', key, headers, body);
      const dl = await mq.takeFromDlq(headers.msgId ?? headers[MSG_ID]);
      assert.equal(dl.content.toString('utf8'), Buffer.from(body).toString('utf8'), `${what}: the dead letter is the published body`);
      const death = dl.properties.headers['x-death'];
      assert.ok(Array.isArray(death) && death.length > 0, `${what}: x-death header: ${JSON.stringify(dl.properties.headers)}`);
      assert.equal(death[0].reason, 'rejected', `${what}: rejected by the gateway: ${JSON.stringify(death)}`);
      assert.equal(death[0].queue, queue, `${what}: dead-lettered from ${queue}: ${JSON.stringify(death)}`);
      await waitCounter(hostB, counter, (before[counter] ?? 0) + 1);
      const after = await counters(hostB);
      for (const c of VERIFY_COUNTERS) {
        const want = (before[c] ?? 0) + (c === counter ? 1 : 0);
        assert.equal(after[c] ?? 0, want, `${what}: counter ${c} (want only ${counter} to move): before ${JSON.stringify(before)} after ${JSON.stringify(after)}`);
      }
      await nothingDelivered(what);
      t.diagnostic(`${what}: dead-lettered, ${counter} +1`);
    }

    // (0) Control: a correct message is delivered.
    const good = aliceToBob({}, 'control: signed in JavaScript ✅ Grüße');
    const goodHeaders = headersFor(good.env, good.sig);
    await mq.publish('fleet.msg', bobGid, goodHeaders, good.body);
    const got = await callTool(bob, 'fleet_poll', { wait_s: 10 });
    assert.equal(got.messages.length, 1, `the JS-signed message reaches bob: ${JSON.stringify(got)}`);
    const m = got.messages[0];
    assert.equal(m.content, good.body);
    assert.equal(m.msgId, good.env.msgId);
    assert.equal(m.traceId, good.env.traceId);
    assert.equal(m.from.gid, aliceGid);
    assert.equal(m.from.name, 'alice');
    assert.equal(await mq.count('fleet.dlq'), 0, 'nothing dead-lettered so far');

    // (0b) The same kind of message with its envelope packed into the one
    // `env` header (envelope 1.1), written here in JavaScript: delivered.
    {
      const x = aliceToBob({ fromName: 'alice' }, 'packed: Grüße ✅');
      await mq.publish('fleet.msg', bobGid, packedHeadersFor(x.env, x.sig), x.body);
      const p = await callTool(bob, 'fleet_poll', { wait_s: 10 });
      assert.deepEqual(p.messages.map((y) => [y.msgId, y.content, y.from.name]), [[x.env.msgId, x.body, 'alice']], JSON.stringify(p));
    }

    // (0b) Within the major version: a newer minor with a header this fleetd
    // does not know is delivered (the unknown header is ignored).
    {
      const x = aliceToBob({ v: '1.7' }, 'from a newer minor');
      await mq.publish('fleet.msg', bobGid, { ...headersFor(x.env, x.sig), someFutureField: 'ignored' }, x.body);
      const g = await callTool(bob, 'fleet_poll', { wait_s: 10 });
      assert.deepEqual(g.messages.map((y) => y.msgId), [x.env.msgId], `v 1.7 is delivered: ${JSON.stringify(g)}`);
    }

    // (1) Body changed after signing.
    {
      const x = aliceToBob({}, 'the body that was signed');
      await expectRefused('tampered body', 'verify_bad_signature', {
        headers: headersFor(x.env, x.sig),
        body: 'the body that was signed, and more',
      });
    }
    // (2) A signed header changed after signing (fromName, then traceId).
    {
      const x = aliceToBob();
      await expectRefused('tampered fromName', 'verify_bad_signature', {
        headers: headersFor({ ...x.env, fromName: 'mallory' }, x.sig),
        body: x.body,
      });
      const y = aliceToBob();
      await expectRefused('tampered traceId', 'verify_bad_signature', {
        headers: headersFor({ ...y.env, traceId: uuid() }, y.sig),
        body: y.body,
      });
    }
    // (3) Signed by a host nobody pinned.
    {
      const k = freshKey();
      const env = sendEnvelope({ from: aliceGid, to: bobGid, host: 'hostX', fromName: 'alice' });
      const body = 'from an unpinned host';
      await expectRefused('unpinned signer', 'verify_unpinned', {
        headers: headersFor(env, signEnvelope(env, body, k.privateKey)),
        body,
      });
    }
    // (3b) Claims host hostA but is signed by another key.
    {
      const k = freshKey();
      const env = sendEnvelope({ from: aliceGid, to: bobGid, host: 'hostA', fromName: 'alice' });
      const body = 'hostA in name only';
      await expectRefused('wrong key for a pinned host', 'verify_bad_signature', {
        headers: headersFor(env, signEnvelope(env, body, k.privateKey)),
        body,
      });
    }
    // (4) hostA signs for an entity that lives on hostB.
    {
      const env = sendEnvelope({ from: carolGid, to: bobGid, host: 'hostA', fromName: 'carol' });
      const body = 'hostA speaking for carol';
      await expectRefused('misattributed from (carol@hostB)', 'verify_misattributed', {
        headers: headersFor(env, signEnvelope(env, body, keyA.privateKey)),
        body,
      });
      const env2 = sendEnvelope({ from: bobGid, to: bobGid, host: 'hostA', fromName: 'bob' });
      await expectRefused('misattributed from (bob himself)', 'verify_misattributed', {
        headers: headersFor(env2, signEnvelope(env2, body, keyA.privateKey)),
        body,
      });
    }
    // (5) A valid message for bob replayed into carol's inbox.
    {
      const x = aliceToBob({}, 'for bob only');
      await expectRefused('replayed into another inbox', 'verify_wrong_recipient', {
        key: carolGid,
        headers: headersFor(x.env, x.sig),
        body: x.body,
      });
    }
    // (6) Expired, validly signed.
    {
      const now = Date.now();
      const x = aliceToBob({ ts: rfc3339(now - 120000), expiresAt: rfc3339(now - 60000) }, 'too late');
      await expectRefused('expired', 'verify_expired', { headers: headersFor(x.env, x.sig), body: x.body });
    }
    // (8) Newer major version, validly signed.
    {
      const x = aliceToBob({ v: '2.0' }, 'from the future');
      await expectRefused('newer major v 2.0', 'verify_newer_major', { headers: headersFor(x.env, x.sig), body: x.body });
    }
    // (9) A packed envelope that is not one (a length that runs past its
    // value): not an envelope at all.
    {
      const x = aliceToBob({}, 'badly packed');
      const headers = packedHeadersFor(x.env, x.sig);
      headers.env = headers.env.replace('kind:4:', 'kind:40:');
      await expectRefused('a packed envelope that is not one', 'verify_malformed', { headers, body: x.body });
    }
    // (7) The control message's exact bytes again.
    await expectRefused('duplicate msgId', 'verify_duplicate', { headers: goodHeaders, body: good.body });

    // (7b) ... and again after hostB's fleetd restarts on the same state dir.
    await hostB.closeClient(bob);
    await hostB.closeClient(carol);
    await hostB.stopFleetd();
    await hostB.startFleetd();
    const peersB = parseJson(await hostB.fleetctl(['peer', 'list', '--json']), 'peer list --json after restart');
    const pinA = (peersB.peers || []).find((p) => p.host === 'hostA');
    assert.ok(pinA, `hostA's pin survives the restart: ${JSON.stringify(peersB)}`);
    assert.equal(pinA.publicKey, w.ids.hostA.publicKey);
    const bob2 = await hostB.mcpClient('bob');
    const carol2 = await hostB.mcpClient('carol');
    assert.equal(selfGid(await callTool(bob2, 'fleet_list', {})), bobGid, 'bob resumes his gid');
    assert.equal(selfGid(await callTool(carol2, 'fleet_list', {})), carolGid, 'carol resumes her gid');
    await waitStatus(bob2, 'alice', 'hostA', 'online');
    // The link consumes bob's inbox again before the duplicate goes in.
    await sleep(500);
    const before = await counters(hostB);
    await mq.publish('fleet.msg', bobGid, goodHeaders, good.body);
    const dl = await mq.takeFromDlq(good.env.msgId);
    assert.equal(dl.content.toString('utf8'), good.body);
    await waitCounter(hostB, 'verify_duplicate', (before.verify_duplicate ?? 0) + 1);
    const p = await callTool(bob2, 'fleet_poll', { wait_s: 1 });
    assert.deepEqual(p.messages, [], `the duplicate is not delivered after the restart: ${JSON.stringify(p)}`);

    // A fresh message still goes through after all that.
    const fresh = aliceToBob({}, 'still trusted after the restart');
    await mq.publish('fleet.msg', bobGid, headersFor(fresh.env, fresh.sig), fresh.body);
    const got2 = await callTool(bob2, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(got2.messages.map((x) => x.msgId), [fresh.env.msgId], JSON.stringify(got2));
    assert.equal(await mq.count('fleet.dlq'), 0, 'every dead letter was accounted for');
  } finally {
    await mq.close();
  }
});

hostsTest('a second key for a pinned host is refused; presence from the wrong key or an unpinned host is ignored', brokerRef, async (world, t) => {
  const { hostA, hostB } = world;
  const w = await pinnedWorld(world);
  const { keyA, bob, mq } = w;
  try {
    // (9) hostA is pinned on hostB; another key for it is refused.
    const other = freshKey();
    const r = await hostB.fleetctl(['peer', 'add', 'hostA', other.publicKey]);
    assert.equal(r.code, 1, `peer add with another key exits 1: ${r.stdout}${r.stderr}`);
    const out = r.stdout + r.stderr;
    assert.match(out, /pinned/i, `the refusal says hostA is pinned: ${out}`);
    assert.match(out, /peer remove/, `the refusal says how to remove the pin: ${out}`);
    const list = parseJson(await hostB.fleetctl(['peer', 'list', '--json']), 'peer list --json');
    const pins = (list.peers || []).filter((p) => p.host === 'hostA');
    assert.equal(pins.length, 1, JSON.stringify(list));
    assert.equal(pins[0].publicKey, w.ids.hostA.publicKey, 'the pin is unchanged');
    assert.equal(typeof pins[0].pinnedAt, 'string');
    const peersFile = JSON.parse(readFileSync(path.join(hostB.stateDir, 'peers.json'), 'utf8'));
    assert.ok(JSON.stringify(peersFile).includes(w.ids.hostA.publicKey), `peers.json holds the pin: ${JSON.stringify(peersFile)}`);
    assert.ok(!JSON.stringify(peersFile).includes(other.publicKey), 'peers.json does not hold the refused key');

    // (10) Presence. Control first: a beat signed in JS with hostA's key for
    // a new gid shows up on hostB.
    const okGid = uuid();
    const ok = presenceBeat({ gid: okGid, host: 'hostA', name: 'ghost-ok' });
    await mq.publish('fleet.roster', `roster.hostA.${okGid}`, headersFor(ok.env, signEnvelope(ok.env, ok.body, keyA.privateKey)), ok.body);
    const seen = await waitEntity(bob, 'ghost-ok', 'hostA');
    assert.equal(seen.entity.gid, okGid);

    // Signed with a wrong key, claiming hostA.
    const c0 = await counters(hostB);
    const badGid = uuid();
    const bad = presenceBeat({ gid: badGid, host: 'hostA', name: 'ghost-forged' });
    await mq.publish('fleet.roster', `roster.hostA.${badGid}`, headersFor(bad.env, signEnvelope(bad.env, bad.body, other.privateKey)), bad.body);
    await waitCounter(hostB, 'presence_refused', (c0.presence_refused ?? 0) + 1);

    // From a host nobody pinned.
    const c1 = await counters(hostB);
    const xGid = uuid();
    const kx = freshKey();
    const bx = presenceBeat({ gid: xGid, host: 'hostX', name: 'ghost-unpinned' });
    await mq.publish('fleet.roster', `roster.hostX.${xGid}`, headersFor(bx.env, signEnvelope(bx.env, bx.body, kx.privateKey)), bx.body);
    await waitCounter(hostB, 'presence_refused', (c1.presence_refused ?? 0) + 1);

    // Unsigned, claiming hostA.
    const c2 = await counters(hostB);
    const uGid = uuid();
    const ub = presenceBeat({ gid: uGid, host: 'hostA', name: 'ghost-unsigned' });
    await mq.publish('fleet.roster', `roster.hostA.${uGid}`, headersFor(ub.env), ub.body);
    await waitCounter(hostB, 'presence_refused', (c2.presence_refused ?? 0) + 1);

    await sleep(1000); // a beat that was wrongly believed would be in the roster by now
    const roster = await callTool(bob, 'fleet_list', {});
    for (const [name, gid] of [
      ['ghost-forged', badGid],
      ['ghost-unpinned', xGid],
      ['ghost-unsigned', uGid],
    ]) {
      assert.ok(!findEntity(roster, name), `${name} must not be in hostB's fleet_list: ${JSON.stringify(roster)}`);
      assert.ok(!roster.entities.some((e) => e.gid === gid), `${name}'s gid must not be in hostB's fleet_list`);
    }
    const rosterA = await callTool(w.alice, 'fleet_list', {});
    assert.ok(!findEntity(rosterA, 'ghost-unpinned'), `hostA ignores the unpinned host too: ${JSON.stringify(rosterA)}`);
    t.diagnostic(`presence_refused on hostB: ${(await counters(hostB)).presence_refused}`);
  } finally {
    await mq.close();
  }
});

// docs/wire-format.md: every receive check applies to presence too, "not
// expired" included: a beat captured from the broker and replayed later must
// not bring back an agent of a host that has gone.
hostsTest('an expired presence beat is ignored, even when validly signed', brokerRef, async (world) => {
  const { hostB } = world;
  const w = await pinnedWorld(world);
  const { keyA, bob, mq } = w;
  try {
    const c0 = await counters(hostB);
    const gid = uuid();
    const beat = presenceBeat({ gid, host: 'hostA', name: 'ghost-stale' });
    beat.env.ts = rfc3339(Date.now() - 7200000);
    beat.env.expiresAt = rfc3339(Date.now() - 3600000);
    await mq.publish('fleet.roster', `roster.hostA.${gid}`, headersFor(beat.env, signEnvelope(beat.env, beat.body, keyA.privateKey)), beat.body);
    await waitCounter(hostB, 'presence_refused', (c0.presence_refused ?? 0) + 1, { timeout: 5000 });
    const roster = await callTool(bob, 'fleet_list', {});
    assert.ok(!findEntity(roster, 'ghost-stale'), `an expired beat must not add an entity: ${JSON.stringify(roster)}`);
  } finally {
    await mq.close();
  }
});

fleetTest('node identity: created 0600 on first start; a 0644 file stops fleetd with "chmod 600"', async (f) => {
  await f.startFleetd();
  const file = path.join(f.stateDir, 'node-identity.json');
  const st = statSync(file);
  assert.equal(st.mode & 0o777, 0o600, `node-identity.json is mode 0600, is ${(st.mode & 0o777).toString(8)}`);
  const id = readIdentity(f.stateDir);
  assert.equal(id.json.version, 1);
  assert.equal(typeof id.json.hostId, 'string');
  assert.equal(typeof id.json.created, 'string');
  assert.equal(id.json.publicKey, id.publicKey, 'the secret key (seed) derives the public key');
  const shown = parseJson(await f.fleetctl(['identity', '--json']), 'identity --json');
  assert.equal(shown.publicKey, id.publicKey);
  assert.equal(shown.hostId, id.json.hostId);
  await f.stopFleetd();

  const text = readFileSync(file, 'utf8');
  chmodSync(file, 0o644);
  const r = await f.run(bin('fleetd'), ['--state-dir', f.stateDir, '--socket', f.socket], { timeout: 15000 });
  assert.equal(r.code, 1, `fleetd with a 0644 identity exits 1 (code ${r.code} signal ${r.signal}): ${r.stdout}${r.stderr}`);
  assert.match(r.stdout + r.stderr, /chmod 600/, `the message says how to fix it: ${r.stderr}`);
  assert.equal(readFileSync(file, 'utf8'), text, 'the identity file is left as it was');

  // Fixed, it starts again with the same key.
  chmodSync(file, 0o600);
  await f.startFleetd();
  const again = parseJson(await f.fleetctl(['identity', '--json']), 'identity --json after the fix');
  assert.equal(again.publicKey, id.publicKey, 'the key survives restarts');
});
