// sdk_rooms.test.mjs — fleet_room_sync and fleet_peers through the official
// MCP SDK client, which (once it has listed the tools) checks every
// structuredContent against the tool's outputSchema and rejects the whole
// result when it does not match. The fields a result may lack (a peer's url,
// the last sync, an error) are left out, never null: two hosts with rooms, a
// peer pinned without a URL, one never synced, one that fails and one that
// succeeds. fleetd checks its own results too (FLEET_CHECK_RESULTS=1, set by
// the harness): results_off_schema stays 0.

import assert from 'node:assert/strict';
import net from 'node:net';
import { callTool, fleetctlJson, fleetTest } from './harness.mjs';
import { freshKey } from './trust-helpers.mjs';

async function startHost(fleet, hostId) {
  fleet.hostId = hostId;
  await fleet.startFleetd({
    config: { rooms: { listen: '127.0.0.1:0', syncIntervalS: 3600 } },
    args: ['--host-id', hostId],
  });
  fleet.url = `http://${(await fleetctlJson(fleet, ['rooms'])).listen}`;
}

/** A loopback port nothing listens on (bound, then closed). */
async function deadPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

fleetTest('fleet_room_sync and fleet_peers validate through the SDK client (no null where a string is declared)', async (A) => {
  const { Fleet } = await import('./harness.mjs');
  const B = new Fleet('sdkRoomsB');
  try {
    await startHost(A, 'hostA');
    await startHost(B, 'hostB');
    const keyB = (await fleetctlJson(B, ['identity'])).publicKey;
    const add = async (on, host, key, url) => {
      const r = await on.fleetctl(['peer', 'add', host, key, ...(url === undefined ? [] : [url])]);
      assert.equal(r.code, 0, `peer add ${host}: ${r.stdout}${r.stderr}`);
    };
    await add(A, 'hostB', keyB, B.url); // syncs
    await add(A, 'hostC', freshKey().publicKey, `http://127.0.0.1:${await deadPort()}`); // fails
    await add(A, 'hostD', freshKey().publicKey); // no URL: never pulled

    const alice = await A.mcpClient('alice');
    const bob = await B.mcpClient('bob');
    const { tools } = await alice.listTools(); // from here on the SDK checks every result
    for (const name of ['fleet_room_sync', 'fleet_peers']) assert.ok(tools.find((t) => t.name === name)?.outputSchema, `${name} declares an outputSchema`);

    // Before any sync: no lastSync, no error, and hostD has no url.
    const before = await callTool(alice, 'fleet_peers', {});
    assert.equal(before.peers.length, 3, JSON.stringify(before));
    for (const p of before.peers) {
      assert.ok(!('lastSync' in p), `no lastSync before a sync: ${JSON.stringify(p)}`);
      assert.ok(!('error' in p), `no error before a sync: ${JSON.stringify(p)}`);
    }
    const d = before.peers.find((p) => p.host === 'hostD');
    assert.ok(d && !('url' in d), `a peer pinned without a URL has no url: ${JSON.stringify(d)}`);

    await callTool(bob, 'fleet_room_register', { label: '#sdk' });
    await callTool(bob, 'fleet_room_publish', { room: '#sdk', msgType: 'note', payload: { n: 1 } });
    await callTool(alice, 'fleet_room_register', { label: '#sdk' });
    const sync = await callTool(alice, 'fleet_room_sync', { room: '#sdk' });
    const okB = sync.results.find((r) => r.peer === 'hostB');
    assert.ok(okB && okB.ok === true && okB.merged === 1, JSON.stringify(sync));
    assert.ok(!('error' in okB), `a sync that worked carries no error: ${JSON.stringify(okB)}`);
    const badC = sync.results.find((r) => r.peer === 'hostC');
    assert.ok(badC && badC.ok === false && typeof badC.error === 'string' && badC.error.length > 0, JSON.stringify(sync));
    assert.ok(!sync.results.find((r) => r.peer === 'hostD'), 'a peer without a URL is not pulled');

    const after = await callTool(alice, 'fleet_peers', {});
    const pb = after.peers.find((p) => p.host === 'hostB');
    assert.equal(typeof pb.lastSync, 'string');
    assert.ok(!('error' in pb), JSON.stringify(pb));
    const pc = after.peers.find((p) => p.host === 'hostC');
    assert.equal(typeof pc.error, 'string');
    assert.ok(!('lastSync' in pc) || typeof pc.lastSync === 'string', JSON.stringify(pc));

    // fleetctl peer list prints no "(null)" for the missing fields.
    const list = await A.fleetctl(['peer', 'list']);
    assert.equal(list.code, 0, list.stderr);
    assert.doesNotMatch(list.stdout, /\(null\)/, list.stdout);
    assert.match(list.stdout, /hostD\s+\S+\s+-\s+pinned/, list.stdout);

    const st = await fleetctlJson(A, ['status']);
    assert.equal((st.counters || st).results_off_schema, 0, 'fleetd found no result off its schema');
  } finally {
    await B.cleanup();
  }
});
