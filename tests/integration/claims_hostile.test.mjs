// claims_hostile.test.mjs — a pinned peer that lies about time cannot take a
// settled claim. hostA (rooms on, settle window 300 ms) pins hostH, a
// hostile room server signing with its own pinned key (the key is real; the
// dates are not). alice@hostA claims deploy-api and it settles. hostH then
// serves, in #claims: a ClaimIssued by its agent mallory dated a minute
// before alice's claim (what a peer whose clock runs slow sends too), one
// dated an hour ahead, and a ClaimReleased naming alice's gid (a host
// speaking for another host's agent). alice stays the owner on hostA; the
// backdated and the future claims are dropped as claim_late and
// claim_future, counted per peer, in the totals and in the log. A claim
// backdated onto a free resource takes nothing from anyone and is merged.

import assert from 'node:assert/strict';
import http from 'node:http';
import { callTool, fleetTest, selfGid } from './harness.mjs';
import { freshKey, rfc3339, signEnvelope, uuid } from './trust-helpers.mjs';

const SETTLE_MS = 300;

async function ctlJson(fleet, args) {
  const r = await fleet.fleetctl(['--json', ...args]);
  assert.equal(r.code, 0, `fleetctl ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** A #claims item as hostH signs it: msgType, payload, from a gid, dated tsMs. */
function claimItem({ roomId, privateKey, msgType, payload, from, fromName, tsMs }) {
  const env = { v: '1.0', kind: 'ROOM', msgId: uuid(), traceId: uuid(), from, fromName, host: 'hostH', ts: rfc3339(tsMs) };
  const body = JSON.stringify({ room: roomId, msgType, payload });
  return { ...env, body, hops: 0, sig: signEnvelope(env, body, privateKey) };
}

fleetTest('claims: a pinned peer cannot take a settled claim with a backdated or future ts, nor release it by gid', async (A) => {
  A.hostId = 'hostA';
  await A.startFleetd({
    config: { rooms: { listen: '127.0.0.1:0', syncIntervalS: 3600 }, claims: { settleMs: SETTLE_MS } },
    args: ['--host-id', 'hostA'],
  });
  const alice = await A.mcpClient('alice');
  const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
  const { roomId } = (await ctlJson(A, ['rooms'])).rooms.find((r) => r.label === '#claims');
  const H = freshKey();
  const malloryGid = uuid();
  let page = [];
  const srv = http.createServer((req, res) => {
    const m = /^\/v1\/rooms\/([0-9a-f]{64})/.exec(req.url);
    if (!m) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ host: 'hostH', publicKey: H.publicKey, roomId: m[1], messages: page, cursor: page.length, more: false }));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  try {
    const pin = await A.fleetctl(['peer', 'add', 'hostH', H.publicKey, `http://127.0.0.1:${srv.address().port}`]);
    assert.equal(pin.code, 0, pin.stderr);

    const c = await callTool(alice, 'fleet_claim', { resource: 'deploy-api', ttl_s: 600, wait_s: 5 });
    assert.equal(c.status, 'owned', JSON.stringify(c));
    const since = Date.parse(c.since);

    const mallory = { from: malloryGid, fromName: 'mallory' };
    const claim = (resource, tsMs) => claimItem({ roomId, privateKey: H.privateKey, msgType: 'ClaimIssued', payload: { resource, ttl_s: 600 }, ...mallory, tsMs });
    const steal = claim('deploy-api', since - 60000);
    const future = claim('deploy-api', Date.now() + 3600000);
    const release = claimItem({ roomId, privateKey: H.privateKey, msgType: 'ClaimReleased', payload: { resource: 'deploy-api' }, from: aliceGid, fromName: 'alice', tsMs: Date.now() });
    const free = claim('free-thing', Date.now() - 60000);
    page = [steal, future, release, free];
    const s = await callTool(alice, 'fleet_room_sync', { room: '#claims' });
    const r = s.results.find((x) => x.peer === 'hostH');
    assert.ok(r && r.ok, JSON.stringify(s));
    assert.equal(r.dropped.claim_late, 1, JSON.stringify(r));
    assert.equal(r.dropped.claim_future, 1, JSON.stringify(r));
    assert.equal(r.merged, 2, JSON.stringify(r)); // the release (which changes nothing) and the free claim

    const l = await callTool(alice, 'fleet_claims', { resource: 'deploy-api' });
    assert.equal(l.claims.length, 1, JSON.stringify(l));
    assert.equal(l.claims[0].owner.gid, aliceGid, `the settled owner stays: ${JSON.stringify(l)}`);
    assert.equal(l.claims[0].owner.host, 'hostA');
    const again = await callTool(alice, 'fleet_claim', { resource: 'deploy-api', ttl_s: 600 });
    assert.equal(again.status, 'owned', JSON.stringify(again));
    const f = await callTool(alice, 'fleet_claims', { resource: 'free-thing' });
    assert.equal(f.claims[0]?.owner?.name, 'mallory', JSON.stringify(f));

    const ph = (await callTool(alice, 'fleet_peers', {})).peers.find((p) => p.host === 'hostH');
    assert.equal(ph.dropped.claim_late, 1, JSON.stringify(ph));
    assert.equal(ph.dropped.claim_future, 1, JSON.stringify(ph));
    assert.equal((await ctlJson(A, ['status'])).counters.room_dropped, 2);
    assert.match(A.fleetdLog, /refused a claim on 'deploy-api' from mallory@hostH .* behind this host's clock/);
    assert.match(A.fleetdLog, /dated in the future/);
  } finally {
    srv.close();
  }
});
