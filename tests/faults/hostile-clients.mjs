// hostile-clients.mjs — a child process that keeps many hostile clients on
// fleetd's socket until its parent says stop (hostile.test.mjs forks two).
//
//   node hostile-clients.mjs <socket> <kind>=<count> ...
//
// Each client repeats its misbehaviour, paced, for as long as the run lasts:
//   garbage     bytes that are not JSON, then half a line with no newline;
//               every other client then idles, the rest disconnect and return
//   bigline     one 1 MiB line (a ping with a 1 MiB string), reads the answer
//   oversize    a line one byte over FL_MAX_LINE, then waits for the close
//   deep        2000 levels of nested arrays
//   badutf8     invalid UTF-8 inside a JSON string
//   cancel      a fleet_poll with wait_s 30, then notifications/cancelled or
//               the socket destroyed mid-call
//   slowreader  thousands of pings whose answers it never reads
//
// Messages to the parent (IPC): {ready: true} once every client has
// connected and started, {settled: true} once fleetd has stopped reading
// every slow reader, {stats} on stop. Parent messages: 'stop'.

import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const MAX_LINE = 4 * 1024 * 1024; // FL_MAX_LINE in common/limits.h
const [sock, ...specs] = process.argv.slice(2);
let stopping = false;
const stats = { connects: 0, errors: 0, answers: 0, closedByServer: 0 };
const open = new Set();

const BIG = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'b'.repeat(1 << 20) } }) + '\n';
const DEEP = '['.repeat(2000) + ']'.repeat(2000) + '\n';
const BAD_UTF8 = Buffer.concat([
  Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"ok '),
  Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82]),
  Buffer.from('"}}\n'),
]);

function connect() {
  return new Promise((resolve) => {
    const s = net.createConnection(sock);
    s.on('error', () => stats.errors++);
    s.once('connect', () => {
      stats.connects++;
      open.add(s);
      s.once('close', () => open.delete(s));
      resolve(s);
    });
    s.once('close', () => resolve(null));
  });
}

/** Resolves with the next newline-terminated line from s (or null on close). */
function reader(s) {
  let buf = '';
  const waiters = [];
  const lines = [];
  s.setEncoding('utf8');
  s.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      stats.answers++;
      const w = waiters.shift();
      if (w) w(line);
      else lines.push(line);
    }
  });
  s.once('close', () => {
    for (const w of waiters.splice(0)) w(null);
  });
  return () =>
    lines.length ? Promise.resolve(lines.shift()) : s.destroyed ? Promise.resolve(null) : new Promise((r) => waiters.push(r));
}

const write = (s, data) => new Promise((resolve) => (s.destroyed ? resolve() : s.write(data, () => resolve())));
const jitter = (ms) => sleep(ms / 2 + Math.random() * ms);

async function initialize(s, next, name) {
  const params = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name, version: '0' } };
  if (name) params._meta = { 'fleet/identity': { name, role: 'worker', groups: [] } };
  await write(s, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params }) + '\n');
  const r = await next();
  if (!r) return false;
  await write(s, '{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  return !JSON.parse(r).error;
}

