// channels.test.mjs — Claude Code channels, opt in: with FLEET_CHANNEL=1 and
// a client that declared the experimental "claude/channel" capability, a
// message held for the session is also pushed as notifications/claude/channel
// {content, meta}; the push is a copy, so fleet_poll still returns it. Without
// either switch nothing is pushed.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fleetTest, callTool, bin, sleep, PROTOCOL_VERSION, WAIT_MS } from './harness.mjs';

const CHANNEL = 'notifications/claude/channel';

/** fleet-mcp over stdio, spoken to in raw JSON-RPC lines. */
class StdioConn {
  constructor(f, env) {
    this.proc = spawn(bin('fleet-mcp'), [], { env: f.env({ FLEET_SOCKET: f.socket, ...env }), stdio: 'pipe' });
    f.others.push(this.proc);
    this.lines = [];
    this.buf = '';
    this.stderr = '';
    this.nextId = 1;
    this.proc.stdout.setEncoding('utf8');
    this.proc.stderr.setEncoding('utf8');
    this.proc.stderr.on('data', (d) => (this.stderr += d));
    this.proc.stdout.on('data', (d) => {
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        if (line.trim()) this.lines.push(JSON.parse(line));
      }
    });
  }

  send(v) {
    this.proc.stdin.write(JSON.stringify(v) + '\n');
  }

  /** Waits for (and removes) the first line pred accepts. */
  async take(pred, timeout = WAIT_MS, what = 'a line') {
    const deadline = Date.now() + timeout;
    for (;;) {
      const i = this.lines.findIndex(pred);
      if (i >= 0) return this.lines.splice(i, 1)[0];
      if (Date.now() > deadline) throw new Error(`no ${what} from fleet-mcp in ${timeout} ms; stderr: ${this.stderr}`);
      await sleep(20);
    }
  }

  async request(method, params) {
    const id = this.nextId++;
    this.send({ jsonrpc: '2.0', id, method, params });
    return this.take((l) => l.id === id && !('method' in l), WAIT_MS, `response to ${method}`);
  }

  async initialize(capabilities) {
    const res = await this.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      capabilities,
      clientInfo: { name: 'channel-test', version: '0.0.0' },
    });
    assert.ok(res.result, `initialize failed: ${JSON.stringify(res)}`);
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return res.result;
  }

  async poll() {
    const res = await this.request('tools/call', { name: 'fleet_poll', arguments: {} });
    assert.ok(res.result && !res.result.isError, `fleet_poll failed: ${JSON.stringify(res)}`);
    return res.result.structuredContent;
  }

  pushes() {
    return this.lines.filter((l) => l.method === CHANNEL);
  }
}

const WITH_CAP = { experimental: { 'claude/channel': {} } };

function checkPush(push, sent, content, from) {
  assert.equal(push.jsonrpc, '2.0');
  assert.ok(!('id' in push), 'a notification has no id');
  assert.equal(push.params.content, content);
  const m = push.params.meta;
  assert.equal(m.msgId, sent.msgId);
  assert.equal(m.traceId, sent.traceId);
  assert.equal(m.from, from);
  assert.equal(m.kind, 'SEND');
  assert.equal(typeof m.fromGid, 'string');
  assert.match(m.ts, /^\d{4}-\d\d-\d\dT/);
  for (const [k, v] of Object.entries(m)) {
    assert.equal(typeof v, 'string', `meta.${k} is a string`);
    assert.match(k, /^[A-Za-z0-9_]+$/, `meta key ${k} is an identifier`);
  }
}

fleetTest('FLEET_CHANNEL=1 with the capability: a held message is pushed, and still polled', async (f) => {
  await f.startFleetd();
  const bob = new StdioConn(f, { FLEET_NAME: 'bob', FLEET_CHANNEL: '1' });
  const init = await bob.initialize(WITH_CAP);
  assert.deepEqual(init.capabilities.experimental, { 'claude/channel': {} }, JSON.stringify(init));
  assert.ok(init.capabilities.tools, 'tools capability unchanged');
  const alice = await f.mcpClient('alice', { role: 'lead' });
  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'hello over the channel' });
  const push = await bob.take((l) => l.method === CHANNEL, WAIT_MS, CHANNEL);
  checkPush(push, sent, 'hello over the channel', 'alice');
  assert.equal(push.params.meta.fromGid, (await callTool(alice, 'fleet_list', {})).self);

  const polled = await bob.poll();
  assert.equal(polled.messages.length, 1, `the push did not drain it: ${JSON.stringify(polled)}`);
  assert.equal(polled.messages[0].msgId, sent.msgId);
  assert.equal(polled.messages[0].content, 'hello over the channel');
  await sleep(300);
  assert.equal(bob.pushes().length, 0, 'each message is pushed once');
});

fleetTest('FLEET_CHANNEL unset: no channel notification', async (f) => {
  await f.startFleetd();
  const bob = new StdioConn(f, { FLEET_NAME: 'bob' });
  const init = await bob.initialize(WITH_CAP);
  assert.equal(init.capabilities.experimental, undefined, JSON.stringify(init));
  const alice = await f.mcpClient('alice');
  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'no channel' });
  const polled = await bob.poll();
  assert.equal(polled.messages[0].msgId, sent.msgId);
  await sleep(500);
  assert.deepEqual(bob.pushes(), []);
});

fleetTest('FLEET_CHANNEL=1 without the capability: no channel notification', async (f) => {
  await f.startFleetd();
  const bob = new StdioConn(f, { FLEET_NAME: 'bob', FLEET_CHANNEL: '1' });
  const init = await bob.initialize({});
  assert.equal(init.capabilities.experimental, undefined, JSON.stringify(init));
  const alice = await f.mcpClient('alice');
  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'not declared' });
  const polled = await bob.poll();
  assert.equal(polled.messages[0].msgId, sent.msgId);
  await sleep(500);
  assert.deepEqual(bob.pushes(), []);
});

fleetTest('a message held before the session connects is pushed after initialize', async (f) => {
  await f.startFleetd();
  // bob exists (and goes offline) so alice can address him.
  const first = new StdioConn(f, { FLEET_NAME: 'bob' });
  await first.initialize({});
  first.proc.stdin.end();
  await new Promise((r) => first.proc.once('exit', r));
  const alice = await f.mcpClient('alice');
  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'waiting for you' });

  const bob = new StdioConn(f, { FLEET_NAME: 'bob', FLEET_CHANNEL: '1' });
  await bob.initialize(WITH_CAP);
  const push = await bob.take((l) => l.method === CHANNEL, WAIT_MS, CHANNEL);
  checkPush(push, sent, 'waiting for you', 'alice');
  const polled = await bob.poll();
  assert.equal(polled.messages.length, 1, JSON.stringify(polled));
  assert.equal(polled.messages[0].msgId, sent.msgId);
  await sleep(300);
  assert.deepEqual(bob.pushes(), [], 'pushed once');
});
