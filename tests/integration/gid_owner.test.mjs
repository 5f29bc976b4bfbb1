// gid_owner.test.mjs — a gid belongs for good to the host that first
// announced it. A rogue host (pinned, signing with its own key, played here
// over raw AMQP as a compromised gateway would act) announces another host's
// agent as its own: while the victim host is quiet past the presence TTL,
// after the observing host restarted (it loads remote entities already
// expired), and to the victim host itself once the agent has left. Every
// claim is refused and counted (presence_gid_refused), messages to the gid
// still reach the victim, and only the operator's `fleetctl gid release`
// lets the gid move.

import assert from 'node:assert/strict';
import { callTool, selfGid, waitFor } from './harness.mjs';
import { useBroker, hostsTest, waitStatus, FAST_PRESENCE_TTL_MS, sleep } from './broker-harness.mjs';
import { amqpClient, counters, freshKey, headersFor, presenceBeat, signEnvelope } from './trust-helpers.mjs';

const brokerRef = useBroker();

/** hostB's fleet_list entry for gid, or undefined. */
async function byGid(client, gid) {
  const l = await callTool(client, 'fleet_list', {});
  return (l.entities || l.agents || []).find((e) => e.gid === gid);
}

hostsTest('a pinned host cannot take over the gid of another host', brokerRef, async ({ hostA, hostB, broker }) => {
  const rogue = freshKey();
  for (const h of [hostA, hostB]) {
    const r = await h.fleetctl(['peer', 'add', 'hostR', rogue.publicKey]);
    assert.equal(r.code, 0, r.stderr);
  }
  const mq = await amqpClient(broker.uri);
  const claim = async (gid, name) => {
    const beat = presenceBeat({ gid, host: 'hostR', name, role: 'lead' });
    await mq.publish('fleet.roster', `roster.hostR.${gid}`, headersFor(beat.env, signEnvelope(beat.env, beat.body, rogue.privateKey)), beat.body);
  };
  // Claims until host has refused at least min (a beat sent before a
  // restarted host bound its roster queue is lost, so one may not be heard).
  // With a watcher (a client of host), also stops as soon as the claim was
  // taken, and says so.
  const claimRefused = async (host, gid, min, watcher) => {
    let moved;
    await waitFor(async () => {
      await claim(gid, 'alice');
      if (watcher && (moved = (await byGid(watcher, gid))?.host) === 'hostR') return true;
      return ((await counters(host)).presence_gid_refused ?? 0) >= min;
    }, { timeout: 15000, interval: 500, what: `[${host.hostId}] presence_gid_refused >= ${min}` });
    assert.notEqual(moved, 'hostR', `[${host.hostId}] took the rogue's claim on ${gid}`);
  };
  try {
    const alice = await hostA.mcpClient('alice');
    const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
    let bob = await hostB.mcpClient('bob');
    await waitStatus(bob, 'alice', 'hostA', 'online');

    // 1. The victim's host goes quiet past the TTL; the rogue claims the gid.
    await hostA.stopFleetd();
    await waitStatus(bob, 'alice', 'hostA', 'offline', { timeout: FAST_PRESENCE_TTL_MS + 15000 });
    await sleep(FAST_PRESENCE_TTL_MS);
    await claimRefused(hostB, aliceGid, 1, bob);
    assert.equal((await byGid(bob, aliceGid))?.host, 'hostA', 'the gid stays on hostA after a quiet spell');

    // 2. The observing host restarts (remote entities load expired); the
    //    rogue's beat comes before any of hostA's.
    await hostB.closeClient(bob);
    await hostB.stopFleetd();
    await hostB.startFleetd();
    bob = await hostB.mcpClient('bob');
    await claimRefused(hostB, aliceGid, 1, bob);
    assert.equal((await byGid(bob, aliceGid))?.host, 'hostA', 'the gid stays on hostA after a restart');

    // 3. The victim restarts; its agent comes back under the same gid, and
    //    messages to the gid still reach it, sealed to hostA.
    await hostA.startFleetd();
    await waitStatus(bob, 'alice', 'hostA', 'online', { timeout: 30000 });
    await claimRefused(hostA, aliceGid, 1);
    const sent = await callTool(bob, 'fleet_send', { to: aliceGid, content: 'still yours' });
    assert.equal(sent.status, 'sent', JSON.stringify(sent));
    const got = await callTool(alice, 'fleet_poll', { wait_s: 15 });
    assert.deepEqual(got.messages.map((m) => m.content), ['still yours'], JSON.stringify(got));
    assert.equal((await byGid(bob, aliceGid))?.host, 'hostA');

    // 4. The agent leaves hostA's roster: its gid is still hostA's, there too.
    await hostA.closeClient(alice);
    const before = (await counters(hostA)).presence_gid_refused ?? 0;
    await claimRefused(hostA, aliceGid, before + 1);
    const onA = await hostA.fleetctl(['--json', 'roster']);
    assert.ok(!onA.stdout.includes('hostR'), `hostA took the rogue's claim: ${onA.stdout}`);

    // 5. The operator of hostB releases the gid: the next host to announce it
    //    owns it (hostA still lists alice while it runs, so it is stopped:
    //    here the rogue is next), and the command says whose it was.
    await hostA.stopFleetd();
    const rel = await hostB.fleetctl(['gid', 'release', aliceGid]);
    assert.equal(rel.code, 0, rel.stdout + rel.stderr);
    assert.match(rel.stdout, /hostA/);
    await waitFor(async () => {
      await claim(aliceGid, 'alice');
      return (await byGid(bob, aliceGid))?.host === 'hostR';
    }, { timeout: 15000, interval: 500, what: 'the released gid moves to the next host that announces it' });
    const again = await hostB.fleetctl(['gid', 'release', 'not-a-gid']);
    assert.equal(again.code, 1, again.stdout + again.stderr);
  } finally {
    await mq.close();
  }
});
