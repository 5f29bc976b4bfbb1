// durability.test.mjs — messages held for an entity survive kill -9 of
// fleetd; after a restart on the same state dir the entity drains each of
// them exactly once, in order. Run at both store.synchronous levels, each
// checked to be the one fleetctl status reports.

import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fleetTest, callTool, callToolRaw, entity, resultText, selfGid, waitFor } from './harness.mjs';

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

// holds.db deleted under a running fleetd (an operator's rm, a cleanup
// script): nothing written after that would survive a restart, so fleetd
// says so loudly and refuses every write; a send fails instead of being
// answered `sent`, and what was held before can still be drained.
fleetTest('holds.db deleted under a running fleetd: noticed, logged, and no send is answered sent', async (f) => {
  await f.startFleetd();
  const alice = await f.mcpClient('alice');
  const bob = await f.mcpClient('bob');
  const before = await callTool(alice, 'fleet_send', { to: 'bob', content: 'held before the rm' });
  assert.equal(before.status, 'sent', JSON.stringify(before));
  rmSync(path.join(f.stateDir, 'holds.db'));
  const r = await callToolRaw(alice, 'fleet_send', { to: 'bob', content: 'after the rm' });
  assert.equal(r.isError, true, `a send after the rm is refused: ${JSON.stringify(r)}`);
  assert.doesNotMatch(resultText(r), /"status":\s*"sent"/);
  await waitFor(async () => /holds\.db was deleted while fleetd had it open/.test(f.fleetdLog), { what: 'the log to say holds.db was deleted' });
  const p = await callToolRaw(bob, 'fleet_poll', { max: 10 });
  const got = p.isError ? [] : p.structuredContent.messages.map((m) => m.content);
  assert.ok(!got.includes('after the rm'), JSON.stringify(got));
  assert.ok(f.fleetdAlive(), 'fleetd keeps running');
});
