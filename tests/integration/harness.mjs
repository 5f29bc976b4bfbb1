// harness.mjs — runs the real fleet binaries for the integration tests.
//
// Each test made with fleetTest() gets a fresh temporary directory under /tmp
// (short, so the Unix socket path stays far below the 108-byte sun_path limit)
// holding fleetd's state dir and socket. The harness starts fleetd, MCP
// clients (the official SDK launching fleet-mcp over stdio), raw socket
// connections and fleetctl runs, remembers every process it started and ends
// all of them when the test finishes, failed or not. fleetd must exit 0 on
// SIGTERM: under AddressSanitizer a leak or memory error makes that exit code
// non-zero, so the clean-up check doubles as a sanitizer check.
//
// Binaries come from $FLEET_BIN_DIR (default <repo>/build).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, openSync, closeSync, writeSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export { sleep };

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN_DIR = path.resolve(process.env.FLEET_BIN_DIR || path.join(REPO, 'build'));
export const bin = (name) => path.join(BIN_DIR, name);

// The protocol version fleetd speaks by default.
export const PROTOCOL_VERSION = '2025-11-25';

// Generous bounds for waiting on things that should happen promptly. They
// only decide when a test gives up; nothing asserts on speed.
export const WAIT_MS = 15000;
const START_MS = 30000;
const STOP_MS = 20000;
const LOG_CAP = 1 << 20;

// Every child process any test started, so a crashed test run leaves none.
const allChildren = new Set();
function track(child) {
  allChildren.add(child);
  child.once('exit', () => allChildren.delete(child));
  return child;
}
function killStragglers() {
  for (const child of allChildren) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}
process.once('exit', killStragglers);
after(killStragglers);

// A sanitizer report in a child's stderr is a failure even when its exit code
// could not be observed.
const SANITIZER_RE = /(ERROR: (Address|Leak|Undefined|Thread)Sanitizer|runtime error:|SUMMARY: \w+Sanitizer)/;
// What fleetd logs (FLEET_CHECK_RESULTS=1) for a tool result that does not
// match its tool's outputSchema.
export const OFF_SCHEMA_RE = /result is off its outputSchema/;

function tail(s, n = 6000) {
  return s.length > n ? '…' + s.slice(-n) : s;
}

// Environment for child processes: ours, minus anything that would point a
// child at a real fleet or a real tmux, plus XDG dirs inside the test dir.
function childEnv(dir, extra = {}) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (/^(FLEET_|TMUX|HERDR_)/.test(k)) delete env[k];
  }
  env.XDG_STATE_HOME = path.join(dir, 'xdg-state');
  env.XDG_RUNTIME_DIR = path.join(dir, 'xdg-run');
  env.XDG_CONFIG_HOME = path.join(dir, 'xdg-config');
  // fleetd checks every structured tool result against its outputSchema
  // and logs OFF_SCHEMA_RE when one is off; cleanup() fails the test then.
  env.FLEET_CHECK_RESULTS = '1';
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined || v === null) delete env[k];
    else env[k] = String(v);
  }
  return env;
}

function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

/** Polls fn until it returns a truthy value; returns it, or throws after timeout ms. */
export async function waitFor(fn, { timeout = WAIT_MS, interval = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await sleep(interval);
  }
}