const kinds = {
  async garbage(i, started) {
    const idle = i % 2 === 0;
    await eachConnection(started, async (s) => {
      reader(s);
      await write(s, 'this is not json \u0001\u0002 {{{\n');
      await write(s, '{"jsonrpc":"2.0","id":5,"method":"pi'); // half a line, never finished
      if (idle) {
        while (!stopping && !s.destroyed) await sleep(100);
        s.destroy();
        return true;
      }
      await jitter(300);
      s.destroy();
      return false;
    });
  },

  async bigline(i, started) {
    await lineLoop(started, BIG, 1000);
  },

  async oversize(i, started) {
    const chunk = 'x'.repeat(512 * 1024);
    await eachConnection(started, async (s) => {
      reader(s);
      const closed = new Promise((r) => s.once('close', r));
      for (let sent = 0; sent <= MAX_LINE && !s.destroyed && !stopping; sent += chunk.length) {
        await write(s, chunk);
        await sleep(100);
      }
      await write(s, '\n');
      await Promise.race([closed, sleep(3000)]);
      if (!s.destroyed) s.destroy();
      else stats.closedByServer++;
      await jitter(500);
      return false;
    });
  },

  async deep(i, started) {
    await lineLoop(started, DEEP, 200);
  },

  async badutf8(i, started) {
    await lineLoop(started, BAD_UTF8, 200);
  },

  async cancel(i, started) {
    const name = `hostile-${process.pid}-${i}`;
    let n = 0;
    await eachConnection(started, async (s) => {
      const next = reader(s);
      if (!(await initialize(s, next, name))) {
        // The previous session of this name may not be gone yet.
        s.destroy();
        await jitter(100);
        return false;
      }
      for (let k = 0; k < 3 && !stopping && !s.destroyed; k++) {
        const id = 100 + k;
        await write(
          s,
          JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'fleet_poll', arguments: { wait_s: 30 } } }) + '\n'
        );
        await jitter(300);
        if (n % 2 === 0) break; // destroyed mid-call below
        await write(s, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'hostile' } }) + '\n');
      }
      n++;
      s.destroy();
      await jitter(200);
      return false;
    });
  },

  async slowreader(i, started) {
    const s = await connect();
    started();
    if (!s) return;
    s.pause(); // never reads
    const pad = 'r'.repeat(2000);
    let batch = '';
    for (let k = 0; k < 1000; k++) batch += JSON.stringify({ jsonrpc: '2.0', id: `${pad}-${k}`, method: 'ping' }) + '\n';
    // Keep what is queued on our side bounded: write more only as fleetd reads.
    // Once fleetd has stopped reading (nothing left our side for 600 ms)
    // the flood is paced: report it settled.
    let last = -1;
    let still = 0;
    let told = false;
    while (!stopping && !s.destroyed) {
      if (s.writableLength < 4 << 20) s.write(batch);
      await sleep(200);
      still = s.writableLength === last && last > 0 ? still + 1 : 0;
      last = s.writableLength;
      if (still >= 3 && !told) {
        told = true;
        settle();
      }
    }
    if (!told) settle();
    s.destroy();
  },
};

let unsettled = specs.reduce((n, spec) => (spec.startsWith('slowreader=') ? n + Number(spec.split('=')[1]) : n), 0);
function settle() {
  if (--unsettled === 0) process.send?.({ settled: true });
}
if (unsettled === 0) setImmediate(() => process.send?.({ settled: true }));

// Connects again and again until the run stops, calling started() once
// after the first attempt; body(s) uses each connection and returns true to
// end the loop.
async function eachConnection(started, body) {
  for (let first = true; !stopping; first = false) {
    const s = await connect();
    if (first) started();
    if (!s) {
      await jitter(100);
      continue;
    }
    if (await body(s)) return;
  }
}

// Sends line on one connection at a time, reading each answer, pausing
// about pauseMs between lines; a new connection when fleetd closes one.
async function lineLoop(started, line, pauseMs) {
  let s = null;
  let next;
  await eachConnection(started, async (c) => {
    s = c;
    next = reader(s);
    while (!stopping && !s.destroyed) {
      await write(s, line);
      if ((await next()) === null) stats.closedByServer++;
      await jitter(pauseMs);
    }
    return false;
  });
  s?.destroy();
}

const runs = [];
let startedCount = 0;
let total = 0;
for (const spec of specs) {
  const [kind, count] = spec.split('=');
  if (!kinds[kind]) throw new Error(`unknown kind ${kind}`);
  for (let i = 0; i < Number(count); i++) {
    total++;
    runs.push(
      kinds[kind](i, () => {
        if (++startedCount === total) process.send?.({ ready: true });
      }).catch((e) => {
        stats.errors++;
        process.send?.({ error: String(e?.stack || e) });
      })
    );
  }
}

process.on('message', async (m) => {
  if (m !== 'stop') return;
  stopping = true;
  for (const s of open) s.destroy();
  await Promise.race([Promise.all(runs), sleep(5000)]);
  for (const s of open) s.destroy();
  process.send?.({ stats });
  process.exit(0);
});
