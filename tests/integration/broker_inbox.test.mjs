// broker_inbox.test.mjs — an agent's inbox on the broker, as someone holding
// a gateway's own broker login (or the broker's operator) or an unlucky disk
// would treat it.
//
// Deleted: the queue agent.<gid>.inbox.v2 of bob (hostB) is deleted with raw
// AMQP. The broker cancels hostB's consumer (fleetd asks for that at login,
// consumer_cancel_notify), hostB declares the queue again with its own
// arguments and consumes it, and a later message from alice (hostA) reaches
// bob, without a restart.
//
// Squatted: the queue is deleted and at once declared again by the attacker
// with x-max-length 0 (every message is dropped while the broker confirms
// it). hostB cannot declare its own (PRECONDITION_FAILED): its status reads
// degraded and names the inbox, the counter inbox_foreign counts it, bob's
// beat says so, and alice's send to bob fails instead of answering "sent".
// Once the squatter's queue is gone, hostB declares its own again and
// messages flow.
//
// Disk full: hostB's state dir is on a small tmpfs (root and mount; skipped
// outside CI otherwise) that is filled up. A burst of cross-host messages to
// bob cannot be committed: the deliveries go back to the broker
// (store_batch_failures, deliveries_requeued, a log line saying how many and
// why). Once space is freed, all of them reach bob, each once and in order,
// without a restart.

import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { callTool, callToolRaw, selfGid, waitFor, sleep } from './harness.mjs';
import { fill, mountTmpfs, unmountTmpfs } from './disk.mjs';
import { useBroker, hostsTest, pinAll, waitStatus, waitEntity } from './broker-harness.mjs';
import { amqpClient, counters, status, waitCounter } from './trust-helpers.mjs';

const brokerRef = useBroker();
const CI = process.env.CI === 'true' || process.env.CI === '1';

const inboxOf = (gid) => `agent.${gid}.inbox.v2`;

/** The queue's consumer count, or null when it does not exist (a channel of its own: a miss closes it). */
async function queueInfo(mq, q) {
  const ch = await mq.conn.createChannel();
  ch.on('error', () => {});
  try {
    return await ch.checkQueue(q);
  } catch {
    return null;
  } finally {
    await ch.close().catch(() => {});
  }
}

/** What a tool call answered: { ok, status, text }. */
async function trySend(client, to, content) {
  const res = await callToolRaw(client, 'fleet_send', { to, content });
  const text = res.content?.find((c) => c.type === 'text')?.text ?? '';
  return { ok: !res.isError, status: res.structuredContent?.status, text };
}

async function pollAll(client, n, { timeout = 60000 } = {}) {
  const got = [];
  const t0 = Date.now();
  while (got.length < n && Date.now() - t0 < timeout) {
    const r = await callTool(client, 'fleet_poll', { wait_s: 5, max: 50 });
    for (const m of r.messages) got.push(m.content);
  }
  return got;
}

async function setUp(hostA, hostB) {
  const alice = await hostA.mcpClient('alice');
  const bob = await hostB.mcpClient('bob');
  const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
  await waitStatus(alice, 'bob', 'hostB', 'online');
  await waitStatus(bob, 'alice', 'hostA', 'online');
  return { alice, bob, bobGid };
}

hostsTest('a deleted inbox is declared again and consumed; a later message arrives', brokerRef, async ({ hostA, hostB, broker }) => {
  const { alice, bob, bobGid } = await setUp(hostA, hostB);
  const mq = await amqpClient(broker.uri);
  try {
    const q = inboxOf(bobGid);
    assert.equal((await queueInfo(mq, q))?.consumerCount, 1, 'hostB consumes bob inbox');
    const ch = await mq.conn.createChannel();
    await ch.deleteQueue(q);
    await ch.close();
    // Within seconds the queue is back, consumed by hostB.
    await waitFor(async () => (await queueInfo(mq, q))?.consumerCount === 1, { timeout: 10000, what: 'hostB to declare and consume bob inbox again' });
    await waitCounter(hostB, 'inbox_cancelled', 1);
    assert.match(hostB.fleetdLog, /cancelled the consumer/);
    const st = await status(hostB);
    assert.equal(st.broker?.state, 'up', `hostB status after the re-declare: ${JSON.stringify(st.broker)}`);
    const sent = await trySend(alice, 'bob', 'after the delete');
    assert.equal(sent.status, 'sent', sent.text);
    const got = await pollAll(bob, 1, { timeout: 20000 });
    assert.deepEqual(got, ['after the delete']);
  } finally {
    await mq.conn.close().catch(() => {});
  }
});

