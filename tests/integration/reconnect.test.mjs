// reconnect.test.mjs — fleet-mcp survives fleetd restarts. Under a connected
// MCP client (the SDK, as Claude Code or opencode would run it), fleetd is
// stopped and started again (SIGTERM, and kill -9): fleet-mcp stays up, the
// call that was waiting gets a retryable tool error at once, calls made
// while fleetd is away get one too, and once fleetd is back the agent is
// online again with the same gid, its held messages (from before the
// restart, and sent while it was reconnecting) are polled exactly once, and
// it is nudged again. A worker in a tmux pane gets a brief typed in once
// after the restart. A socket that answers initialize with a refusal is
// reported and retried; one that never answers is left after a while, and
// calls meanwhile get their error, never a hang. stdin EOF still ends
// fleet-mcp, with status 0, and quietly: fleetd closing the session it was
// asked to end is no alarm.

import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startPromptAgent, stopTmux } from './tmux-harness.mjs';
import {
  fleetTest,
  BIN_DIR,
  bin,
  callTool,
  callToolRaw,
  entity,
  nudgeConfig,
  resultText,
  selfGid,
  sleep,
  waitFor,
  PROTOCOL_VERSION,
  WAIT_MS,
} from './harness.mjs';

/** fleet-mcp's process for a client of the harness. */
function proc(f, client) {
  const rec = f.clientRecord(client);
  assert.ok(rec?.proc, 'the harness knows the fleet-mcp process');
  return rec.proc;
}

function alive(p) {
  return p.exitCode === null && p.signalCode === null;
}

/** Calls fleet_list until it succeeds (fleet-mcp may still be reconnecting). */
async function listWhenBack(client, what) {
  return waitFor(
    async () => {
      const r = await callToolRaw(client, 'fleet_list', {});
      return r.isError ? null : r.structuredContent;
    },
    { what, timeout: 30000, interval: 200 }
  );
}

async function counters(f) {
  const r = await f.fleetctl(['--json', 'status']);
  assert.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  return s.counters || s;
}

