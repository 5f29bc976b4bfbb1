// conversations.test.mjs — the flows that make a fleet a team, across two
// gateways on the private broker: a worker asking its lead mid-turn
// (answered, no_waiter, too_late), a parallel brief to architects on both
// hosts, and, on one gateway, two leads and an architect each getting only
// their own messages and nudges.

import assert from 'node:assert/strict';
import path from 'node:path';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { callTool, callToolRaw, resultText, fleetTest, nudgeConfig, sleep, waitFor } from './harness.mjs';
import { useBroker, hostsTest, waitStatus } from './broker-harness.mjs';
import { startTmux as startServer, stopTmux, tmux } from './tmux-harness.mjs';

const brokerRef = useBroker();

/** fleetctl trace --json ID on f: the log lines of that flow. */
async function traceLines(f, id) {
  const r = await f.fleetctl(['--json', 'trace', id]);
  assert.equal(r.code, 0, `fleetctl trace ${id}: ${r.stderr}`);
  return JSON.parse(r.stdout).lines.join('\n');
}

/** The lead on A briefs the worker on B (waiting wait_s); B's worker reads it. */
async function briefAcross(hostA, hostB, wait_s) {
  const lead = await hostA.mcpClient('lead-a', { role: 'lead' });
  const worker = await hostB.mcpClient('worker-b');
  await waitStatus(lead, 'worker-b', 'hostB', 'online');
  await waitStatus(worker, 'lead-a', 'hostA', 'online');
  const sending = wait_s
    ? callTool(lead, 'fleet_send', { to: 'worker-b', content: 'brief: map the parser', wait_s })
    : null;
  if (!wait_s) await callTool(lead, 'fleet_send', { to: 'worker-b', content: 'brief: map the parser' });
  const got = await callTool(worker, 'fleet_poll', { wait_s: 10 });
  assert.equal(got.messages.length, 1, JSON.stringify(got));
  assert.equal(got.messages[0].content, 'brief: map the parser');
  return { lead, worker, sending, brief: got.messages[0] };
}

// ---- 1. ask with an open waiter ------------------------------------------------

hostsTest('ask: the lead waiting on its brief is asked, answers by turnId, the worker gets it', brokerRef, async ({ hostA, hostB }) => {
  const { lead, worker, sending, brief } = await briefAcross(hostA, hostB, 30);
  const asking = callTool(worker, 'fleet_ask', { to: 'lead-a', question: 'which parser, v1 or v2?', wait_s: 20 });

  const asked = await sending;
  assert.equal(asked.status, 'asked', JSON.stringify(asked));
  assert.equal(asked.question, 'which parser, v1 or v2?');
  assert.equal(asked.from.name, 'worker-b');
  assert.match(asked.turnId, /^[0-9a-f-]{36}$/);
  assert.equal(asked.traceId, brief.traceId);

  const answered = await callTool(lead, 'fleet_send', { turnId: asked.turnId, content: 'v2, the streaming one' });
  assert.equal(answered.status, 'sent', JSON.stringify(answered));
  assert.equal(answered.turnId, asked.turnId);

  const got = await asking;
  assert.equal(got.status, 'answered', JSON.stringify(got));
  assert.equal(got.answer, 'v2, the streaming one');
  assert.equal(got.from.name, 'lead-a');
  assert.equal(got.turnId, asked.turnId);
  // One trace end to end: brief, ask and answer, on both hosts.
  assert.equal(got.traceId, brief.traceId, 'the ask joins the brief’s trace');
  assert.equal(answered.traceId, brief.traceId);
  const onA = await traceLines(hostA, brief.traceId);
  assert.match(onA, /ANSWER/, onA);
  assert.match(onA, /surfaced on the waiting send/, onA);
  const onB = await traceLines(hostB, brief.traceId);
  assert.match(onB, /ASK/, onB);
  assert.match(onB, /reached turn/, onB);
  assert.ok(!onA.includes('which parser') && !onB.includes('streaming'), 'no bodies in the log');

  // Nothing of the turn is held anywhere afterwards.
  assert.deepEqual((await callTool(worker, 'fleet_poll', { wait_s: 0.5 })).messages, []);
  assert.deepEqual((await callTool(lead, 'fleet_poll', { wait_s: 0.5 })).messages, []);
});