/** Tries to connect to a Unix socket once; resolves true/false. */
export function canConnect(sockPath) {
  return new Promise((resolve) => {
    const s = net.createConnection(sockPath);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * Calls a tool and returns the whole CallToolResult. A JSON-RPC error
 * rejects (McpError with .code).
 */
export async function callToolRaw(client, name, args = {}, { timeout = 90000 } = {}) {
  return client.callTool({ name, arguments: args }, undefined, { timeout });
}

/**
 * Calls a tool that must succeed. Checks that structuredContent is present
 * and equals the JSON in the text content, and returns structuredContent.
 */
export async function callTool(client, name, args = {}, opts = {}) {
  const res = await callToolRaw(client, name, args, opts);
  const text = Array.isArray(res.content) ? res.content.find((c) => c.type === 'text') : undefined;
  assert.ok(
    !res.isError,
    `${name}(${JSON.stringify(args)}) failed: ${text ? text.text : JSON.stringify(res)}`
  );
  assert.ok(res.structuredContent, `${name} returned no structuredContent: ${JSON.stringify(res)}`);
  assert.ok(text, `${name} returned no text content: ${JSON.stringify(res)}`);
  let parsed;
  try {
    parsed = JSON.parse(text.text);
  } catch (e) {
    assert.fail(`${name} text content is not JSON: ${text.text}`);
  }
  assert.deepEqual(parsed, res.structuredContent, `${name}: text content differs from structuredContent`);
  return res.structuredContent;
}

/** The text of a tool result's first text content ('' if none). */
export function resultText(res) {
  const c = Array.isArray(res?.content) ? res.content.find((x) => x.type === 'text') : undefined;
  return c ? c.text : '';
}

/** A raw newline-delimited JSON-RPC connection to fleetd's socket. */
export class RawConn {
  constructor(sockPath) {
    this.sock = net.createConnection(sockPath);
    this.buf = '';
    this.queue = [];
    this.waiters = [];
    this.nextId = 1;
    this.isClosed = false;
    this.error = null;
    this.connected = new Promise((resolve, reject) => {
      this.sock.once('connect', resolve);
      this.sock.once('error', reject);
    });
    // A failed connect is reported through `connected`; keep it from also
    // being an unhandled rejection when nobody awaits it.
    this.connected.catch(() => {});
    this.closedP = new Promise((resolve) => this.sock.once('close', resolve));
    this.sock.on('error', (e) => {
      this.error = e;
    });
    this.sock.setEncoding('utf8');
    this.sock.on('data', (d) => {
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        if (line.trim() === '') continue;
        let v;
        try {
          v = JSON.parse(line);
        } catch {
          v = new Error(`fleetd sent a line that is not JSON: ${line.slice(0, 200)}`);
        }
        this.push(v);
      }
    });
    this.sock.on('close', () => {
      this.isClosed = true;
      for (const w of this.waiters.splice(0)) w.reject(new Error('connection closed'));
    });
  }

  push(v) {
    const w = this.waiters.shift();
    if (w) w.resolve(v);
    else this.queue.push(v);
  }

  /** Writes a string as is (add '\n' yourself). */
  write(s) {
    return new Promise((resolve) => {
      if (this.sock.destroyed) return resolve(false);
      this.sock.write(s, (err) => resolve(!err));
    });
  }

  /** Sends a value (or a string) as one line. */
  send(v) {
    return this.write((typeof v === 'string' ? v : JSON.stringify(v)) + '\n');
  }

  /** The next JSON line from fleetd (requests, responses and notifications alike). */
  next(timeout = WAIT_MS) {
    if (this.queue.length) {
      const v = this.queue.shift();
      return v instanceof Error ? Promise.reject(v) : Promise.resolve(v);
    }
    if (this.isClosed) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve, reject) => {
      const w = {
        resolve: (v) => {
          clearTimeout(timer);
          if (v instanceof Error) reject(v);
          else resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new Error(`no line from fleetd within ${timeout} ms`));
      }, timeout);
      this.waiters.push(w);
    });
  }

  /** The next response (a line with no method); notifications in between are skipped. */
  async response(timeout = WAIT_MS) {
    const deadline = Date.now() + timeout;
    for (;;) {
      const v = await this.next(Math.max(1, deadline - Date.now()));
      if (v && typeof v === 'object' && !Array.isArray(v) && 'method' in v) continue;
      return v;
    }
  }

  /** Sends a request and returns its response message (result or error). */
  async request(method, params, timeout = WAIT_MS) {
    const id = this.nextId++;
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    await this.send(msg);
    const res = await this.response(timeout);
    assert.equal(res.id, id, `response id mismatch for ${method}: ${JSON.stringify(res)}`);
    return res;
  }

  notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    return this.send(msg);
  }

  /** initialize + notifications/initialized; returns the initialize result. */
  // identity: { name, role, groups } as fleet-mcp sends it in
  // params._meta["fleet/identity"]; without it the session is anonymous.
  async initialize({ protocolVersion = PROTOCOL_VERSION, name = 'raw-test', identity, extra = {} } = {}) {
    const params = {
      protocolVersion,
      capabilities: {},
      clientInfo: { name, version: '0.0.0' },
      ...extra,
    };
    if (identity) params._meta = { 'fleet/identity': identity };
    const res = await this.request('initialize', params);
    assert.ok(res.result, `initialize failed: ${JSON.stringify(res)}`);
    await this.notify('notifications/initialized');
    return res.result;
  }

  /** Resolves when fleetd closed the connection; rejects after timeout ms. */
  async closed(timeout = WAIT_MS) {
    let timer;
    const t = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`connection still open after ${timeout} ms`)), timeout);
    });
    try {
      await Promise.race([this.closedP, t]);
    } finally {
      clearTimeout(timer);
    }
  }

  destroy() {
    this.sock.destroy();
  }
}