/** The restart: fleetd away (SIGTERM or kill -9) and back on the same state. */
async function restartCase(f, t, how) {
  const config = nudgeConfig(true);
  await f.startFleetd({ config });
  const alice = await f.mcpClient('alice', { role: 'lead', groups: ['ops'] });
  const bob = await f.mcpClient('bob', { role: 'lead' });
  const dave = await f.mcpClient('dave');
  const notes = [];
  alice.setNotificationHandler(LoggingMessageNotificationSchema, (n) => notes.push(n.params));
  const before = await callTool(alice, 'fleet_list', {});
  const aliceGid = selfGid(before);
  assert.ok(aliceGid, JSON.stringify(before));

  // Held for alice before the restart.
  const held = await callTool(bob, 'fleet_send', { to: 'alice', content: 'held before the restart' });
  assert.equal(held.status, 'sent', JSON.stringify(held));
  // A poll that waits when fleetd goes away (bob has nothing held).
  const waiting = callToolRaw(bob, 'fleet_poll', { wait_s: 30 });
  await sleep(300);

  const mcpAlice = proc(f, alice);
  const mcpBob = proc(f, bob);
  const t0 = Date.now();
  if (how === 'kill9') await f.kill9();
  else await f.stopFleetd();

  // The waiting call ends well before its 30 s. A fleetd that stops
  // (SIGTERM) answers it itself, with nothing; under a crash fleet-mcp
  // answers it with a retryable tool error.
  const lost = await waiting;
  const lostAfter = Date.now() - t0;
  t.diagnostic(`the waiting poll was answered ${lostAfter} ms after fleetd went away: ${resultText(lost)}`);
  if (how === 'kill9' || lost.isError) {
    assert.equal(lost.isError, true, `the in-flight call fails: ${JSON.stringify(lost)}`);
    assert.match(resultText(lost), /fleetd went away while this call was in flight/);
    assert.match(resultText(lost), /retry/);
  } else {
    assert.deepEqual(lost.structuredContent.messages, [], JSON.stringify(lost));
  }
  assert.ok(lostAfter < 20000, `answered long before wait_s ran out (${lostAfter} ms)`);

  // A call while fleetd is away: a retryable error too, within the short hold.
  const down = await callToolRaw(alice, 'fleet_list', {}, { timeout: 30000 });
  assert.equal(down.isError, true, `no fleetd, no list: ${JSON.stringify(down)}`);
  assert.match(resultText(down), /not connected to fleetd right now: fleetd is not running/);
  assert.match(resultText(down), /retry/);
  // ping is answered by fleet-mcp itself.
  assert.deepEqual(await alice.ping(), {});

  assert.ok(alive(mcpAlice) && alive(mcpBob), 'fleet-mcp stays up while fleetd is away');
  await sleep(1000);
  assert.ok(alive(mcpAlice) && alive(mcpBob), 'and keeps trying');
  // stdin EOF while fleetd is away ends fleet-mcp at once, with status 0.
  const mcpDave = proc(f, dave);
  await f.closeClient(dave);
  assert.equal(mcpDave.exitCode, 0, 'fleet-mcp exits 0 on stdin EOF while reconnecting');

  await f.startFleetd({ config });
  // Sent while alice's fleet-mcp may still be reconnecting.
  const ctl = await f.fleetctl(['--json', '--as', 'carol', 'send', 'alice', 'sent after the restart']);
  assert.equal(ctl.code, 0, `${ctl.stdout}${ctl.stderr}`);
  const sentAfter = JSON.parse(ctl.stdout);

  // Online again, the same gid, seen from the other agent too.
  const list = await listWhenBack(alice, "alice's fleet-mcp to be back");
  assert.equal(selfGid(list), aliceGid, 'alice is the same entity after the restart');
  const me = entity(list, 'alice');
  assert.equal(me.status, 'online', JSON.stringify(me));
  assert.equal(me.role, 'lead');
  assert.deepEqual(me.groups, ['ops']);
  const seen = await listWhenBack(bob, "bob's fleet-mcp to be back");
  assert.equal(entity(seen, 'alice').gid, aliceGid);

  // The nudge works again: held messages wake the resumed session.
  await waitFor(() => notes.length >= 1, { what: 'a nudge (notifications/message) to alice after the restart' });

  // Both messages, each once.
  const got = await callTool(alice, 'fleet_poll', { max: 10 });
  assert.deepEqual(
    got.messages.map((m) => m.content).sort(),
    ['held before the restart', 'sent after the restart'],
    JSON.stringify(got)
  );
  assert.ok(got.messages.some((m) => m.msgId === held.msgId));
  assert.ok(got.messages.some((m) => m.msgId === sentAfter.msgId));
  const again = await callTool(alice, 'fleet_poll', {});
  assert.deepEqual(again.messages, [], 'polled once only');

  // The session is a working one: a send, a reply.
  const ping = await callTool(bob, 'fleet_send', { to: 'alice', content: 'still there?' });
  const polled = await callTool(alice, 'fleet_poll', {});
  assert.equal(polled.messages[0].msgId, ping.msgId);

  assert.ok((await counters(f)).sessions_resumed >= 2, 'fleetd counts both resumed sessions');
  const err = f.clientStderr(alice);
  t.diagnostic((err.match(/fleetd is back.*$/m) || ['no "fleetd is back" line'])[0]);
  const run = f.fleetdLog.split('=== fleetd run ').pop();
  const at = (re) => Date.parse((run.match(re) || [])[1]);
  t.diagnostic(
    `alice resumed ${at(/^(\S+) INFO 'alice' resumed/m) - at(/^(\S+) INFO fleetd \S+ ready/m)} ms after fleetd was ready`
  );
  assert.match(err, /fleet-mcp: lost fleetd \(fleetd closed the connection\)/);
  assert.match(err, /fleet-mcp: fleetd is back: 'alice' registered again \(gid [0-9a-f-]{36}\)/);

  // stdin EOF still ends fleet-mcp, with status 0.
  await f.closeClient(alice);
  assert.equal(mcpAlice.exitCode, 0, 'fleet-mcp exits 0 on stdin EOF');
  await waitFor(async () => entity(await callTool(bob, 'fleet_list', {}), 'alice')?.status === 'offline', {
    what: 'alice offline once her client went away',
  });
}

fleetTest('fleet-mcp reconnects after fleetd stops and starts again, as the same entity', (f, t) =>
  restartCase(f, t, 'stop')
);
fleetTest('fleet-mcp reconnects after kill -9 of fleetd, as the same entity', (f, t) => restartCase(f, t, 'kill9'));

fleetTest('a worker with FLEET_GID comes back with that gid, even to an empty roster', async (f) => {
  await f.startFleetd();
  const gid = '0f3c4c61-8a7e-4cfb-9a55-4f0d1f7c2b10';
  const w = await f.mcpClient('w1', { env: { FLEET_GID: gid } });
  assert.equal(selfGid(await callTool(w, 'fleet_list', {})), gid);
  await f.kill9();
  // The state dir is gone too: fleetd starts with an empty roster, and the
  // worker still comes back under its own gid.
  rmSync(f.stateDir, { recursive: true, force: true });
  await f.startFleetd();
  const list = await listWhenBack(w, 'the worker back');
  assert.equal(selfGid(list), gid);
  assert.equal(entity(list, 'w1').status, 'online');
});