// ---- 2. no_waiter ------------------------------------------------------------------

hostsTest('ask: nobody waiting on the asked side reads no_waiter at once', brokerRef, async ({ hostA, hostB }) => {
  const { lead, worker } = await briefAcross(hostA, hostB, 0);
  const t0 = Date.now();
  const got = await callTool(worker, 'fleet_ask', { to: 'lead-a', question: 'are you there?', wait_s: 20 });
  const took = Date.now() - t0;
  assert.equal(got.status, 'no_waiter', JSON.stringify(got));
  assert.equal(got.to.name, 'lead-a');
  assert.ok(took < 1000, `no_waiter came back in ${took} ms, one round trip`);
  // The ask is live only: it is not held for the lead's next poll.
  assert.deepEqual((await callTool(lead, 'fleet_poll', { wait_s: 0.5 })).messages, []);

  // A waiting poll is an open call too: the ask surfaces there as kind ASK.
  const polling = callTool(lead, 'fleet_poll', { wait_s: 20 });
  await sleep(300);
  const asking = callTool(worker, 'fleet_ask', { to: 'lead-a', question: 'now?', wait_s: 20 });
  const polled = await polling;
  assert.equal(polled.messages.length, 1, JSON.stringify(polled));
  const ask = polled.messages[0];
  assert.equal(ask.kind, 'ASK');
  assert.equal(ask.content, 'now?');
  assert.ok(ask.turnId && ask.expiresAt, JSON.stringify(ask));
  await callTool(lead, 'fleet_send', { turnId: ask.turnId, content: 'yes' });
  const got2 = await asking;
  assert.equal(got2.status, 'answered');
  assert.equal(got2.answer, 'yes');
});

// ---- 3. too_late ---------------------------------------------------------------------

hostsTest('ask: an answer after the turn ran out is too_late and reaches nobody', brokerRef, async ({ hostA, hostB }) => {
  const { lead, worker, sending } = await briefAcross(hostA, hostB, 30);
  const asking = callTool(worker, 'fleet_ask', { to: 'lead-a', question: 'quick one?', wait_s: 1 });
  const asked = await sending;
  assert.equal(asked.status, 'asked');
  const got = await asking;
  assert.equal(got.status, 'expired', JSON.stringify(got));

  const late = await callTool(lead, 'fleet_send', { turnId: asked.turnId, content: 'stale answer' });
  assert.equal(late.status, 'too_late', JSON.stringify(late));

  // The worker's turn is gone for good: a new ask gets no stale answer, and
  // nothing turns up by poll either.
  const again = await callTool(worker, 'fleet_ask', { to: 'lead-a', question: 'still there?', wait_s: 2 });
  assert.equal(again.status, 'no_waiter', JSON.stringify(again));
  assert.deepEqual((await callTool(worker, 'fleet_poll', { wait_s: 1 })).messages, []);

  // A turn that ends before it expires (the worker gave up on its call): the
  // answer crosses to B, finds no turn there, and B's TOO_LATE comes back.
  const s2 = callTool(lead, 'fleet_send', { to: 'worker-b', content: 'brief 2', wait_s: 30 });
  await callTool(worker, 'fleet_poll', { wait_s: 10 });
  const ac = new AbortController();
  const gaveUp = worker
    .callTool({ name: 'fleet_ask', arguments: { to: 'lead-a', question: 'never mind?', wait_s: 30 } }, undefined, { signal: ac.signal })
    .catch((e) => e);
  const asked2 = await s2;
  assert.equal(asked2.status, 'asked', JSON.stringify(asked2));
  ac.abort();
  await gaveUp;
  await sleep(300); // the cancel reaches hostB's fleetd
  const late2 = await callTool(lead, 'fleet_send', { turnId: asked2.turnId, content: 'answer to nobody' });
  assert.equal(late2.status, 'too_late', JSON.stringify(late2));
  assert.deepEqual((await callTool(worker, 'fleet_poll', { wait_s: 1 })).messages, []);

  // An unknown turn is an error, not silence.
  const bad = await callToolRaw(lead, 'fleet_send', { turnId: '00000000-0000-4000-8000-000000000000', content: 'x' });
  assert.equal(bad.isError, true);
  assert.match(resultText(bad), /no ask with turnId/);
  const both = await callToolRaw(lead, 'fleet_send', { to: 'worker-b', turnId: asked.turnId, content: 'x' });
  assert.equal(both.isError, true);
  assert.match(resultText(both), /exactly one of/);
});