/** One test's world: a temp dir, a fleetd, its clients. */
export class Fleet {
  constructor(label = 'test') {
    this.label = label;
    this.dir = mkdtempSync('/tmp/fl-');
    this.stateDir = path.join(this.dir, 'state');
    this.socket = path.join(this.dir, 'fleetd.sock');
    this.fleetd = null;
    this.fleetdLog = '';
    this.fleetdRuns = 0;
    this.clients = []; // { name, client, transport, proc, stderr }
    this.raws = [];
    this.others = []; // other children (fleetctl, tmux)
    this.notes = [];
  }

  env(extra = {}) {
    return childEnv(this.dir, extra);
  }

  /**
   * Starts fleetd and waits until its socket accepts connections.
   * opts.config: an object written to <dir>/config.json and passed with
   * --config. opts.args: extra arguments. opts.env: extra environment.
   * opts.flags: false to pass state dir and socket through the environment
   * (FLEET_STATE_DIR, FLEET_SOCKET) instead of flags. opts.wrap: a command
   * that runs fleetd by exec (e.g. ['prlimit', '--nofile=64:64']).
   */
  async startFleetd(opts = {}) {
    assert.equal(this.fleetd, null, 'fleetd already running in this test');
    const args = [];
    const extraEnv = { ...(opts.env || {}) };
    if (opts.flags === false) {
      extraEnv.FLEET_STATE_DIR = this.stateDir;
      extraEnv.FLEET_SOCKET = this.socket;
    } else {
      args.push('--state-dir', this.stateDir, '--socket', this.socket);
    }
    if (opts.config) {
      const cfg = path.join(this.dir, 'config.json');
      writeFileSync(cfg, JSON.stringify(opts.config, null, 2));
      args.push('--config', cfg);
    }
    args.push(...(opts.args || []));
    this.fleetdRuns += 1;
    this.fleetdLog += `\n=== fleetd run ${this.fleetdRuns}: fleetd ${args.join(' ')}\n`;
    const wrap = opts.wrap || [];
    const child = track(
      spawn(wrap.length ? wrap[0] : bin('fleetd'), [...wrap.slice(1), ...(wrap.length ? [bin('fleetd')] : []), ...args], {
        env: this.env(extraEnv),
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    );
    this.fleetd = child;
    // All of it also goes to fleetd.log in the test dir (kept with FLEET_KEEP_TMP=1),
    // as long as that file takes it (a test may fill or close off the dir).
    let logFd = -1;
    try {
      logFd = openSync(path.join(this.dir, 'fleetd.log'), 'a');
    } catch {
      // no file log; fleetdLog still has it
    }
    const logEnd = () => {
      if (logFd >= 0) closeSync(logFd);
      logFd = -1;
    };
    child.on('close', logEnd);
    const append = (d) => {
      try {
        if (logFd >= 0) writeSync(logFd, d);
      } catch {
        logEnd();
      }
      this.fleetdLog += d;
      if (this.fleetdLog.length > LOG_CAP) this.fleetdLog = this.fleetdLog.slice(-LOG_CAP / 2);
    };
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    let spawnError = null;
    child.once('error', (e) => {
      spawnError = e;
    });
    const deadline = Date.now() + START_MS;
    for (;;) {
      if (spawnError) {
        this.fleetd = null;
        throw new Error(`cannot start ${bin('fleetd')}: ${spawnError.message}`);
      }
      if (child.exitCode !== null || child.signalCode !== null) {
        this.fleetd = null;
        throw new Error(
          `fleetd exited during start (code ${child.exitCode}, signal ${child.signalCode}); its output is below`
        );
      }
      if (await canConnect(this.socket)) return child;
      if (Date.now() > deadline) {
        throw new Error(`fleetd socket ${this.socket} not accepting after ${START_MS} ms; its output is below`);
      }
      await sleep(25);
    }
  }

  fleetdAlive() {
    return !!this.fleetd && this.fleetd.exitCode === null && this.fleetd.signalCode === null;
  }

  /** SIGTERM; asserts a clean exit with status 0 (the sanitizer verdict too). */
  async stopFleetd() {
    const child = this.fleetd;
    assert.ok(child, 'fleetd is not running');
    this.fleetd = null;
    if (child.exitCode !== null || child.signalCode !== null) {
      assert.fail(
        `fleetd had already exited (code ${child.exitCode}, signal ${child.signalCode}); its output is below`
      );
    }
    child.kill('SIGTERM');
    const r = await waitExit(child, STOP_MS);
    if (!r) {
      child.kill('SIGKILL');
      await waitExit(child, STOP_MS);
      assert.fail(`fleetd did not exit within ${STOP_MS} ms of SIGTERM; its output is below`);
    }
    assert.ok(
      r.code === 0 && r.signal === null,
      `fleetd exited with code ${r.code} signal ${r.signal} after SIGTERM (want 0); its output is below`
    );
    assert.ok(!SANITIZER_RE.test(this.fleetdLog), 'sanitizer report in the fleetd output below');
  }

  /** kill -9 fleetd and wait until it is gone. */
  async kill9() {
    const child = this.fleetd;
    assert.ok(child, 'fleetd is not running');
    this.fleetd = null;
    child.kill('SIGKILL');
    await waitExit(child, STOP_MS);
  }

  /**
   * An MCP client (the SDK) connected through fleet-mcp, with identity from
   * the environment. opts.role (default "worker"), opts.groups (array or comma
   * string), opts.env (extra environment for fleet-mcp, e.g. TMUX_PANE).
   * Rejects like Client.connect() does; the error carries .stderr.
   */
  async mcpClient(name, opts = {}) {
    const groups = Array.isArray(opts.groups) ? opts.groups.join(',') : opts.groups;
    const env = this.env({
      FLEET_SOCKET: this.socket,
      FLEET_NAME: name,
      FLEET_ROLE: opts.role || 'worker',
      FLEET_GROUPS: groups,
      ...(opts.env || {}),
    });
    const transport = new StdioClientTransport({
      command: bin('fleet-mcp'),
      args: [],
      env,
      stderr: 'pipe',
    });
    const rec = { name, transport, client: null, proc: null, stderr: '' };
    // The SDK keeps the child private; the harness needs it to be sure it is
    // gone at the end and to read its exit status.
    const origStart = transport.start.bind(transport);
    transport.start = async () => {
      await origStart();
      rec.proc = transport._process || null;
      if (rec.proc) track(rec.proc);
    };
    transport.stderr.setEncoding('utf8');
    transport.stderr.on('data', (d) => {
      rec.stderr += d;
      if (rec.stderr.length > LOG_CAP) rec.stderr = rec.stderr.slice(-LOG_CAP / 2);
    });
    const client = new Client({ name: `fleet-test-${name}`, version: '0.0.0' }, { capabilities: {} });
    rec.client = client;
    this.clients.push(rec);
    try {
      await client.connect(transport, { timeout: WAIT_MS * 2 });
    } catch (e) {
      if (rec.proc) await waitExit(rec.proc, 5000);
      e.stderr = rec.stderr;
      throw e;
    }
    return client;
  }

  clientRecord(client) {
    return this.clients.find((r) => r.client === client);
  }

  /** The fleet-mcp stderr of a client (for diagnostics). */
  clientStderr(client) {
    return this.clientRecord(client)?.stderr ?? '';
  }

  /** Closes a client (fleet-mcp sees stdin EOF) and waits until fleet-mcp is gone. */
  async closeClient(client) {
    const rec = this.clientRecord(client);
    await client.close();
    if (rec && rec.proc) {
      const r = await waitExit(rec.proc, 10000);
      if (!r) rec.proc.kill('SIGKILL');
    }
    if (rec) {
      rec.closed = true;
      assert.ok(!SANITIZER_RE.test(rec.stderr), `sanitizer report in fleet-mcp (${rec.name}):\n${tail(rec.stderr)}`);
    }
  }

  /** A raw connection to the socket, already connected. */
  async rawConn() {
    const c = new RawConn(this.socket);
    this.raws.push(c);
    await c.connected;
    return c;
  }

  /**
   * Runs fleetctl with `--socket <this socket>` in front of args (unless
   * opts.noSocket). Resolves { code, signal, stdout, stderr }.
   */
  fleetctl(args, opts = {}) {
    const full = opts.noSocket ? args : ['--socket', opts.socket || this.socket, ...args];
    return this.run(bin('fleetctl'), full, opts);
  }

  /** Runs a program to completion; resolves { code, signal, stdout, stderr }. */
  run(cmd, args, opts = {}) {
    const child = track(
      spawn(cmd, args, { env: this.env(opts.env || {}), stdio: ['ignore', 'pipe', 'pipe'] })
    );
    this.others.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timeout = opts.timeout ?? 60000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`${path.basename(cmd)} ${args.join(' ')} did not finish in ${timeout} ms\n${stderr}`));
      }, timeout);
      child.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        if (SANITIZER_RE.test(stderr)) {
          reject(new Error(`sanitizer report from ${path.basename(cmd)} ${args.join(' ')}:\n${tail(stderr)}`));
          return;
        }
        resolve({ code, signal, stdout, stderr });
      });
    });
  }

  /** Diagnostics appended to a failing test's error. */
  diagnostics() {
    let s = `\n--- test dir ${this.dir}\n--- fleetd output:${tail(this.fleetdLog, 12000) || ' (none)'}\n`;
    for (const r of this.clients) {
      if (r.stderr) s += `--- fleet-mcp (${r.name}) stderr:\n${tail(r.stderr, 3000)}\n`;
    }
    for (const n of this.notes) s += `--- ${n}\n`;
    return s;
  }

  /** Ends everything this test started. Throws if fleetd did not exit 0 on SIGTERM. */
  async cleanup() {
    const problems = [];
    for (const r of this.clients) {
      if (r.closed) continue;
      try {
        await r.client.close();
      } catch {
        // the session may already be broken
      }
      if (r.proc) {
        const x = await waitExit(r.proc, 5000);
        if (!x) r.proc.kill('SIGKILL');
      }
      if (SANITIZER_RE.test(r.stderr)) problems.push(`sanitizer report in fleet-mcp (${r.name}):\n${tail(r.stderr)}`);
    }
    for (const c of this.raws) c.destroy();
    for (const ch of this.others) {
      if (ch.exitCode === null && ch.signalCode === null) ch.kill('SIGKILL');
    }
    if (this.fleetd) {
      try {
        await this.stopFleetd();
      } catch (e) {
        problems.push(e.message);
      }
    }
    if (OFF_SCHEMA_RE.test(this.fleetdLog)) {
      const line = this.fleetdLog.split('\n').find((l) => OFF_SCHEMA_RE.test(l));
      problems.push(`a tool result did not match its outputSchema: ${line}`);
    }
    if (!process.env.FLEET_KEEP_TMP) {
      try {
        rmSync(this.dir, { recursive: true, force: true });
      } catch {
        // a leftover temp dir is not a test failure
      }
    }
    if (problems.length) throw new Error(problems.join('\n'));
  }
}