hostsTest('a squatted inbox (x-max-length 0) reads degraded and no send to it answers sent', brokerRef, async ({ hostA, hostB, broker }) => {
  const { alice, bob, bobGid } = await setUp(hostA, hostB);
  const mq = await amqpClient(broker.uri);
  try {
    const q = inboxOf(bobGid);
    // The attacker deletes the queue and declares its own at once; should
    // hostB be quicker, it tries again.
    let squatted = false;
    for (let i = 0; i < 20 && !squatted; i++) {
      const ch = await mq.conn.createChannel();
      ch.on('error', () => {});
      try {
        await ch.deleteQueue(q);
        await ch.assertQueue(q, { durable: true, arguments: { 'x-max-length': 0 } });
        await ch.bindQueue(q, 'fleet.msg', bobGid);
        squatted = true;
        await ch.close();
      } catch {
        await sleep(50);
      }
    }
    assert.ok(squatted, 'the attacker got its queue declared');
    // hostB notices: degraded, naming bob's inbox, counted, logged.
    await waitFor(async () => (await status(hostB)).broker?.state === 'degraded', { timeout: 15000, what: 'hostB status to read degraded' });
    const st = await status(hostB);
    assert.equal(st.broker.consumers.failing[0]?.gid, bobGid, JSON.stringify(st.broker));
    assert.match(st.broker.why, /bob/);
    await waitCounter(hostB, 'inbox_foreign', 1);
    assert.match(hostB.fleetdLog, /did not declare/);
    // alice's host hears it from bob's beat; then a send fails, never "sent".
    await waitEntity(alice, 'bob', 'hostB', (e) => e.inbox === 'degraded', { timeout: 15000 });
    for (let i = 0; i < 3; i++) {
      const r = await trySend(alice, 'bob', `into the squatted queue ${i}`);
      assert.notEqual(r.status, 'sent', `a send to a squatted inbox answered sent: ${r.text}`);
      assert.equal(r.ok, false, r.text);
      assert.match(r.text, /not consumed/);
    }
    assert.ok((await counters(hostA)).remote_refused_degraded >= 3);
    // The squatter's queue goes; hostB declares its own again and it flows.
    const ch = await mq.conn.createChannel();
    await ch.deleteQueue(q);
    await ch.close();
    await waitFor(async () => (await status(hostB)).broker?.state === 'up', { timeout: 20000, what: 'hostB to consume bob inbox again' });
    await waitEntity(alice, 'bob', 'hostB', (e) => e.inbox === undefined, { timeout: 15000 });
    const sent = await trySend(alice, 'bob', 'after the squat');
    assert.equal(sent.status, 'sent', sent.text);
    assert.deepEqual(await pollAll(bob, 1, { timeout: 20000 }), ['after the squat']);
  } finally {
    await mq.conn.close().catch(() => {});
  }
});

// ---- a full temp dir on the receiving host ---------------------------------------

