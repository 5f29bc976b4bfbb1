// send_reply.test.mjs — two agents talk through fleet-mcp: a blocking send
// answered by a reply, the poll fallback when the wait runs out, a name held
// by a live session, leaving (offline) and resuming the same identity.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fleetTest, callTool, entity, selfGid, waitFor } from './harness.mjs';

fleetTest('blocking send returns the reply', async (f) => {
  await f.startFleetd();
  const alice = await f.mcpClient('alice', { role: 'lead' });
  const bob = await f.mcpClient('bob', { role: 'worker' });

  const sending = callTool(alice, 'fleet_send', { to: 'bob', content: 'ping from alice', wait_s: 20 });
  const polled = await callTool(bob, 'fleet_poll', { wait_s: 20 });
  assert.equal(polled.messages.length, 1, `bob's poll: ${JSON.stringify(polled)}`);
  const msg = polled.messages[0];
  assert.equal(msg.content, 'ping from alice');
  assert.equal(msg.from.name, 'alice');
  assert.equal(typeof msg.msgId, 'string');
  assert.equal(typeof msg.traceId, 'string');

  const replied = await callTool(bob, 'fleet_reply', {
    to: msg.from.gid,
    content: 'pong from bob',
    inReplyTo: msg.msgId,
  });
  assert.equal(replied.status, 'delivered', `alice is waiting, so the reply is delivered: ${JSON.stringify(replied)}`);
  assert.equal(replied.to.name, 'alice');

  const sent = await sending;
  assert.equal(sent.status, 'replied', JSON.stringify(sent));
  assert.equal(sent.msgId, msg.msgId);
  assert.equal(sent.to.name, 'bob');
  assert.ok(sent.reply, 'a replied send carries the reply');
  assert.equal(sent.reply.kind, 'REPLY');
  assert.equal(sent.reply.content, 'pong from bob');
  assert.equal(sent.reply.from.name, 'bob');
  assert.equal(sent.reply.inReplyTo, msg.msgId);
  assert.equal(sent.reply.traceId, sent.traceId, 'the reply carries the trace id of the flow');

  // The reply went to the waiting call; it is not held a second time.
  const after = await callTool(alice, 'fleet_poll', {});
  assert.deepEqual(after.messages, []);
  assert.equal(after.remaining, 0);
});

fleetTest('send that times out is pending; the reply waits for fleet_poll', async (f) => {
  await f.startFleetd();
  const alice = await f.mcpClient('alice', { role: 'lead' });
  const bob = await f.mcpClient('bob');

  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'slow question', wait_s: 1 });
  assert.equal(sent.status, 'pending', JSON.stringify(sent));
  assert.equal(typeof sent.msgId, 'string');
  assert.ok(!sent.reply);

  const polled = await callTool(bob, 'fleet_poll', { wait_s: 10 });
  assert.equal(polled.messages.length, 1, JSON.stringify(polled));
  assert.equal(polled.messages[0].msgId, sent.msgId);
  assert.equal(polled.messages[0].content, 'slow question');

  const replied = await callTool(bob, 'fleet_reply', { to: 'alice', content: 'late answer', inReplyTo: sent.msgId });
  assert.equal(replied.status, 'held', `nobody waits, so the reply is held: ${JSON.stringify(replied)}`);

  const got = await callTool(alice, 'fleet_poll', { wait_s: 10 });
  assert.equal(got.messages.length, 1, JSON.stringify(got));
  const r = got.messages[0];
  assert.equal(r.kind, 'REPLY');
  assert.equal(r.content, 'late answer');
  assert.equal(r.inReplyTo, sent.msgId);
  assert.equal(r.from.name, 'bob');
  assert.equal(r.msgId, replied.msgId);

  const again = await callTool(alice, 'fleet_poll', {});
  assert.deepEqual(again.messages, [], 'a drained reply is not returned twice');
});