/**
 * Declares a test that gets a fresh Fleet: fn(fleet, t). Whatever happens,
 * every process the test started is ended afterwards; a failing test's error
 * carries fleetd's log and the fleet-mcp stderr. A fleetd that still runs at
 * the end is stopped with SIGTERM and must exit 0.
 */
export function fleetTest(name, opts, fn) {
  if (typeof opts === 'function') {
    fn = opts;
    opts = {};
  }
  return test(name, { timeout: 180000, ...opts }, async (t) => {
    const fleet = new Fleet(name);
    let failure = null;
    try {
      await fn(fleet, t);
    } catch (e) {
      failure = e;
    }
    let cleanupError = null;
    try {
      await fleet.cleanup();
    } catch (e) {
      cleanupError = e;
    }
    if (failure) {
      if (failure instanceof Error) {
        try {
          failure.message += fleet.diagnostics();
        } catch {
          // some errors have read-only messages
        }
        if (cleanupError) failure.message += `\n--- clean-up also failed: ${cleanupError.message}`;
      }
      throw failure;
    }
    if (cleanupError) {
      cleanupError.message += fleet.diagnostics();
      throw cleanupError;
    }
  });
}

/** Nudge configuration used by the tests (fast reminders). */
export function nudgeConfig(enabled = true) {
  return {
    nudge: {
      enabled,
      firstDelayMs: 200,
      backoffMs: 400,
      maxBackoffMs: 3200,
      text: 'fleet: you have messages - call fleet_poll',
      // The nudge tests' panes run `cat`: idle, its cursor line is empty.
      prompt: '^$',
      quietMs: 100,
    },
  };
}

