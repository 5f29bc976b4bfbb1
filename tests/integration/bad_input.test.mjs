// bad_input.test.mjs — fleetd's socket under hostile or clumsy input: bad
// JSON, non-objects, wrong versions, unknown methods and tools, wrong argument
// types, an oversize line, a client vanishing mid-call and 200 clients at
// once. Each gets a clear error (or, for the oversize line, an error and a
// closed connection); afterwards fleetd still serves a normal client.

import assert from 'node:assert/strict';
import net from 'node:net';
import { fleetTest, callTool, resultText, RawConn, sleep, PROTOCOL_VERSION } from './harness.mjs';

const MAX_LINE = 4 * 1024 * 1024; // FL_MAX_LINE in common/limits.h

function assertError(res, code, what) {
  assert.ok(res && res.error, `${what}: want a JSON-RPC error, got ${JSON.stringify(res)}`);
  assert.equal(typeof res.error.message, 'string', `${what}: error.message`);
  if (code !== undefined) assert.equal(res.error.code, code, `${what}: ${JSON.stringify(res)}`);
  assert.equal(res.jsonrpc, '2.0', `${what}: jsonrpc`);
}

async function assertAlive(conn, what) {
  const r = await conn.request('ping');
  assert.deepEqual(r.result, {}, `${what}: the connection still answers ping: ${JSON.stringify(r)}`);
}

/** Error text of a tool call that must fail as a tool result (isError). */
function toolErrorText(res, what) {
  assert.ok(res.result, `${what}: want a tool result with isError, got ${JSON.stringify(res)}`);
  assert.equal(res.result.isError, true, `${what}: isError: ${JSON.stringify(res.result)}`);
  const text = resultText(res.result);
  assert.ok(text.length > 0, `${what}: the error says what was wrong`);
  return text;
}