// The store keeps nothing in the temp dir. With SQLite's default, a
// savepoint or statement that changed more than a few pages spilled its
// sub-journal to a file there, so a full /var/tmp (or $TMPDIR) stopped every
// cross-host message at a host whose own state dir had room, and the log
// blamed the state dir. Here hostB's TMPDIR and SQLITE_TMPDIR are a full
// tmpfs.
hostsTest('a full temp dir on the receiving host stops nothing: a stream of messages arrives, each once', brokerRef, { start: false, timeout: 120000 }, async ({ hostA, hostB }, t) => {
  const tmp = path.join(hostB.dir, 'tmp');
  mkdirSync(tmp);
  const why = mountTmpfs(tmp, '1m');
  if (why) {
    if (CI) assert.fail(`a full-temp-dir test needs a small tmpfs: ${why}`);
    t.skip(`needs root and mount for a tmpfs (${why}); runs under CI=true`);
    return;
  }
  try {
    t.diagnostic(`filler: ${fill(path.join(tmp, 'filler'))} bytes`);
    await Promise.all([hostA.startFleetd(), hostB.startFleetd({ env: { TMPDIR: tmp, SQLITE_TMPDIR: tmp } })]);
    await pinAll([hostA, hostB]);
    const { alice, bob } = await setUp(hostA, hostB);
    const c0 = await counters(hostB);
    // A stream of messages, more than the seen journal holds, taken by polls
    // as they arrive, as in any busy inbox.
    const N = 600;
    const pad = 't'.repeat(512);
    const sent = Array.from({ length: N }, (_, i) => `tmp-${String(i).padStart(3, '0')}`);
    const polled = pollAll(bob, N, { timeout: 20000 }).catch((e) => e);
    for (let i = 0; i < N; i += 50) {
      await Promise.all(
        sent.slice(i, i + 50).map(async (tag) => {
          const r = await trySend(alice, 'bob', `${tag} ${pad}`);
          assert.equal(r.status, 'sent', r.text.slice(0, 300));
        }),
      );
    }
    const got = await polled;
    if (got instanceof Error) throw got;
    const storeLog = hostB.fleetdLog.split('\n').filter((l) => /store/.test(l)).slice(0, 3).join('\n');
    assert.deepEqual(got.map((c) => c.split(' ')[0]).sort(), [...sent].sort(), `every message arrives once; hostB's log:\n${storeLog}`);
    const c1 = await counters(hostB);
    assert.equal((c1.store_errors ?? 0) - (c0.store_errors ?? 0), 0, `no store error: ${JSON.stringify(c1)}`);
    assert.equal((c1.store_batch_failures ?? 0) - (c0.store_batch_failures ?? 0), 0, 'no burst failed');
  } finally {
    await hostB.stopFleetd().catch(() => {});
    unmountTmpfs(tmp);
  }
});

// ---- disk full on the receiving host --------------------------------------------

hostsTest('disk full on the receiving host: a burst is requeued, then arrives once, in order, without a restart', brokerRef, { start: false, timeout: 180000 }, async ({ hostA, hostB }, t) => {
  const mnt = path.join(hostB.dir, 'disk');
  mkdirSync(mnt);
  const why = mountTmpfs(mnt, '4m');
  if (why) {
    if (CI) assert.fail(`a disk-full test needs a small tmpfs: ${why}`);
    t.skip(`needs root and mount for a tmpfs (${why}); runs under CI=true`);
    return;
  }
  try {
    hostB.stateDir = path.join(mnt, 'state');
    await Promise.all([hostA.startFleetd(), hostB.startFleetd()]);
    await pinAll([hostA, hostB]);
    const { alice, bob } = await setUp(hostA, hostB);
    const pad = 'd'.repeat(32 * 1024);
    const c0 = await counters(hostB);

    const filler = path.join(mnt, 'filler');
    t.diagnostic(`filler: ${fill(filler)} bytes`);
    const N = 12;
    const sent = [];
    for (let i = 0; i < N; i++) {
      const r = await trySend(alice, 'bob', `burst-${String(i).padStart(2, '0')} ${pad}`);
      assert.equal(r.status, 'sent', r.text.slice(0, 300)); // the broker has it
      sent.push(`burst-${String(i).padStart(2, '0')}`);
    }
    // hostB cannot commit them.
    await waitCounter(hostB, 'store_errors', (c0.store_errors ?? 0) + 1, { timeout: 20000 });
    assert.ok(hostB.fleetdAlive(), 'hostB keeps running on a full disk');

    rmSync(filler);
    const got = (await pollAll(bob, N, { timeout: 90000 })).map((c) => c.split(' ')[0]);
    assert.deepEqual(got, sent, 'every message once, in order, without a restart');
    assert.deepEqual((await callTool(bob, 'fleet_poll', { wait_s: 2 })).messages, [], 'and nothing twice');
    // The counters and the log say what happened.
    const c1 = await counters(hostB);
    assert.ok(c1.store_batch_failures > (c0.store_batch_failures ?? 0), `store_batch_failures: ${JSON.stringify(c1)}`);
    assert.ok(c1.deliveries_requeued > (c0.deliveries_requeued ?? 0), `deliveries_requeued: ${JSON.stringify(c1)}`);
    assert.equal(c1.messages_accepted - c0.messages_accepted, N, 'each accepted once, when it was stored');
    assert.match(hostB.fleetdLog, /[1-9]\d* deliveries requeued: disk full/);
    assert.doesNotMatch(hostB.fleetdLog, /a burst of 0 /);
    t.diagnostic(`store_batch_failures ${c1.store_batch_failures}, deliveries_requeued ${c1.deliveries_requeued}`);
  } finally {
    await hostB.stopFleetd().catch(() => {});
    unmountTmpfs(mnt);
  }
});
