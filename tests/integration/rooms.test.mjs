// rooms.test.mjs — broker-less federation. Three fleetd (hostA, hostB,
// hostC), no broker, each serving its rooms on its own loopback port, pinned
// to each other with URLs. The same label gives the same roomId everywhere; a
// message published on hostA reaches hostB and hostC through sync, attributed
// to hostA, with hops set; a message hostB merged is served on by hostB with
// one hop more. A hostile HTTP server started here serves every kind of bad
// envelope: each is dropped under its own reason and none reaches watch; a
// server that presents another key for a pinned host is refused whole. A
// room's cap drops its oldest messages. An https:// peer is spoken TLS to and
// its certificate verified (one the system does not trust is refused). With
// rooms unset, every room tool answers {degraded: true} and messaging works.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { callTool, fleetctlJson, fleetTest } from './harness.mjs';
import { freshKey, rfc3339, signEnvelope, uuid } from './trust-helpers.mjs';

/** Starts fleetd for host id with rooms served on an ephemeral loopback port. */
async function startHost(fleet, hostId, extra = {}) {
  fleet.hostId = hostId;
  await fleet.startFleetd({
    config: { rooms: { listen: '127.0.0.1:0', syncIntervalS: 3600, ...extra } },
    args: ['--host-id', hostId],
  });
  const rooms = await fleetctlJson(fleet, ['rooms']);
  assert.match(rooms.listen, /^127\.0\.0\.1:\d+$/, `rooms listen: ${JSON.stringify(rooms)}`);
  assert.notEqual(rooms.listen, '127.0.0.1:0');
  fleet.url = `http://${rooms.listen}`;
  return fleet;
}

async function pin(on, other, url = other.url, key = null) {
  const id = key ?? (await fleetctlJson(other, ['identity'])).publicKey;
  const r = await on.fleetctl(['peer', 'add', other.hostId ?? other, id, url]);
  assert.equal(r.code, 0, `peer add on ${on.hostId}: ${r.stdout}${r.stderr}`);
}

/** A room message as a peer serves it, signed with privateKey. */
function roomItem({ host, roomId, msgType = 'note', payload = { n: 1 }, privateKey, hops = 0, over = {}, sign = true }) {
  const env = { v: '1.0', kind: 'ROOM', msgId: uuid(), traceId: uuid(), host, ts: rfc3339(Date.now()), ...over };
  const body = JSON.stringify({ room: roomId, msgType, payload });
  const item = { ...env, body, hops };
  if (sign) item.sig = signEnvelope(env, body, privateKey);
  return item;
}