/** `fleetctl --json ARGS` against f's fleetd; asserts exit 0; returns the parsed output. */
export async function fleetctlJson(f, args, opts = {}) {
  const r = await f.fleetctl(['--json', ...args], opts);
  assert.equal(r.code, 0, `fleetctl ${args.join(' ')} exited ${r.code}: ${r.stderr}${r.stdout}`);
  try {
    return JSON.parse(r.stdout);
  } catch {
    assert.fail(`fleetctl ${args.join(' ')} printed no JSON: ${r.stdout}`);
  }
}

/** Makes a directory (mkdir -p). */
export function mkdirp(p) {
  mkdirSync(p, { recursive: true });
  return p;
}

/** Finds the first value in a JSON tree for which pred is true. */
export function deepFind(v, pred) {
  if (pred(v)) return v;
  if (v && typeof v === 'object') {
    for (const x of Array.isArray(v) ? v : Object.values(v)) {
      const r = deepFind(x, pred);
      if (r !== undefined) return r;
    }
  }
  return undefined;
}

/** The entity named name in a fleet_list result. */
export function entity(list, name) {
  return list.entities.find((e) => e.name === name);
}

/** The caller's own gid in a fleet_list result (self may be a gid or an entity). */
export function selfGid(list) {
  if (typeof list.self === 'string') return list.self;
  if (list.self && typeof list.self === 'object' && list.self.gid) return list.self.gid;
  const e = list.entities.find((x) => x.self === true);
  return e ? e.gid : undefined;
}
