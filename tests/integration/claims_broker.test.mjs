// claims_broker.test.mjs — work claims over the broker, without rooms. Two
// gateways on a private RabbitMQ (the fleet.claims exchange, one claims.<host>
// queue each): alice@hostA and bob@hostB claim the same resource at the same
// moment, and both gateways name the same owner, the one the tie rule picks.
// The loser reads held_by_other, and the owner's release frees it on both.
// The room tools stay degraded: the broker carries claims only. With rooms
// too, one claim goes out on both transports and is kept once (by msgId).

import assert from 'node:assert/strict';
import { callTool, selfGid, waitFor } from './harness.mjs';
import { useBroker, hostsTest } from './broker-harness.mjs';

const brokerRef = useBroker();

async function ownerOn(client, resource) {
  const l = await callTool(client, 'fleet_claims', { resource });
  return l.claims[0]?.owner ?? null;
}

hostsTest('claims over the broker: a race gives the same owner on both gateways', brokerRef, async ({ hostA, hostB, broker }) => {
  const alice = await hostA.mcpClient('alice');
  const bob = await hostB.mcpClient('bob');
  const gid = {
    alice: selfGid(await callTool(alice, 'fleet_list', {})),
    bob: selfGid(await callTool(bob, 'fleet_list', {})),
  };
  // The room tools stay degraded: only claims use the broker.
  assert.equal((await callTool(alice, 'fleet_room_register', { label: '#x' })).degraded, true);

  const [ca, cb] = await Promise.all([
    callTool(alice, 'fleet_claim', { resource: 'deploy-api', ttl_s: 60 }),
    callTool(bob, 'fleet_claim', { resource: 'deploy-api', ttl_s: 60 }),
  ]);
  for (const c of [ca, cb]) assert.ok(c.status === 'tentative' || c.status === 'held_by_other', JSON.stringify(c));
  const both = await waitFor(
    async () => {
      const oa = await ownerOn(alice, 'deploy-api');
      const ob = await ownerOn(bob, 'deploy-api');
      const la = await callTool(alice, 'fleet_claims', {});
      return oa && ob && oa.gid === ob.gid && la.claims.length === 1 ? { oa, ob } : null;
    },
    { what: 'both gateways agree on an owner', interval: 100 }
  );
  // The winner by the rules: the claims' own times decide, then the gid.
  const ta = Date.parse(ca.since ?? '9999'), tb = Date.parse(cb.since ?? '9999');
  // A side that already saw the other's claim answered held_by_other (and
  // published nothing): the other won. Else both published, and the times decide.
  let winner;
  if (ca.status === 'held_by_other') winner = 'bob';
  else if (cb.status === 'held_by_other') winner = 'alice';
  else winner = ta < tb ? 'alice' : tb < ta ? 'bob' : gid.alice < gid.bob ? 'alice' : 'bob';
  assert.equal(both.oa.gid, gid[winner], `owner ${JSON.stringify(both.oa)}; claims ${JSON.stringify({ ca, cb })}`);

  // Past the settle window (500 ms on the broker): owned and held_by_other.
  const client = { alice, bob };
  const loser = winner === 'alice' ? 'bob' : 'alice';
  const w = await callTool(client[winner], 'fleet_claim', { resource: 'deploy-api', ttl_s: 60, wait_s: 3 });
  assert.equal(w.status, 'owned');
  const l = await callTool(client[loser], 'fleet_claim', { resource: 'deploy-api', ttl_s: 60 });
  assert.equal(l.status, 'held_by_other');

  // The release reaches the other gateway; the loser's next claim wins on both.
  await callTool(client[winner], 'fleet_release', { resource: 'deploy-api' });
  await waitFor(async () => (await ownerOn(client[loser], 'deploy-api')) === null, { what: 'release seen', interval: 100 });
  const again = await callTool(client[loser], 'fleet_claim', { resource: 'deploy-api', ttl_s: 60, wait_s: 3 });
  assert.equal(again.status, 'owned');
  await waitFor(async () => (await ownerOn(client[winner], 'deploy-api'))?.gid === gid[loser], { what: 'new owner seen', interval: 100 });

  // The exchange and one claims queue per host exist on the broker.
  const exchanges = await broker.listExchanges();
  const ex = exchanges.find((e) => e.name === 'fleet.claims');
  assert.ok(ex && ex.type === 'fanout', JSON.stringify(exchanges.map((e) => e.name)));
  const queues = (await broker.listQueues()).map((q) => q.name);
  assert.ok(queues.includes('claims.hostA') && queues.includes('claims.hostB'), JSON.stringify(queues));
});

hostsTest('claims over the broker and rooms at once: one claim on both, kept once', brokerRef, { start: false }, async ({ hostA, hostB }) => {
  const rooms = { rooms: { listen: '127.0.0.1:0', syncIntervalS: 3600 } };
  await Promise.all([hostA.startFleetd({ config: rooms }), hostB.startFleetd({ config: rooms })]);
  const url = {};
  for (const h of [hostA, hostB]) {
    const r = await h.fleetctl(['--json', 'rooms']);
    url[h.hostId] = `http://${JSON.parse(r.stdout).listen}`;
  }
  for (const [on, other] of [[hostA, hostB], [hostB, hostA]]) {
    const id = JSON.parse((await other.fleetctl(['--json', 'identity'])).stdout).publicKey;
    const r = await on.fleetctl(['peer', 'add', other.hostId, id, url[other.hostId]]);
    assert.equal(r.code, 0, r.stderr);
  }
  const alice = await hostA.mcpClient('alice');
  const bob = await hostB.mcpClient('bob');
  const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
  await callTool(alice, 'fleet_claim', { resource: 'db-migration', ttl_s: 60 });
  // The broker brings it to hostB at once, with no sync.
  await waitFor(async () => (await ownerOn(bob, 'db-migration'))?.gid === aliceGid, { what: 'claim over the broker', interval: 100 });
  // The room brings the same claim (same msgId): dropped as a duplicate, nothing merged.
  const s = await callTool(bob, 'fleet_room_sync', { room: '#claims' });
  assert.equal(s.results.length, 1, JSON.stringify(s));
  assert.equal(s.results[0].ok, true);
  assert.equal(s.results[0].merged, 0, JSON.stringify(s.results[0]));
  assert.equal(s.results[0].dropped.duplicate, 1, JSON.stringify(s.results[0]));
  const w = await callTool(bob, 'fleet_room_watch', { room: '#claims' });
  assert.equal(w.messages.length, 1, 'the claims room holds the claim once');
  assert.equal(w.messages[0].msgType, 'ClaimIssued');
  assert.equal(w.messages[0].origin, 'hostA');
});