// ---- 4. parallel briefs ------------------------------------------------------------

hostsTest('parallel brief: two architects reply into one result; a silent third is pending and polled later', brokerRef, async ({ hostA, hostB }) => {
  const lead = await hostA.mcpClient('lead', { role: 'lead' });
  const archA = await hostA.mcpClient('arch-sonnet', { role: 'architect' });
  const archB = await hostB.mcpClient('arch-gpt', { role: 'architect' });
  const third = await hostB.mcpClient('arch-slow', { role: 'architect' });
  await waitStatus(lead, 'arch-gpt', 'hostB', 'online');
  await waitStatus(lead, 'arch-slow', 'hostB', 'online');
  await waitStatus(archB, 'lead', 'hostA', 'online');

  // An unknown recipient: nothing goes to anyone.
  const bad = await callToolRaw(lead, 'fleet_send', { to: ['arch-sonnet', 'nobody-here'], content: 'x' });
  assert.equal(bad.isError, true);
  assert.match(resultText(bad), /nobody-here/);
  assert.deepEqual((await callTool(archA, 'fleet_poll', { wait_s: 0.3 })).messages, []);

  const sending = callTool(lead, 'fleet_send', {
    to: ['arch-sonnet', 'arch-gpt', 'arch-slow'],
    content: 'design the cache',
    wait_s: 6,
  });
  const answer = async (client, text) => {
    const got = await callTool(client, 'fleet_poll', { wait_s: 10 });
    assert.equal(got.messages.length, 1, JSON.stringify(got));
    assert.equal(got.messages[0].content, 'design the cache');
    if (text) await callTool(client, 'fleet_reply', { to: 'lead', content: text });
    return got.messages[0];
  };
  const [mA, mB, mSlow] = await Promise.all([
    answer(archA, 'LRU, sharded'),
    answer(archB, 'ARC, one lock'),
    answer(third, null),
  ]);
  assert.equal(mA.traceId, mB.traceId, 'one traceId for every copy');
  assert.equal(mA.traceId, mSlow.traceId);
  assert.notEqual(mA.msgId, mB.msgId, 'separate messages');

  const res = await sending;
  assert.equal(res.traceId, mA.traceId);
  assert.equal(res.status, 'pending', JSON.stringify(res));
  const by = Object.fromEntries(res.replies.map((r) => [r.from.name, r.content]));
  assert.deepEqual(by, { 'arch-sonnet': 'LRU, sharded', 'arch-gpt': 'ARC, one lock' });
  assert.equal(res.pending.length, 1, JSON.stringify(res));
  assert.equal(res.pending[0].to.name, 'arch-slow');
  assert.equal(res.pending[0].msgId, mSlow.msgId);

  // The late reply is held for the lead's poll, in the same flow.
  await callTool(third, 'fleet_reply', { to: 'lead', content: 'B-tree, later' });
  const late = await callTool(lead, 'fleet_poll', { wait_s: 10 });
  assert.equal(late.messages.length, 1, JSON.stringify(late));
  assert.equal(late.messages[0].content, 'B-tree, later');
  assert.equal(late.messages[0].inReplyTo, mSlow.msgId);
  assert.equal(late.messages[0].traceId, res.traceId);
  const tr = await traceLines(hostA, res.traceId);
  assert.match(tr, /parallel brief/, tr);
});

// ---- 6. several leads and an architect on one gateway ---------------------------

const NUDGE_TEXT = nudgeConfig().nudge.text;

async function nudgeCount(f, sock, pane) {
  const out = await tmux(f, sock, 'capture-pane', '-p', '-J', '-S', '-', '-t', pane);
  return out.split('\n').filter((l) => l.includes(NUDGE_TEXT)).length;
}