/** An HTTP server that answers every room GET with page(roomId). */
async function hostileServer(page) {
  const srv = http.createServer((req, res) => {
    const m = /^\/v1\/rooms\/([0-9a-f]{64})/.exec(req.url);
    if (!m) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(page(m[1])));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { srv, url: `http://127.0.0.1:${srv.address().port}` };
}

fleetTest('rooms: same roomId on three hosts; a message from A reaches B and C by sync, attributed, with hops', async (A) => {
  const { Fleet } = await import('./harness.mjs');
  const B = new Fleet('roomsB'), C = new Fleet('roomsC');
  try {
    await startHost(A, 'hostA');
    await startHost(B, 'hostB');
    await startHost(C, 'hostC');
    // A mesh: A <-> B, B <-> C (C reaches A's message through B), and C pins A too.
    await pin(A, B);
    await pin(B, A);
    await pin(B, C);
    await pin(C, B);
    await pin(C, A, ''); // pinned without a URL: trusted as an origin, not pulled
    const alice = await A.mcpClient('alice');
    const bob = await B.mcpClient('bob');
    const carol = await C.mcpClient('carol');
    const ra = await callTool(alice, 'fleet_room_register', { label: '#coordination' });
    const rb = await callTool(bob, 'fleet_room_register', { label: '#coordination' });
    const rc = await callTool(carol, 'fleet_room_register', { label: '#coordination' });
    assert.match(ra.roomId, /^[0-9a-f]{64}$/);
    assert.equal(rb.roomId, ra.roomId);
    assert.equal(rc.roomId, ra.roomId);
    const other = await callTool(alice, 'fleet_room_register', { label: '#other' });
    assert.notEqual(other.roomId, ra.roomId);

    const pub = await callTool(alice, 'fleet_room_publish', { room: '#coordination', msgType: 'status', payload: { text: 'deploy at 5' } });
    assert.equal(pub.roomId, ra.roomId);

    // Before a sync, B has nothing.
    assert.equal((await callTool(bob, 'fleet_room_watch', { room: ra.roomId })).messages.length, 0);
    const sb = await callTool(bob, 'fleet_room_sync', { room: '#coordination' });
    const fromA = sb.results.find((r) => r.peer === 'hostA');
    assert.ok(fromA && fromA.ok && fromA.merged === 1, `B's sync from A: ${JSON.stringify(sb)}`);
    const wb = await callTool(bob, 'fleet_room_watch', { room: '#coordination' });
    assert.equal(wb.messages.length, 1);
    const mb = wb.messages[0];
    assert.equal(mb.msgId, pub.msgId);
    assert.equal(mb.origin, 'hostA');
    assert.equal(mb.from.name, 'alice');
    assert.equal(mb.msgType, 'status');
    assert.deepEqual(mb.payload, { text: 'deploy at 5' });
    assert.equal(mb.hops, 1);

    // C pulls from B only; the message is A's, one hop further.
    const sc = await callTool(carol, 'fleet_room_sync', {});
    assert.ok(sc.results.every((r) => r.peer === 'hostB'), JSON.stringify(sc));
    const wc = await callTool(carol, 'fleet_room_watch', { room: '#coordination' });
    assert.equal(wc.messages.length, 1);
    assert.equal(wc.messages[0].msgId, pub.msgId);
    assert.equal(wc.messages[0].origin, 'hostA');
    assert.equal(wc.messages[0].hops, 2);

    // A sync again brings nothing new (the cursor moved); A pulling B's copy of its own message is a duplicate.
    const again = await callTool(bob, 'fleet_room_sync', { room: '#coordination' });
    assert.equal(again.results.find((r) => r.peer === 'hostA').merged, 0);
    const back = await callTool(alice, 'fleet_room_sync', { room: '#coordination' });
    const fromB = back.results.find((r) => r.peer === 'hostB');
    assert.equal(fromB.merged, 0);
    assert.equal(fromB.dropped.duplicate, 1);
    assert.equal((await callTool(alice, 'fleet_room_watch', { room: '#coordination' })).messages.length, 1);

    // A watch that waits is answered by the next merge.
    const cursor = wb.cursor;
    const waiting = callTool(bob, 'fleet_room_watch', { room: '#coordination', after: cursor, wait_s: 20 });
    const pub2 = await callTool(alice, 'fleet_room_publish', { room: ra.roomId, msgType: 'note', payload: { n: 2 } });
    await callTool(bob, 'fleet_room_sync', {});
    const woke = await waiting;
    assert.equal(woke.messages.length, 1);
    assert.equal(woke.messages[0].msgId, pub2.msgId);
    assert.ok(woke.cursor > cursor);

    // fleetctl rooms and peer list show the room, the cursors and sync health.
    const rooms = await fleetctlJson(B, ['rooms']);
    const room = rooms.rooms.find((r) => r.roomId === ra.roomId);
    assert.equal(room.label, '#coordination');
    assert.equal(room.messages, 2);
    assert.ok(room.cursors.find((c) => c.peer === 'hostA' && c.cursor > 0), JSON.stringify(room));
    const human = await B.fleetctl(['rooms']);
    assert.match(human.stdout, /#coordination\s+[0-9a-f]{64}\s+2 messages/);
    assert.match(human.stdout, /peer hostA at cursor \d+/);
    const plist = await B.fleetctl(['peer', 'list']);
    assert.match(plist.stdout, /sync: ok/);
    const peers = await fleetctlJson(B, ['peer', 'list']);
    const pa = peers.peers.find((p) => p.host === 'hostA');
    assert.equal(pa.sync.ok, true);
    assert.equal(pa.sync.merged, 2);
    assert.ok(pa.sync.lastSync);

    // What A serves, as any HTTP client sees it: bounded, registered rooms only, GET only.
    const page = await (await fetch(`${A.url}/v1/rooms/${ra.roomId}?after=0&limit=1`)).json();
    assert.equal(page.host, 'hostA');
    assert.equal(page.publicKey, (await fleetctlJson(A, ['identity'])).publicKey);
    assert.equal(page.messages.length, 1);
    assert.equal(page.more, true);
    assert.equal(page.messages[0].hops, 0);
    assert.equal((await fetch(`${A.url}/v1/rooms/${ra.roomId}?limit=501`)).status, 400);
    assert.equal((await fetch(`${A.url}/v1/rooms/${'0'.repeat(64)}`)).status, 404);
    assert.equal((await fetch(`${A.url}/v1/rooms/${ra.roomId}`, { method: 'POST', body: '{}' })).status, 405);
    assert.equal((await fetch(`${A.url}/elsewhere`)).status, 404);

    // Rooms survive a restart of B.
    await B.stopFleetd();
    await startHost(B, 'hostB');
    const bob2 = await B.mcpClient('bob2');
    assert.equal((await callTool(bob2, 'fleet_room_watch', { room: ra.roomId })).messages.length, 2);
  } finally {
    await B.cleanup();
    await C.cleanup();
  }
});

fleetTest('rooms: a hostile peer\'s bad envelopes are each dropped under their reason; another key for a pinned host is refused', async (A) => {
  await startHost(A, 'hostA');
  const alice = await A.mcpClient('alice');
  const { roomId } = await callTool(alice, 'fleet_room_register', { label: '#coordination' });
  const H = freshKey(); // the hostile server's own key, pinned for hostH
  const Z = freshKey(); // a key pinned for nobody
  const good = roomItem({ host: 'hostH', roomId, privateKey: H.privateKey, payload: { good: true } });
  const bad = {
    unsigned: roomItem({ host: 'hostH', roomId, sign: false }),
    unpinned: roomItem({ host: 'hostZ', roomId, privateKey: Z.privateKey }),
    wrong_key: roomItem({ host: 'hostH', roomId, privateKey: Z.privateKey }),
    // Says it comes from hostA (this host) but hostH's key signed it.
    misattributed: roomItem({ host: 'hostA', roomId, privateKey: H.privateKey }),
    oversize: roomItem({ host: 'hostH', roomId, privateKey: H.privateKey, payload: { big: 'x'.repeat(70 * 1024) } }),
    hop_limit: roomItem({ host: 'hostH', roomId, privateKey: H.privateKey, hops: 4 }),
    malformed: roomItem({ host: 'hostH', roomId, privateKey: H.privateKey, over: { msgId: 'not-a-uuid' } }),
    bad_ts: roomItem({ host: 'hostH', roomId, privateKey: H.privateKey, over: { ts: '2026-12-02T01:00:00+00:00' } }),
  };
  let presentKey = H.publicKey;
  const { srv, url } = await hostileServer((rid) => ({
    host: 'hostH',
    publicKey: presentKey,
    roomId: rid,
    messages: [good, ...Object.values(bad), good, 'not an object'],
    cursor: 7,
    more: false,
  }));
  try {
    await pin(A, 'hostH', url, H.publicKey);
    const s = await callTool(alice, 'fleet_room_sync', { room: roomId });
    assert.equal(s.results.length, 1, JSON.stringify(s));
    const r = s.results[0];
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(r.merged, 1);
    for (const reason of Object.keys(bad)) {
      if (reason === 'malformed') continue;
      assert.equal(r.dropped[reason], 1, `dropped as ${reason}: ${JSON.stringify(r.dropped)}`);
    }
    assert.equal(r.dropped.malformed, 2, JSON.stringify(r.dropped)); // the bad msgId and the string
    assert.equal(r.dropped.duplicate, 1);
    const w = await callTool(alice, 'fleet_room_watch', { room: roomId });
    assert.deepEqual(w.messages.map((m) => m.msgId), [good.msgId], 'only the good message is in the room');
    assert.equal(w.messages[0].origin, 'hostH');
    const peers = await callTool(alice, 'fleet_peers', {});
    const ph = peers.peers.find((p) => p.host === 'hostH');
    assert.equal(ph.url, url);
    assert.equal(ph.dropped.unsigned, 1);
    assert.equal(ph.dropped.misattributed, 1);
    const st = await fleetctlJson(A, ['status']);
    assert.equal(st.counters.room_dropped, 10); // the eight kinds, the duplicate, the string
    assert.equal(st.counters.room_merged, 1);

    // The same server now presents another key for hostH: the whole pull is refused and logged.
    presentKey = Z.publicKey;
    const s2 = await callTool(alice, 'fleet_room_sync', { room: roomId });
    assert.equal(s2.results[0].ok, false);
    assert.match(s2.results[0].error, /not the key pinned for 'hostH'/);
    const p2 = (await callTool(alice, 'fleet_peers', {})).peers.find((p) => p.host === 'hostH');
    assert.equal(p2.refused, 1);
    assert.match(A.fleetdLog, /presents host 'hostH' with key .* not the key pinned/);
    assert.equal((await fleetctlJson(A, ['status'])).counters.room_pulls_refused, 1);
    assert.equal((await callTool(alice, 'fleet_room_watch', { room: roomId })).messages.length, 1);

    // A response over 4 MiB is cut off, whatever it holds.
    presentKey = H.publicKey;
    const pad = 'x'.repeat(1024 * 1024);
    bad.padding = { host: 'hostH', body: pad + pad + pad + pad, hops: 0 };
    const s3 = await callTool(alice, 'fleet_room_sync', { room: roomId });
    assert.equal(s3.results[0].ok, false);
    assert.match(s3.results[0].error, /over 4194304 bytes/, JSON.stringify(s3.results[0]));
  } finally {
    srv.close();
  }
});

fleetTest('rooms: with rooms unset every room tool is degraded and messaging works as before', async (fleet) => {
  await fleet.startFleetd({ args: ['--host-id', 'hostA'] });
  const alice = await fleet.mcpClient('alice');
  const bob = await fleet.mcpClient('bob');
  for (const [tool, args] of [
    ['fleet_room_register', { label: '#coordination' }],
    ['fleet_room_publish', { room: '#coordination', msgType: 'note', payload: {} }],
    ['fleet_room_watch', { room: '#coordination' }],
    ['fleet_room_sync', {}],
    ['fleet_peers', {}],
  ]) {
    const r = await callTool(alice, tool, args);
    assert.equal(r.degraded, true, `${tool}: ${JSON.stringify(r)}`);
  }
  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'hello' });
  assert.equal(sent.status, 'sent');
  const got = await callTool(bob, 'fleet_poll', {});
  assert.equal(got.messages[0].content, 'hello');
  const r = await fleet.fleetctl(['rooms']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /rooms are not configured/);
});