/** fleet-mcp over stdio, spoken to in raw JSON-RPC lines. */
class StdioConn {
  constructor(f, env) {
    this.proc = spawn(bin('fleet-mcp'), [], { env: f.env({ FLEET_SOCKET: f.socket, ...env }), stdio: 'pipe' });
    f.others.push(this.proc);
    this.lines = [];
    this.buf = '';
    this.stderr = '';
    this.nextId = 1;
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve({ code, signal })));
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

  async take(pred, timeout = WAIT_MS, what = 'a line') {
    const deadline = Date.now() + timeout;
    for (;;) {
      const i = this.lines.findIndex(pred);
      if (i >= 0) return this.lines.splice(i, 1)[0];
      if (Date.now() > deadline) throw new Error(`no ${what} from fleet-mcp in ${timeout} ms; stderr: ${this.stderr}`);
      await sleep(20);
    }
  }

  async request(method, params, timeout = WAIT_MS) {
    const id = this.nextId++;
    this.send({ jsonrpc: '2.0', id, method, params });
    return this.take((l) => l.id === id && !('method' in l), timeout, `response to ${method}`);
  }

  /** initialize (its answer checked and returned), then notifications/initialized. */
  async open(capabilities = {}) {
    const init = await this.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      capabilities,
      clientInfo: { name: 'reconnect-test', version: '0.0.0' },
    });
    assert.ok(init.result, JSON.stringify(init));
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return init;
  }
}

fleetTest('channel pushes work again after the restart; nothing of fleet-mcp\'s own reaches the client', async (f) => {
  await f.startFleetd();
  const c = new StdioConn(f, { FLEET_NAME: 'chan', FLEET_ROLE: 'worker', FLEET_CHANNEL: '1' });
  const init = await c.open({ experimental: { 'claude/channel': {} } });
  assert.match(init.result._meta?.['fleet/identity']?.gid ?? '', /^[0-9a-f-]{36}$/, 'initialize names the gid');
  assert.ok((await c.request('logging/setLevel', { level: 'warning' })).result);

  await f.stopFleetd();
  await f.startFleetd();
  await waitFor(() => /fleetd is back/.test(c.stderr), { what: 'fleet-mcp back', timeout: 30000 });
  const ctl = await f.fleetctl(['--as', 'sender', 'send', 'chan', 'pushed after the restart']);
  assert.equal(ctl.code, 0, ctl.stderr);
  const push = await c.take((l) => l.method === 'notifications/claude/channel', WAIT_MS, 'a channel push');
  assert.equal(push.params.content, 'pushed after the restart');
  const polled = await c.request('tools/call', { name: 'fleet_poll', arguments: {} });
  assert.equal(polled.result.structuredContent.messages[0].content, 'pushed after the restart');
  // Only answers to the client's own ids, and no second initialize result.
  assert.deepEqual(
    c.lines.filter((l) => !('method' in l)),
    [],
    'no stray responses (fleet-mcp keeps the answers to its own requests)'
  );
  // The level the client chose was set again: a nudge (notice) is not sent.
  assert.equal(c.lines.filter((l) => l.method === 'notifications/message').length, 0);

  c.proc.stdin.end();
  assert.deepEqual(await c.exited, { code: 0, signal: null });
});

// A client that hangs up (stdin EOF) ends its session: fleet-mcp half-closes
// its socket, fleetd writes what it owes, ends the session and closes its
// side. That close is the end fleet-mcp asked for, not a lost fleetd: saying
// "lost fleetd ... reconnecting" there, at every normal exit, would hide the
// real alarm among false ones. A poll still waiting is answered all the same
// (its messages stay held), never left without an answer.
fleetTest('a client that hangs up ends fleet-mcp quietly, with its call in flight answered', async (f) => {
  await f.startFleetd();
  const c = new StdioConn(f, { FLEET_NAME: 'leaver', FLEET_ROLE: 'worker' });
  await c.open();
  assert.ok((await c.request('tools/call', { name: 'fleet_list', arguments: {} })).result);
  // A poll waiting when the client hangs up: fleetd answers it as it ends the session.
  c.send({ jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'fleet_poll', arguments: { wait_s: 1 } } });
  await sleep(200);
  c.proc.stdin.end();
  assert.deepEqual(await c.exited, { code: 0, signal: null });
  const answer = c.lines.find((l) => l.id === 99);
  assert.ok(answer && ('result' in answer || 'error' in answer), `the waiting poll was answered: ${JSON.stringify(c.lines)}`);
  assert.doesNotMatch(c.stderr, /lost fleetd|reconnecting/, 'no alarm at a normal end');
});