fleetTest('bad input battery; fleetd keeps serving', async (f, t) => {
  await f.startFleetd();

  await t.test('lifecycle: ping before initialize, other requests refused, versions', async () => {
    const c = await f.rawConn();
    const p = await c.request('ping');
    assert.deepEqual(p.result, {}, JSON.stringify(p));
    const early = await c.request('tools/list');
    assert.ok(early.error, `tools/list before initialize is an error: ${JSON.stringify(early)}`);

    const init = await c.initialize({ protocolVersion: PROTOCOL_VERSION });
    assert.equal(init.protocolVersion, '2025-11-25');
    assert.deepEqual(init.capabilities.tools, { listChanged: false });
    assert.deepEqual(init.capabilities.logging, {});
    assert.equal(init.serverInfo.name, 'fleetd');
    assert.equal(typeof init.serverInfo.version, 'string');
    const tl = await c.request('tools/list');
    assert.ok(Array.isArray(tl.result?.tools), JSON.stringify(tl));
    c.destroy();

    for (const [asked, answered] of [
      ['2025-06-18', '2025-06-18'],
      ['2025-03-26', '2025-03-26'],
      ['1999-01-01', '2025-11-25'],
    ]) {
      const d = await f.rawConn();
      const r = await d.initialize({ protocolVersion: asked });
      assert.equal(r.protocolVersion, answered, `asked ${asked}`);
      d.destroy();
    }
  });

  await t.test('malformed JSON is -32700 with id null; the connection stays usable', async () => {
    const c = await f.rawConn();
    await c.initialize();
    await c.send('{"jsonrpc":"2.0","id":1,"method":');
    const r = await c.response();
    assertError(r, -32700, 'truncated JSON');
    assert.equal(r.id, null);
    await c.send('not json at all \u0001');
    assertError(await c.response(), -32700, 'garbage');
    await assertAlive(c, 'after parse errors');
    c.destroy();
  });

  await t.test('a request whose string holds \\u0000 is answered with its own id', async () => {
    const c = await f.rawConn();
    await c.initialize();
    await c.send('{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"fleet_send","arguments":{"to":"x","content":"a\\u0000b"}}}');
    const r = await c.response();
    assertError(r, -32600, 'a NUL in a string');
    assert.equal(r.id, 31, `the answer carries the request's id: ${JSON.stringify(r)}`);
    assert.match(r.error.message, /u0000/);
    await c.send('{"jsonrpc":"2.0","id":"nul-\\u0000","method":"ping"}');
    const s = await c.response();
    assertError(s, -32600, 'a NUL in the id');
    assert.equal(s.id, 'nul-\u0000', JSON.stringify(s));
    await assertAlive(c, 'after a NUL');
    c.destroy();
  });

  await t.test('non-objects and wrong jsonrpc versions are -32600', async () => {
    const c = await f.rawConn();
    await c.initialize();
    for (const line of [
      '[]',
      '42',
      '"ping"',
      'null',
      '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
      '{"jsonrpc":"1.0","id":7,"method":"ping"}',
      '{"id":8,"method":"ping"}',
      '{"jsonrpc":"2.0","id":9,"method":42}',
    ]) {
      await c.send(line);
      const r = await c.response();
      assertError(r, -32600, line);
    }
    await assertAlive(c, 'after invalid requests');
    c.destroy();
  });

  await t.test('unknown method is -32601', async () => {
    const c = await f.rawConn();
    await c.initialize();
    const r = await c.request('server/discover', {});
    assertError(r, -32601, 'server/discover');
    const r2 = await c.request('resources/list', {});
    assertError(r2, -32601, 'resources/list');
    await assertAlive(c, 'after unknown methods');
    c.destroy();
  });

  await t.test('unknown tool and wrong argument types', async () => {
    const c = await f.rawConn();
    await c.initialize({ identity: { name: 'typo', role: 'worker', groups: [] } });

    const unknown = await c.request('tools/call', { name: 'fleet_nope', arguments: {} });
    if (unknown.error) {
      assert.equal(unknown.error.code, -32602, JSON.stringify(unknown));
    } else {
      const text = toolErrorText(unknown, 'unknown tool');
      assert.match(text, /fleet_nope/, 'the error names the unknown tool');
    }

    const cases = [
      ['fleet_send', { to: 'typo', content: 42 }, /content/],
      ['fleet_send', { content: 'no recipient' }, /\bto\b/],
      ['fleet_send', { to: 7, content: 'numeric to' }, /\bto\b/],
      ['fleet_send', { to: 'typo', content: 'x', wait_s: 'soon' }, /wait_s/],
      ['fleet_reply', { to: 'typo', content: ['a'] }, /content/],
      ['fleet_poll', { wait_s: 'later' }, /wait_s/],
      ['fleet_poll', { max: 'many' }, /max/],
      ['fleet_broadcast', { content: { text: 'hi' } }, /content/],
      ['fleet_broadcast', { content: 'hi', group: 5 }, /group/],
    ];
    for (const [name, args, re] of cases) {
      const r = await c.request('tools/call', { name, arguments: args });
      const text = toolErrorText(r, `${name} ${JSON.stringify(args)}`);
      assert.match(text, re, `${name} ${JSON.stringify(args)}: the error names the argument: ${text}`);
    }

    // A name that resolves to nobody is an error, never a guess.
    const nobody = await c.request('tools/call', {
      name: 'fleet_send',
      arguments: { to: 'nobody-by-this-name', content: 'hello?' },
    });
    toolErrorText(nobody, 'unknown recipient');

    const badArgs = await c.request('tools/call', { name: 'fleet_list', arguments: 5 });
    assert.ok(
      badArgs.error || badArgs.result?.isError === true,
      `arguments that are not an object are refused: ${JSON.stringify(badArgs)}`
    );
    await assertAlive(c, 'after tool errors');
    c.destroy();
  });

  await t.test('an oversize line gets an error and the connection is closed', async () => {
    const bystander = await f.rawConn();
    await bystander.initialize();

    const c = await f.rawConn();
    await c.initialize();
    // One byte past the cap, no newline yet; then the newline.
    c.write('x'.repeat(MAX_LINE + 1));
    c.write('\n');
    await c.closed(60000);
    const seen = [...c.queue];
    const err = seen.find((m) => m && typeof m === 'object' && m.error);
    assert.ok(err, `an error response came before the close; got ${JSON.stringify(seen).slice(0, 500)}`);
    assert.equal(err.jsonrpc, '2.0');

    await assertAlive(bystander, 'another client after the oversize line');
    bystander.destroy();
  });

  await t.test('deep JSON nesting is refused before parsing; the connection stays usable', async () => {
    const c = await f.rawConn();
    await c.initialize();
    const depth = 100000;
    await c.write('['.repeat(depth) + ']'.repeat(depth) + '\n');
    const r = await c.next();
    assertError(r, -32700, 'deep nesting');
    assert.match(r.error.message, /nests too deep/, JSON.stringify(r));
    // Just under the limit is a normal message.
    const ok = await c.request('ping', { a: JSON.parse('['.repeat(60) + ']'.repeat(60)) });
    assert.deepEqual(ok.result, {}, JSON.stringify(ok));
    await assertAlive(c, 'after deep nesting');
    c.destroy();
  });

  await t.test('a client flooding requests without reading stalls only itself', async () => {
    // 8000 pings whose ids make 20 MiB of answers: more than fleetd ever
    // queues for one client (16 MiB). Read nothing while sending them.
    const N = 8000;
    const pad = 'p'.repeat(2600);
    const flood = net.createConnection(f.socket);
    await new Promise((resolve, reject) => {
      flood.once('connect', resolve);
      flood.once('error', reject);
    });
    flood.pause();
    let chunk = '';
    for (let i = 0; i < N; i++) chunk += JSON.stringify({ jsonrpc: '2.0', id: `${pad}-${i}`, method: 'ping' }) + '\n';
    let closedEarly = false;
    flood.once('close', () => (closedEarly = true));
    flood.on('error', () => {});
    flood.write(chunk);

    // Meanwhile another client is served as usual.
    const bystander = await f.rawConn();
    await bystander.initialize();
    for (let i = 0; i < 20; i++) await assertAlive(bystander, `bystander ping ${i} during the flood`);
    // fleetd takes the flood until its answers back up, then stops reading:
    // the rest stays unsent on our side (unpaced, fleetd would read it all
    // and drop us for not reading).
    let last = -1;
    for (let still = 0, n = 0; still < 10 && n < 300 && !closedEarly; n++) {
      await sleep(100);
      still = flood.writableLength === last ? still + 1 : 0;
      last = flood.writableLength;
    }
    assert.equal(closedEarly, false, 'fleetd kept the flooder connected');
    assert.ok(flood.writableLength > 0, 'fleetd stopped reading the flooder while its answers were unread');

    // When the flooder reads at last, every answer is there, in order: it
    // was paced, not dropped.
    let buf = '';
    let seen = 0;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${seen} of ${N} answers came`)), 120000);
      flood.on('data', (d) => {
        buf += d;
        let j;
        while ((j = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, j);
          buf = buf.slice(j + 1);
          const m = JSON.parse(line);
          assert.equal(m.id, `${pad}-${seen}`, 'answers come in request order');
          assert.deepEqual(m.result, {});
          seen++;
        }
        if (seen === N) {
          clearTimeout(timer);
          resolve();
        }
      });
      flood.once('close', () => reject(new Error(`fleetd closed the flooder after ${seen} answers`)));
      flood.resume();
    });
    flood.destroy();
    const st = await f.fleetctl(['status', '--json']);
    assert.equal(st.code, 0, st.stderr);
    assert.equal(JSON.parse(st.stdout).counters.sessions_dropped_slow ?? 0, 0, 'nobody was dropped as slow');
    await assertAlive(bystander, 'bystander after the flood');
    bystander.destroy();
  });

  await t.test('a client that disconnects mid-call does no harm', async () => {
    const c = await f.rawConn();
    await c.initialize({ identity: { name: 'quitter', role: 'worker', groups: [] } });
    await c.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fleet_poll', arguments: { wait_s: 10 } } });
    await sleep(300);
    c.destroy();

    const d = await f.rawConn();
    await d.initialize({ identity: { name: 'quitter2', role: 'worker', groups: [] } });
    await d.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'fleet_send', arguments: { to: 'typo', content: 'will you answer?', wait_s: 10 } },
    });
    await sleep(300);
    d.destroy();
    await sleep(300);

    // The vanished waiter can still be written to: the message is held.
    const e = await f.rawConn();
    await e.initialize({ identity: { name: 'sender', role: 'worker', groups: [] } });
    const r = await e.request('tools/call', { name: 'fleet_send', arguments: { to: 'quitter', content: 'hello' } });
    assert.ok(r.result && !r.result.isError, `send to a departed client: ${JSON.stringify(r)}`);
    assert.equal(r.result.structuredContent.status, 'sent');
    e.destroy();
    assert.ok(f.fleetdAlive(), 'fleetd is alive');
  });

  await t.test('200 clients at once each initialize and ping', async () => {
    const N = 200;
    let retries = 0;
    const one = async (i) => {
      // A full listen backlog refuses a Unix-socket connect with EAGAIN; a
      // client would retry, so this one does too (and the count is reported).
      for (let attempt = 0; ; attempt++) {
        const c = new RawConn(f.socket);
        f.raws.push(c);
        try {
          await c.connected;
        } catch (e) {
          if (e.code === 'EAGAIN' && attempt < 100) {
            retries++;
            await sleep(20);
            continue;
          }
          throw e;
        }
        const init = await c.initialize({ name: `crowd-${i}` });
        assert.equal(init.serverInfo.name, 'fleetd');
        const p = await c.request('ping');
        assert.deepEqual(p.result, {});
        return c;
      }
    };
    const conns = await Promise.all(Array.from({ length: N }, (_, i) => one(i)));
    assert.equal(conns.length, N);
    // All 200 are open together; each still answers.
    const pings = await Promise.all(conns.map((c) => c.request('ping')));
    for (const p of pings) assert.deepEqual(p.result, {});
    if (retries) t.diagnostic(`connect retried ${retries} times on EAGAIN (listen backlog full)`);
    for (const c of conns) c.destroy();
  });

  await t.test('afterwards a normal client, fleetctl and fleetd are fine', async () => {
    const sdk = await f.mcpClient('after-all');
    const list = await callTool(sdk, 'fleet_list', {});
    assert.ok(list.entities.some((e) => e.name === 'after-all' && e.status === 'online'));
    const st = await f.fleetctl(['status']);
    assert.equal(st.code, 0, `fleetctl status: ${st.stdout}${st.stderr}`);
    assert.ok(f.fleetdAlive(), 'fleetd is alive');
    await f.closeClient(sdk);
  });

  // The clean-up stops fleetd with SIGTERM and requires exit status 0.
});
