// claims.test.mjs — work claims over rooms, with no broker. Two fleetd
// (hostA, hostB) serve their rooms on loopback ports and pin each other.
// alice@hostA and bob@hostB claim the same resource at the same moment
// (within a few ms); after a sync both gateways name the same owner, the one
// the tie rule picks (earliest ts, then smallest gid), and the other agent
// reads held_by_other. A handoff or release from the non-owner is refused;
// the owner's release frees the resource and the other agent's claim then
// wins on both hosts; an expired TTL frees a resource.

import assert from 'node:assert/strict';
import { callTool, callToolRaw, Fleet, fleetctlJson, fleetTest, resultText, selfGid, sleep } from './harness.mjs';

const SETTLE_MS = 300;

async function startHost(fleet, hostId) {
  fleet.hostId = hostId;
  await fleet.startFleetd({
    config: { rooms: { listen: '127.0.0.1:0', syncIntervalS: 3600 }, claims: { settleMs: SETTLE_MS } },
    args: ['--host-id', hostId],
  });
  fleet.url = `http://${(await fleetctlJson(fleet, ['rooms'])).listen}`;
}

async function pinBoth(a, b) {
  for (const [on, other] of [[a, b], [b, a]]) {
    const id = await fleetctlJson(other, ['identity']);
    const r = await on.fleetctl(['peer', 'add', other.hostId, id.publicKey, other.url]);
    assert.equal(r.code, 0, r.stderr);
  }
}

/** Both sides pull #claims from each other. */
async function syncBoth(x, y) {
  for (const c of [x, y]) {
    const s = await callTool(c, 'fleet_room_sync', { room: '#claims' });
    assert.ok(s.results.length === 1 && s.results[0].ok, JSON.stringify(s));
  }
}

async function ownerOn(client, resource) {
  const l = await callTool(client, 'fleet_claims', { resource });
  assert.ok(l.claims.length <= 1, JSON.stringify(l));
  return l.claims[0]?.owner ?? null;
}

fleetTest('claims over rooms: a race settles on the same owner on both hosts; release, handoff and TTL', async (A) => {
  const B = new Fleet('claimsB');
  try {
    await startHost(A, 'hostA');
    await startHost(B, 'hostB');
    await pinBoth(A, B);
    const alice = await A.mcpClient('alice');
    const bob = await B.mcpClient('bob');
    const gid = {
      alice: selfGid(await callTool(alice, 'fleet_list', {})),
      bob: selfGid(await callTool(bob, 'fleet_list', {})),
    };

    // The race: both claim at once; each sees only its own claim so far.
    const [ca, cb] = await Promise.all([
      callTool(alice, 'fleet_claim', { resource: 'deploy-api', ttl_s: 60 }),
      callTool(bob, 'fleet_claim', { resource: 'deploy-api', ttl_s: 60 }),
    ]);
    assert.equal(ca.status, 'tentative');
    assert.equal(cb.status, 'tentative');
    assert.ok(Math.abs(Date.parse(ca.since) - Date.parse(cb.since)) < 50, `claims close together: ${ca.since} ${cb.since}`);
    const ta = Date.parse(ca.since), tb = Date.parse(cb.since);
    const winner = ta < tb ? 'alice' : tb < ta ? 'bob' : gid.alice < gid.bob ? 'alice' : 'bob';
    const loser = winner === 'alice' ? 'bob' : 'alice';
    const client = { alice, bob };

    await syncBoth(alice, bob);
    const oa = await ownerOn(alice, 'deploy-api');
    const ob = await ownerOn(bob, 'deploy-api');
    assert.deepEqual(oa, ob, 'both hosts compute the same owner');
    assert.equal(oa.gid, gid[winner], `the tie rule picks ${winner}: ${JSON.stringify({ ca, cb, oa })}`);
    assert.equal(oa.host, winner === 'alice' ? 'hostA' : 'hostB');

    // Past the settle window, with wait_s the winner reads owned; the loser held_by_other.
    await sleep(SETTLE_MS);
    const w = await callTool(client[winner], 'fleet_claim', { resource: 'deploy-api', ttl_s: 60, wait_s: 2 });
    assert.equal(w.status, 'owned');
    const l = await callTool(client[loser], 'fleet_claim', { resource: 'deploy-api', ttl_s: 60 });
    assert.equal(l.status, 'held_by_other');
    assert.equal(l.owner.gid, gid[winner]);
    assert.ok(Date.parse(l.expiresAt) > Date.now());

    // The non-owner may neither hand off nor release.
    for (const [tool, args] of [
      ['fleet_handoff', { resource: 'deploy-api', to: loser }],
      ['fleet_release', { resource: 'deploy-api' }],
    ]) {
      const r = await callToolRaw(client[loser], tool, args);
      assert.equal(r.isError, true, `${tool} by the non-owner is refused`);
      assert.match(resultText(r), /held by .* not by you/);
    }

    // The owner releases; after a sync the loser's new claim wins on both hosts.
    await callTool(client[winner], 'fleet_release', { resource: 'deploy-api' });
    await syncBoth(alice, bob);
    assert.equal(await ownerOn(alice, 'deploy-api'), null);
    assert.equal(await ownerOn(bob, 'deploy-api'), null);
    const again = await callTool(client[loser], 'fleet_claim', { resource: 'deploy-api', ttl_s: 60, wait_s: 2 });
    assert.equal(again.status, 'owned');
    await syncBoth(alice, bob);
    assert.equal((await ownerOn(alice, 'deploy-api')).gid, gid[loser]);
    assert.equal((await ownerOn(bob, 'deploy-api')).gid, gid[loser]);

    // A TTL that runs out frees the resource.
    const s = await callTool(alice, 'fleet_claim', { resource: 'short', ttl_s: 1 });
    assert.equal(s.status, 'tentative');
    await syncBoth(alice, bob);
    assert.equal((await callTool(bob, 'fleet_claim', { resource: 'short', ttl_s: 60 })).status, 'held_by_other');
    await sleep(1100);
    assert.equal(await ownerOn(alice, 'short'), null);
    const took = await callTool(bob, 'fleet_claim', { resource: 'short', ttl_s: 60, wait_s: 2 });
    assert.equal(took.status, 'owned');
    await syncBoth(alice, bob);
    assert.equal((await ownerOn(alice, 'short')).gid, gid.bob);

    // A handoff from the owner moves it, on both hosts after a sync.
    const h = await callTool(bob, 'fleet_handoff', { resource: 'short', to: 'alice@hostA' });
    assert.equal(h.owner.name, 'alice');
    await syncBoth(alice, bob);
    assert.equal((await ownerOn(alice, 'short')).name, 'alice');
    assert.equal((await ownerOn(bob, 'short')).name, 'alice');
    // fleetctl claims shows the holder, for scripts and for people.
    const ctl = await fleetctlJson(B, ['claims']);
    const row = ctl.claims.find((c) => c.resource === 'short');
    assert.equal(row.owner.name, 'alice');
    const human = await B.fleetctl(['claims']);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /short\s+alice@hostA/);
    // The new owner, known to hostB by name@host only, may release it.
    await callTool(alice, 'fleet_release', { resource: 'short' });
    await syncBoth(alice, bob);
    assert.equal(await ownerOn(bob, 'short'), null);
  } finally {
    await B.cleanup();
  }
});