fleetTest('a socket that refuses the session is reported, retried, and left for fleetd', async (f) => {
  await f.startFleetd();
  const c = new StdioConn(f, { FLEET_NAME: 'rf', FLEET_ROLE: 'worker' });
  await c.open();
  await f.stopFleetd();

  // Something else now listens on the socket and refuses every initialize.
  let seen = 0;
  const impostor = net.createServer((s) => {
    let buf = '';
    s.setEncoding('utf8');
    s.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const m = JSON.parse(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (m.method === 'initialize') {
          seen += 1;
          s.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: 'go away' } }) + '\n');
        }
      }
    });
    s.on('error', () => {});
  });
  await new Promise((resolve) => impostor.listen(f.socket, resolve));
  try {
    await waitFor(() => seen >= 2, { what: 'two refused initialize attempts', timeout: 30000 });
    assert.match(c.stderr, /fleetd refused to take this session back: go away/);
    const r = await c.request('tools/call', { name: 'fleet_list', arguments: {} }, 30000);
    assert.equal(r.result?.isError, true, JSON.stringify(r));
    assert.match(r.result.content[0].text, /refused to take this session back: go away/);
  } finally {
    await new Promise((resolve) => impostor.close(resolve));
    rmSync(f.socket, { force: true });
  }
  await f.startFleetd();
  await waitFor(() => /fleetd is back/.test(c.stderr), { what: 'fleet-mcp back at fleetd', timeout: 45000 });
  const r = await c.request('tools/call', { name: 'fleet_list', arguments: {} });
  assert.ok(entity(r.result.structuredContent, 'rf'), JSON.stringify(r));
  c.proc.stdin.end();
  assert.deepEqual(await c.exited, { code: 0, signal: null });
});

fleetTest('a worker in a pane is back after kill -9 of fleetd and gets a brief typed in once', async (f) => {
  const config = { nudge: { enabled: false, quietMs: 200 }, inject: { timeoutS: 20 } };
  await f.startFleetd({ config });
  let a;
  try {
    a = await startPromptAgent(f, {
      mcp: true,
      binDir: BIN_DIR,
      env: { FLEET_SOCKET: f.socket, FLEET_NAME: 'w', FLEET_ROLE: 'worker' },
    });
    const lead = await f.mcpClient('lead', { role: 'lead' });
    const first = await waitFor(
      async () => {
        const l = await callTool(lead, 'fleet_list', {});
        return entity(l, 'w')?.status === 'online' ? l : null;
      },
      { what: 'the worker online' }
    );
    const wGid = entity(first, 'w').gid;

    await f.kill9();
    await f.startFleetd({ config });
    // The same fleet-mcp registers again (the agent did not start another).
    await waitFor(() => /'w' resumed its session after a lost connection/.test(f.fleetdLog), {
      what: "the worker's fleet-mcp to resume",
      timeout: 30000,
    });
    const list = await listWhenBack(lead, "the lead's fleet-mcp back");
    assert.equal(entity(list, 'w').gid, wGid, 'the same gid');
    assert.equal(entity(list, 'w').status, 'online');

    const r = await callTool(lead, 'fleet_send', { to: 'w', content: 'brief after the restart' });
    assert.equal(r.status, 'injected', JSON.stringify(r));
    await sleep(1000);
    assert.deepEqual(a.submitted(), ['brief after the restart'], 'typed once into the same pane');
  } finally {
    if (a) await stopTmux(f, a.sock);
  }
});

fleetTest('a socket that never answers does not hang the calls; fleet-mcp leaves it for fleetd', async (f) => {
  await f.startFleetd();
  const c = new StdioConn(f, { FLEET_NAME: 'sil', FLEET_ROLE: 'worker' });
  await c.open();
  await f.stopFleetd();

  // Something else listens on the socket now: it takes connections and
  // reads, but never writes a byte.
  const conns = [];
  const silent = net.createServer((s) => {
    conns.push(s);
    s.on('data', () => {});
    s.on('error', () => {});
  });
  await new Promise((resolve) => silent.listen(f.socket, resolve));
  try {
    await waitFor(() => conns.length >= 1, { what: 'fleet-mcp connecting to the silent socket', timeout: 30000 });
    const r = await c.request('tools/call', { name: 'fleet_list', arguments: {} }, 30000);
    assert.equal(r.result?.isError, true, JSON.stringify(r));
    assert.match(r.result.content[0].text, /not connected to fleetd right now/);
    await waitFor(() => /gave no answer to initialize/.test(c.stderr), {
      what: 'fleet-mcp giving up on the silent socket',
      timeout: 30000,
    });
  } finally {
    for (const s of conns) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
    rmSync(f.socket, { force: true });
  }
  await f.startFleetd();
  await waitFor(() => /fleetd is back/.test(c.stderr), { what: 'fleet-mcp back at fleetd', timeout: 45000 });
  const r = await c.request('tools/call', { name: 'fleet_list', arguments: {} });
  assert.ok(entity(r.result.structuredContent, 'sil'), JSON.stringify(r));
  c.proc.stdin.end();
  assert.deepEqual(await c.exited, { code: 0, signal: null });
});