fleetTest('two leads and an architect on one gateway: each its own messages and nudges', async (f) => {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    const first = await startServer(f, sock, 'exec cat');
    const mk = async () => (await tmux(f, sock, 'new-window', '-d', '-P', '-F', '#{pane_id}', 'exec cat')).trim();
    const panes = { 'lead-1': first, 'lead-2': await mk(), arch: await mk() };
    await f.startFleetd({ config: nudgeConfig(true) });
    const clients = {};
    const notes = {};
    for (const [name, role] of [['lead-1', 'lead'], ['lead-2', 'lead'], ['arch', 'architect']]) {
      clients[name] = await f.mcpClient(name, { role, env: { TMUX_PANE: panes[name], TMUX: `${sock},0,0` } });
      notes[name] = [];
      clients[name].setNotificationHandler(LoggingMessageNotificationSchema, (n) => notes[name].push(n.params));
    }
    const ops = await f.mcpClient('ops');
    const lst = await callTool(ops, 'fleet_list', {});
    assert.deepEqual(lst.entities.filter((e) => e.role === 'lead').map((e) => e.name).sort(), ['lead-1', 'lead-2']);

    await callTool(ops, 'fleet_send', { to: 'lead-2', content: 'for lead-2 only' });
    await waitFor(async () => (await nudgeCount(f, sock, panes['lead-2'])) >= 1, { what: "lead-2's nudge" });
    await waitFor(() => notes['lead-2'].length >= 1, { what: "lead-2's notification" });
    await sleep(600);
    assert.equal(await nudgeCount(f, sock, panes['lead-1']), 0, 'lead-1 is not nudged for lead-2');
    assert.equal(await nudgeCount(f, sock, panes.arch), 0, 'the architect is not nudged');
    assert.equal(notes['lead-1'].length + notes.arch.length, 0);

    await callTool(ops, 'fleet_send', { to: 'arch', content: 'for the architect' });
    await waitFor(async () => (await nudgeCount(f, sock, panes.arch)) >= 1, { what: "the architect's nudge" });
    assert.equal(await nudgeCount(f, sock, panes['lead-1']), 0);

    const m1 = await callTool(clients['lead-1'], 'fleet_poll', {});
    assert.deepEqual(m1.messages, []);
    const m2 = await callTool(clients['lead-2'], 'fleet_poll', {});
    assert.deepEqual(m2.messages.map((m) => m.content), ['for lead-2 only']);
    const m3 = await callTool(clients.arch, 'fleet_poll', {});
    assert.deepEqual(m3.messages.map((m) => m.content), ['for the architect']);

    // Each lead's waiting send gets its own reply, both at once.
    const s1 = callTool(clients['lead-1'], 'fleet_send', { to: 'arch', content: 'q from 1', wait_s: 10 });
    const s2 = callTool(clients['lead-2'], 'fleet_send', { to: 'arch', content: 'q from 2', wait_s: 10 });
    const qs = await waitFor(async () => {
      const r = await callTool(clients.arch, 'fleet_poll', { wait_s: 1 });
      return r.messages.length ? r.messages : null;
    });
    const all = qs.length === 2 ? qs : qs.concat((await callTool(clients.arch, 'fleet_poll', { wait_s: 5 })).messages);
    assert.equal(all.length, 2, JSON.stringify(all));
    for (const q of all) await callTool(clients.arch, 'fleet_reply', { to: q.from.gid, content: `re: ${q.content}`, inReplyTo: q.msgId });
    assert.equal((await s1).reply.content, 're: q from 1');
    assert.equal((await s2).reply.content, 're: q from 2');
  } finally {
    await stopTmux(f, sock);
  }
});

// ---- groups ------------------------------------------------------------------------

