// lifecycle.test.mjs — MCP session details beyond the happy path:
// notifications/cancelled drops a waiting call without a response and frees
// its waiter (the message it would have taken stays held), and
// logging/setLevel decides whether nudges reach the client as
// notifications/message.

import assert from 'node:assert/strict';
import { fleetTest, nudgeConfig, resultText, sleep } from './harness.mjs';

/** Collects every line a raw connection receives for ms milliseconds. */
async function drainFor(conn, ms) {
  const got = [];
  const deadline = Date.now() + ms;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return got;
    try {
      got.push(await conn.next(left));
    } catch {
      return got;
    }
  }
}

function structured(res) {
  assert.ok(res.result && !res.result.isError, `tool call failed: ${JSON.stringify(res)}`);
  assert.deepEqual(res.result.structuredContent, JSON.parse(resultText(res.result)));
  return res.result.structuredContent;
}

fleetTest('a cancelled waiting call gets no response and takes nothing', async (f) => {
  await f.startFleetd({ config: nudgeConfig(false) });
  const alice = await f.rawConn();
  await alice.initialize({ identity: { name: 'alice', role: 'lead' } });
  const bob = await f.rawConn();
  await bob.initialize({ identity: { name: 'bob', role: 'worker' } });

  await alice.send({
    jsonrpc: '2.0',
    id: 77,
    method: 'tools/call',
    params: { name: 'fleet_poll', arguments: { wait_s: 30 } },
  });
  await sleep(200); // let the poll park
  await alice.notify('notifications/cancelled', { requestId: 77, reason: 'test' });
  await sleep(200);

  const sent = structured(
    await bob.request('tools/call', { name: 'fleet_send', arguments: { to: 'alice', content: 'after cancel' } })
  );
  const lines = await drainFor(alice, 1000);
  assert.equal(
    lines.filter((l) => l.id === 77).length,
    0,
    `the cancelled call must not be answered: ${JSON.stringify(lines)}`
  );

  // The message was not swallowed by the cancelled waiter: it is still held.
  const polled = structured(await alice.request('tools/call', { name: 'fleet_poll', arguments: {} }));
  assert.equal(polled.messages.length, 1, JSON.stringify(polled));
  assert.equal(polled.messages[0].msgId, sent.msgId);
  assert.equal(polled.messages[0].content, 'after cancel');

  // Cancelling an id that is not pending is harmless; the session still works.
  await alice.notify('notifications/cancelled', { requestId: 12345 });
  assert.deepEqual((await alice.request('ping')).result, {});
});

fleetTest('logging/setLevel gates nudge notifications', async (f) => {
  await f.startFleetd({ config: nudgeConfig(true) });
  const quiet = await f.rawConn();
  await quiet.initialize({ identity: { name: 'quiet', role: 'worker' } });
  const loud = await f.rawConn();
  await loud.initialize({ identity: { name: 'loud', role: 'worker' } });
  const sender = await f.rawConn();
  await sender.initialize({ identity: { name: 'sender', role: 'lead' } });

  const bad = await quiet.request('logging/setLevel', { level: 'chatty' });
  assert.equal(bad.error?.code, -32602, JSON.stringify(bad));
  assert.deepEqual((await quiet.request('logging/setLevel', { level: 'error' })).result, {});

  for (const to of ['quiet', 'loud']) {
    structured(await sender.request('tools/call', { name: 'fleet_send', arguments: { to, content: 'hi' } }));
  }
  const loudLines = await drainFor(loud, 1500);
  const quietLines = await drainFor(quiet, 200);
  const nudges = (ls) => ls.filter((l) => l.method === 'notifications/message');
  assert.ok(nudges(loudLines).length >= 1, `default level gets the nudge: ${JSON.stringify(loudLines)}`);
  assert.equal(nudges(loudLines)[0].params.data.event, 'messages_waiting');
  assert.equal(nudges(quietLines).length, 0, `level error hides it: ${JSON.stringify(quietLines)}`);
});