fleetTest('a live name cannot be taken; leaving goes offline; reconnecting resumes', async (f) => {
  await f.startFleetd();
  const alice = await f.mcpClient('alice', { role: 'lead' });
  const bob = await f.mcpClient('bob');

  const list1 = await callTool(alice, 'fleet_list', {});
  const bob1 = entity(list1, 'bob');
  assert.ok(bob1, `bob is listed: ${JSON.stringify(list1)}`);
  assert.equal(bob1.status, 'online');
  const bobGid = bob1.gid;

  // A second session asking for "bob" while bob is live is refused.
  await assert.rejects(
    f.mcpClient('bob'),
    (e) => {
      assert.match(e.message, /bob/, `the error names the name: ${e.message}`);
      assert.match(e.message, /in use/i, `the error says the name is in use: ${e.message}`);
      return true;
    },
    'connecting a second "bob" must fail'
  );
  // The refused attempt did not disturb the live bob.
  const self = await callTool(bob, 'fleet_list', {});
  assert.equal(selfGid(self), bobGid);
  assert.equal(entity(self, 'bob').status, 'online');

  // bob leaves: offline, still known.
  await f.closeClient(bob);
  const bobOff = await waitFor(
    async () => {
      const l = await callTool(alice, 'fleet_list', {});
      const e = entity(l, 'bob');
      return e && e.status === 'offline' ? e : null;
    },
    { what: 'bob to read offline' }
  );
  assert.equal(bobOff.gid, bobGid);

  // A message for the offline bob is held for him.
  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'while you were away' });
  assert.equal(sent.status, 'sent', JSON.stringify(sent));
  assert.equal(sent.to.gid, bobGid);
  const list2 = await callTool(alice, 'fleet_list', {});
  assert.ok(entity(list2, 'bob').held >= 1, `bob holds the message: ${JSON.stringify(entity(list2, 'bob'))}`);

  // bob comes back under the same name: same gid, and the held message is his.
  const bob2 = await f.mcpClient('bob');
  const back = await callTool(bob2, 'fleet_list', {});
  assert.equal(selfGid(back), bobGid, 'reconnecting with the same name resumes the same gid');
  assert.equal(entity(back, 'bob').status, 'online');
  assert.equal(entity(back, 'bob').self, true);
  const got = await callTool(bob2, 'fleet_poll', { wait_s: 5 });
  assert.equal(got.messages.length, 1, JSON.stringify(got));
  assert.equal(got.messages[0].content, 'while you were away');
  assert.equal(got.messages[0].msgId, sent.msgId);
});

// A result of megabytes (a fleet_list of thousands, a poll of big messages)
// goes into its client's socket whole: fleetd raises that socket's send
// buffer to hold the line (capped by the system's net.core.wmem_max), so the
// line is not passed on in a dozen parts, each a wake-up of both sides.
fleetTest('a client about to get a line of megabytes has its send buffer raised to hold it', async (f, t) => {
  const wmemMax = Number(readFileSync('/proc/sys/net/core/wmem_max', 'utf8'));
  const wmemDefault = Number(readFileSync('/proc/sys/net/core/wmem_default', 'utf8'));
  if (wmemMax < 4 * wmemDefault) {
    t.skip(`net.core.wmem_max (${wmemMax}) leaves no room above the default (${wmemDefault})`);
    return;
  }
  await f.startFleetd();
  const alice = await f.mcpClient('alice', { role: 'lead' });
  const bob = await f.mcpClient('bob');
  // The send buffers of fleetd's connections, from `ss` (skmem tb).
  const sndbufs = () => {
    const out = execFileSync('ss', ['-x', '-m', '-p'], { encoding: 'utf8' });
    const bufs = [];
    for (const line of out.split('\n')) {
      if (!line.includes(`pid=${f.fleetd.pid},`)) continue;
      const m = /\btb(\d+)/.exec(line);
      if (m) bufs.push(Number(m[1]));
    }
    return bufs;
  };
  assert.ok(Math.max(...sndbufs()) <= 2 * wmemDefault, `before: ${sndbufs()}`);

  // 400 KB of content: the poll result carries it twice (structuredContent
  // and its text), well over a megabyte with the escaping of its quotes.
  const content = '"quoted" '.repeat(45000);
  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content });
  assert.equal(sent.status, 'sent', JSON.stringify(sent).slice(0, 300));
  const got = await callTool(bob, 'fleet_poll', {});
  assert.equal(got.messages.length, 1);
  assert.equal(got.messages[0].content, content);
  const raised = Math.max(...sndbufs());
  assert.ok(raised >= 2 * 1000000, `bob's connection got a send buffer for the line: ${sndbufs()}`);
  t.diagnostic(`fleetd's send buffers after the big poll: ${sndbufs().join(', ')}`);
});
