// durability.test.mjs — messages held for an entity survive kill -9 of
// fleetd; after a restart on the same state dir the entity drains each of
// them exactly once, in order. Run at both store.synchronous levels, each
// checked to be the one fleetctl status reports.

import assert from 'node:assert/strict';
import { fleetTest, callTool, entity, selfGid, waitFor } from './harness.mjs';

async function survivesKill9(f, sync) {
  const start = () => f.startFleetd(sync ? { config: { store: { synchronous: sync } } } : {});
  await start();
  const st = await f.fleetctl(['status', '--json']);
  assert.equal(st.code, 0, st.stderr);
  assert.equal(JSON.parse(st.stdout).store.synchronous, sync ?? 'normal');

  // alice registers once and leaves, so she exists, offline.
  const alice = await f.mcpClient('alice', { role: 'lead' });
  const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
  await f.closeClient(alice);

  const bob = await f.mcpClient('bob');
  await waitFor(
    async () => entity(await callTool(bob, 'fleet_list', {}), 'alice')?.status === 'offline',
    { what: 'alice to read offline' }
  );
  const contents = ['first: survive the crash', 'second: ünïcødé ✓', 'third:\nmulti-line\tbody'];
  const ids = [];
  for (const content of contents) {
    const r = await callTool(bob, 'fleet_send', { to: 'alice', content });
    assert.equal(r.status, 'sent', JSON.stringify(r));
    assert.equal(r.to.gid, aliceGid);
    ids.push(r.msgId);
  }
  const before = entity(await callTool(bob, 'fleet_list', {}), 'alice');
  assert.equal(before.held, 3, `alice holds 3: ${JSON.stringify(before)}`);

  // Crash: no chance to flush anything that was not already durable.
  await f.kill9();
  await f.closeClient(bob);

  await start();
  const alice2 = await f.mcpClient('alice', { role: 'lead' });
  const list = await callTool(alice2, 'fleet_list', {});
  assert.equal(selfGid(list), aliceGid, 'alice resumes the same gid after the restart');

  const got = await callTool(alice2, 'fleet_poll', { wait_s: 5, max: 10 });
  assert.deepEqual(
    got.messages.map((m) => m.content),
    contents,
    'exactly the three held messages, in order'
  );
  assert.deepEqual(
    got.messages.map((m) => m.msgId),
    ids
  );
  for (const m of got.messages) assert.equal(m.from.name, 'bob');
  assert.equal(got.remaining, 0);

  const again = await callTool(alice2, 'fleet_poll', {});
  assert.deepEqual(again.messages, [], 'drained messages are not returned again');
  assert.equal(again.remaining, 0);

  // Still exactly once after a clean restart.
  await f.closeClient(alice2);
  await f.stopFleetd();
  await start();
  const alice3 = await f.mcpClient('alice', { role: 'lead' });
  const third = await callTool(alice3, 'fleet_poll', {});
  assert.deepEqual(third.messages, [], 'drained messages stay drained across a restart');
}

fleetTest('held messages survive kill -9 and are drained exactly once', (f) => survivesKill9(f));
fleetTest('with store.synchronous full, too', (f) => survivesKill9(f, 'full'));