fleetTest('rooms: a room keeps at most rooms.maxMessages, dropping and counting the oldest', async (A) => {
  await startHost(A, 'hostA', { maxMessages: 3 });
  const alice = await A.mcpClient('alice');
  const { roomId } = await callTool(alice, 'fleet_room_register', { label: '#small' });
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await callTool(alice, 'fleet_room_publish', { room: '#small', msgType: 'n', payload: { i } })).msgId);
  const w = await callTool(alice, 'fleet_room_watch', { room: roomId });
  assert.deepEqual(w.messages.map((m) => m.msgId), ids.slice(2), 'the newest three remain, oldest first');
  assert.deepEqual(w.messages.map((m) => m.payload.i), [2, 3, 4]);
  const rooms = await fleetctlJson(A, ['rooms']);
  const room = rooms.rooms.find((r) => r.roomId === roomId);
  assert.equal(room.messages, 3);
  assert.equal(room.dropped, 2);
  assert.equal((await fleetctlJson(A, ['status'])).counters.room_capped, 2);
});

fleetTest('rooms: an https:// peer is pulled over TLS, and a certificate this host does not trust is refused', async (A) => {
  await startHost(A, 'hostA');
  const alice = await A.mcpClient('alice');
  const { roomId } = await callTool(alice, 'fleet_room_register', { label: '#tls' });
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1'], { cwd: A.dir, encoding: 'utf8' });
  assert.equal(r.status, 0, `openssl: ${r.stderr}`);
  const H = freshKey();
  let served = 0;
  const srv = https.createServer(
    { key: readFileSync(path.join(A.dir, 'key.pem')), cert: readFileSync(path.join(A.dir, 'cert.pem')) },
    (req, res) => {
      served++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ host: 'hostH', publicKey: H.publicKey, roomId, messages: [roomItem({ host: 'hostH', roomId, privateKey: H.privateKey })], cursor: 1 }));
    }
  );
  let handshakes = 0;
  srv.on('tlsClientError', () => handshakes++);
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  try {
    await pin(A, 'hostH', `https://127.0.0.1:${srv.address().port}`, H.publicKey);
    const s = await callTool(alice, 'fleet_room_sync', { room: roomId });
    assert.equal(s.results[0].ok, false);
    assert.match(s.results[0].error, /SSL|certificate/i, JSON.stringify(s.results[0]));
    assert.ok(handshakes >= 1, 'fleetd spoke TLS to the peer');
    assert.equal(served, 0, 'nothing was requested over an untrusted connection');
    assert.equal((await callTool(alice, 'fleet_room_watch', { room: roomId })).messages.length, 0);
  } finally {
    srv.close();
  }
});