hostsTest('groups: a broadcast is published once to members on both hosts; a late joiner gets it from then on', brokerRef, async ({ hostA, hostB }) => {
  const lead = await hostA.mcpClient('lead', { role: 'lead' });
  const a1 = await hostA.mcpClient('a1', { groups: ['ops'] });
  const b1 = await hostB.mcpClient('b1', { groups: 'ops,dev' });
  await waitStatus(lead, 'b1', 'hostB', 'online');
  const lst = await callTool(lead, 'fleet_list', {});
  assert.deepEqual(lst.entities.find((e) => e.name === 'b1').groups, ['ops', 'dev'], 'fleet_list shows the groups');

  const first = await callTool(lead, 'fleet_broadcast', { group: 'ops', content: 'ops: freeze' });
  assert.equal(first.remote, 'published', JSON.stringify(first));
  for (const c of [a1, b1]) {
    const got = await callTool(c, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(got.messages.map((m) => [m.kind, m.content]), [['BROADCAST', 'ops: freeze']]);
  }
  // b2 joins ops after the first broadcast: only the second reaches it.
  const b2 = await hostB.mcpClient('b2', { groups: ['ops'] });
  await waitStatus(lead, 'b2', 'hostB', 'online');
  await callTool(lead, 'fleet_broadcast', { group: 'ops', content: 'ops: thaw' });
  const late = await callTool(b2, 'fleet_poll', { wait_s: 10 });
  assert.deepEqual(late.messages.map((m) => m.content), ['ops: thaw'], JSON.stringify(late));
  assert.deepEqual((await callTool(b2, 'fleet_poll', { wait_s: 1 })).messages, []);
  assert.deepEqual((await callTool(b1, 'fleet_poll', { wait_s: 10 })).messages.map((m) => m.content), ['ops: thaw']);
});

// ---- on one gateway ------------------------------------------------------------------

fleetTest('on one gateway: ask answered, no_waiter, too_late, and a parallel brief', async (f) => {
  await f.startFleetd();
  const lead = await f.mcpClient('lead', { role: 'lead' });
  const w = await f.mcpClient('w1');
  const w2 = await f.mcpClient('w2');

  const sending = callTool(lead, 'fleet_send', { to: 'w1', content: 'brief', wait_s: 20 });
  const brief = (await callTool(w, 'fleet_poll', { wait_s: 5 })).messages[0];
  const asking = callTool(w, 'fleet_ask', { to: 'lead', question: 'q?', wait_s: 10 });
  const asked = await sending;
  assert.equal(asked.status, 'asked', JSON.stringify(asked));
  assert.equal(asked.traceId, brief.traceId);
  const ans = await callTool(lead, 'fleet_send', { turnId: asked.turnId, content: 'a!' });
  assert.equal(ans.status, 'sent');
  const got = await asking;
  assert.deepEqual([got.status, got.answer, got.traceId], ['answered', 'a!', brief.traceId]);
  // The same turn cannot be answered twice.
  assert.equal((await callTool(lead, 'fleet_send', { turnId: asked.turnId, content: 'again' })).status, 'too_late');

  const none = await callTool(w, 'fleet_ask', { to: 'lead', question: 'anyone?', wait_s: 10 });
  assert.equal(none.status, 'no_waiter');

  const s2 = callTool(lead, 'fleet_send', { to: 'w1', content: 'brief 2', wait_s: 20 });
  await callTool(w, 'fleet_poll', { wait_s: 5 });
  const a2 = callTool(w, 'fleet_ask', { to: 'lead', question: 'short?', wait_s: 0.5 });
  const asked2 = await s2;
  assert.equal((await a2).status, 'expired');
  assert.equal((await callTool(lead, 'fleet_send', { turnId: asked2.turnId, content: 'late' })).status, 'too_late');
  assert.deepEqual((await callTool(w, 'fleet_poll', { wait_s: 0.3 })).messages, []);

  const fan = callTool(lead, 'fleet_send', { to: ['w1', 'w2'], content: 'both?', wait_s: 10 });
  for (const [name, c] of [['w2', w2], ['w1', w]]) {
    const m = (await callTool(c, 'fleet_poll', { wait_s: 5 })).messages[0];
    assert.equal(m.content, 'both?');
    await callTool(c, 'fleet_reply', { to: 'lead', content: `yes from ${name}` });
  }
  const res = await fan;
  assert.equal(res.status, 'replied', JSON.stringify(res));
  assert.deepEqual(res.replies.map((r) => [r.from.name, r.content]), [['w2', 'yes from w2'], ['w1', 'yes from w1']], 'in arrival order');
  assert.deepEqual(res.pending, []);
  const bad = await callToolRaw(lead, 'fleet_send', { to: ['w1'], content: 'x' });
  assert.equal(bad.isError, true);
  assert.match(resultText(bad), /2 to 16/);
});
