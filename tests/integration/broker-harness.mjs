// broker-harness.mjs — cross-host tests: a private RabbitMQ and several
// "hosts", each a Fleet (harness.mjs) whose fleetd runs with its own host id
// and the shared broker.
//
//   const brokerRef = useBroker();  // top level of a test file: one private
//                                   // RabbitMQ for the file, stopped in after()
//                                   // (a vhost of the run's shared node when
//                                   // FLEET_TEST_SHARED_BROKER_DIR is set;
//                                   // useBroker({ own: true }) always a node)
//   hostsTest('name', brokerRef, { hosts: ['hostA', 'hostB'] }, async ({ hostA, hostB, broker }, t) => {
//     const alice = await hostA.mcpClient('alice');
//     ...
//   });
//
// The broker is a throwaway node started with tests/rabbitmq.sh in a temp dir
// on a port in 5700-5899 (the dist port is PORT+20000). Each host's fleetd
// gets `--host-id ID --broker URI` and a config file with a short presence
// interval (FAST_PRESENCE_MS), so roster changes show up in about a second.
// Whatever happens, every fleetd and client a test started is ended when it
// finishes (SIGTERM, exit 0 expected, as in harness.mjs), and the broker is
// stopped when the file is done (or, failing that, when the process exits).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, chmodSync, openSync, closeSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Fleet, REPO, callTool, waitFor, sleep } from './harness.mjs';

export const RABBITMQ_SH = path.join(REPO, 'tests', 'rabbitmq.sh');

/** Presence heartbeat the cross-host tests run with; the TTL defaults to 3x. */
export const FAST_PRESENCE_MS = 500;
export const FAST_PRESENCE_TTL_MS = 3 * FAST_PRESENCE_MS;

const PORT_BASE = 5700;
const PORT_SPAN = 200; // 5700-5899; 5699 belongs to someone else
const BROKER_START_MS = 90000;

function tail(s, n = 4000) {
  return s.length > n ? '…' + s.slice(-n) : s;
}

/** Runs a command; resolves { code, signal, stdout, stderr } (never rejects on exit status). */
function run(cmd, args, { timeout = 60000, env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: env || process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(cmd)} ${args.join(' ')} did not finish in ${timeout} ms\n${tail(stderr)}`));
    }, timeout);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Runs a command whose descendants outlive it (rabbitmq.sh start leaves a
 * shell holding copies of its stdout/stderr while the node runs, so waiting
 * for EOF on a pipe would hang): output goes to files, completion is the
 * process's exit. Resolves { code, stdout, stderr }.
 */
export function runDetached(cmd, args, prefix, timeout, env = {}) {
  const outF = `${prefix}.out`;
  const errF = `${prefix}.err`;
  const out = openSync(outF, 'w');
  const err = openSync(errF, 'w');
  const child = spawn(cmd, args, { stdio: ['ignore', out, err], env: { ...process.env, ...env } });
  closeSync(out);
  closeSync(err);
  const read = (f) => {
    try {
      return readFileSync(f, 'utf8');
    } catch {
      return '';
    }
  };
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ code: -1, stdout: read(outF), stderr: `${read(errF)}\n(${cmd} ${args.join(' ')}: no exit within ${timeout} ms)` });
    }, timeout);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout: '', stderr: e.message });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: read(outF), stderr: read(errF) });
    });
  });
}

/** True if nothing listens on 127.0.0.1:port (we could bind it ourselves). */
export function portFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A private RabbitMQ node. Made by startBroker(). */
export class Broker {
  constructor(dir, nodeDir, port, node) {
    this.dir = dir; // temp dir we made (parent of nodeDir)
    this.nodeDir = nodeDir; // DIR given to rabbitmq.sh
    this.port = port;
    this.node = node;
    this.vhost = '/';
    this.uri = `amqp://guest:guest@127.0.0.1:${port}/`;
    this.stopped = false;
    this.appStopped = false;
  }

  /** The URI of this broker's vhost as user:pass (a user the test added). */
  uriAs(user, pass) {
    const v = this.vhost === '/' ? '' : encodeURIComponent(this.vhost);
    return `amqp://${user}:${pass}@127.0.0.1:${this.port}/${v}`;
  }

  /**
   * Runs rabbitmqctl ARGS against this node (through `rabbitmq.sh ctl`,
   * which sets the node name, HOME with the cookie, and the user).
   * Resolves { code, stdout, stderr }; opts.check (default true) throws on a
   * non-zero exit.
   */
  async ctl(args, { check = true, timeout = 60000 } = {}) {
    const r = await run('sh', [RABBITMQ_SH, 'ctl', this.nodeDir, ...args], { timeout });
    if (check && r.code !== 0) {
      throw new Error(`rabbitmqctl ${args.join(' ')} exited ${r.code}:\n${tail(r.stderr || r.stdout)}`);
    }
    return r;
  }

  /** rabbitmqctl ARGS --formatter json, parsed. */
  async ctlJson(args) {
    const r = await this.ctl([...args, '--formatter', 'json']);
    // Some versions print a banner line before the JSON; take from the first '['.
    const s = r.stdout;
    const i = s.indexOf('[');
    try {
      return JSON.parse(i >= 0 ? s.slice(i) : s);
    } catch (e) {
      throw new Error(`rabbitmqctl ${args.join(' ')}: output is not JSON: ${tail(s, 2000)}`);
    }
  }

  /** [{name, type, durable, ...}] */
  listExchanges(fields = ['name', 'type', 'durable', 'auto_delete']) {
    return this.ctlJson(['list_exchanges', ...fields]);
  }

  /** [{name, durable, exclusive, auto_delete, arguments, ...}] */
  listQueues(fields = ['name', 'durable', 'exclusive', 'auto_delete', 'arguments', 'messages']) {
    return this.ctlJson(['list_queues', ...fields]);
  }

  /** Simulates a broker outage: the node stays up, the AMQP app (and every connection) goes. */
  async stopApp() {
    await this.ctl(['stop_app']);
    this.appStopped = true;
  }

  async startApp() {
    await this.ctl(['start_app']);
    this.appStopped = false;
    await this.ctl(['await_startup', '--timeout', '60'], { check: false });
  }

  /** Crashes the node (kill -9): unflushed state is lost, connections drop. */
  async kill9() {
    const r = await run('sh', [RABBITMQ_SH, 'kill9', this.nodeDir], { timeout: 30000 });
    if (r.code !== 0) throw new Error(`rabbitmq.sh kill9 exited ${r.code}: ${tail(r.stderr)}`);
  }

  /** Starts the node again on its old data (after kill9). */
  async restart() {
    const r = await runDetached('sh', [RABBITMQ_SH, 'restart', this.nodeDir], path.join(this.dir, 'restart'), BROKER_START_MS);
    if (r.code !== 0) throw new Error(`rabbitmq.sh restart exited ${r.code}: ${tail(r.stderr)}`);
  }

  /** Stops the node and removes its directory. Idempotent. */
  async stop() {
    if (this.stopped) return;
    this.stopped = true;
    await run('sh', [RABBITMQ_SH, 'stop', this.nodeDir], { timeout: 90000 }).catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
    liveBrokers.delete(this);
  }

  /** Synchronous stop for process exit (best effort). */
  stopSync() {
    if (this.stopped) return;
    this.stopped = true;
    spawnSync('sh', [RABBITMQ_SH, 'stop', this.nodeDir], { stdio: 'ignore', timeout: 60000 });
    try {
      rmSync(this.dir, { recursive: true, force: true });
    } catch {
      // leftovers in /tmp are not worth failing over
    }
  }
}

const liveBrokers = new Set();
process.once('exit', () => {
  for (const b of liveBrokers) b.stopSync();
});

/**
 * Starts a private RabbitMQ on a free port in 5700-5899 and waits until it
 * serves. Tries a few ports if one is taken or the start fails.
 */
export async function startBroker({ attempts = 2 } = {}) {
  const errors = [];
  for (let i = 0; i < attempts; i++) {
    let port;
    for (let j = 0; j < 50; j++) {
      const p = PORT_BASE + Math.floor(Math.random() * PORT_SPAN);
      if ((await portFree(p)) && (await portFree(p + 20000))) {
        port = p;
        break;
      }
    }
    if (!port) throw new Error('no free port in 5700-5899 for a private RabbitMQ');
    const dir = mkdtempSync('/tmp/flmq-');
    // When run as root the node runs as user rabbitmq: it must be able to
    // reach the node dir (rabbitmq.sh hands the node dir itself over).
    chmodSync(dir, 0o755);
    const nodeDir = path.join(dir, 'n');
    const b = new Broker(dir, nodeDir, port, null);
    liveBrokers.add(b);
    const r = await runDetached('sh', [RABBITMQ_SH, 'start', nodeDir, String(port)], path.join(dir, 'start'), BROKER_START_MS);
    if (r.code === 0) {
      b.node = r.stdout.trim().split('\n').pop();
      return b;
    }
    errors.push(`port ${port}: rabbitmq.sh start exited ${r.code}:\n${tail(r.stderr, 3000)}`);
    await b.stop();
  }
  throw new Error(`could not start a private RabbitMQ:\n${errors.join('\n')}`);
}

/**
 * A virtual host of its own on a node that outlives the test file (the
 * node scripts/test.sh starts for the whole run): the file's exchanges,
 * queues, policies and messages are its own, as on a node of its own, but
 * the node is not booted for it. Node-wide things (users, connections, the
 * node's life) are shared: a user a file adds has a name of its own and
 * permissions on the file's vhost (broker.vhost, broker.uriAs), and such a
 * broker refuses stopApp, kill9 and restart; a file that needs them asks
 * useBroker({ own: true }).
 */
export class VhostBroker extends Broker {
  constructor(nodeDir, port, vhost) {
    super(null, nodeDir, port, null);
    this.vhost = vhost;
    this.uri = this.uriAs('guest', 'guest');
  }

  listExchanges(fields = ['name', 'type', 'durable', 'auto_delete']) {
    return this.ctlJson(['list_exchanges', '-p', this.vhost, ...fields]);
  }

  listQueues(fields = ['name', 'durable', 'exclusive', 'auto_delete', 'arguments', 'messages']) {
    return this.ctlJson(['list_queues', '-p', this.vhost, ...fields]);
  }

  refuse(what) {
    throw new Error(`${what} on the shared broker would reach every test file: this file needs useBroker({ own: true })`);
  }

  stopApp() {
    return this.refuse('stop_app');
  }

  startApp() {
    return this.refuse('start_app');
  }

  kill9() {
    return this.refuse('kill -9');
  }

  restart() {
    return this.refuse('a restart');
  }

  /**
   * Leaves the vhost in place: the node and everything in it goes when the
   * run ends, and a delete would cost a rabbitmqctl start per file.
   */
  async stop() {
    this.stopped = true;
  }

  stopSync() {
    this.stopped = true;
  }
}

/**
 * The node given by FLEET_TEST_SHARED_BROKER_DIR (a DIR of `rabbitmq.sh
 * start DIR PORT`; scripts/test.sh sets it for the integration suite), or
 * null when unset.
 */
function sharedNode() {
  const nodeDir = process.env.FLEET_TEST_SHARED_BROKER_DIR;
  if (!nodeDir) return null;
  const port = Number(readFileSync(path.join(nodeDir, 'node'), 'utf8').split('\n')[1]);
  assert.ok(port > 0, `no port in ${nodeDir}/node`);
  return { nodeDir, port };
}

/**
 * A fresh vhost on the shared node, guest allowed everything in it: two
 * rabbitmqctl calls (CLI starts, not a node boot).
 */
export async function startVhostBroker({ nodeDir, port }) {
  const vhost = `t-${process.pid}-${randomBytes(4).toString('hex')}`;
  const b = new VhostBroker(nodeDir, port, vhost);
  await b.ctl(['add_vhost', vhost]);
  await b.ctl(['set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
  return b;
}

/**
 * Call at the top level of a test file: one broker for the file, made in
 * before(), stopped in after(). Returns a ref whose .broker is set once
 * before() ran (tests read ref.broker). With FLEET_TEST_SHARED_BROKER_DIR
 * set it is a vhost of that node (VhostBroker), unless opts.own: a file
 * that stops, kills or restarts its broker, or works on the node as a
 * whole, asks for a node of its own, as every file does without the
 * variable.
 */
export function useBroker({ own = false } = {}) {
  const ref = { broker: null };
  before(
    async () => {
      const shared = own ? null : sharedNode();
      ref.broker = shared ? await startVhostBroker(shared) : await startBroker();
    },
    { timeout: BROKER_START_MS * 2 + 30000 }
  );
  after(
    async () => {
      if (ref.broker) await ref.broker.stop();
    },
    { timeout: 120000 }
  );
  return ref;
}

/** One host: a Fleet whose fleetd runs with --host-id and --broker. */
export class HostFleet extends Fleet {
  constructor(hostId, broker, label = hostId) {
    super(label);
    this.hostId = hostId;
    this.broker = broker;
    this.brokerConfig = {};
  }

  /**
   * Starts this host's fleetd (same state dir on every run, so a restart is
   * the same host). opts.broker: extra keys for the config's "broker" object.
   * Other opts as Fleet.startFleetd (config keys are merged).
   */
  startFleetd(opts = {}) {
    const brokerCfg = {
      uri: this.broker.uri,
      presenceIntervalMs: FAST_PRESENCE_MS,
      ...this.brokerConfig,
      ...(opts.broker || {}),
    };
    const config = { ...(opts.config || {}), broker: brokerCfg };
    // A uri given in opts.broker (say, a list) is the one used: the flag
    // would override the file.
    const args = ['--host-id', this.hostId, ...(opts.broker?.uri ? [] : ['--broker', this.broker.uri]), ...(opts.args || [])];
    return super.startFleetd({ ...opts, config, args });
  }
}

/**
 * Declares a test over several hosts: fn({ [hostId]: HostFleet, hosts: [...],
 * broker }, t). Every host's fleetd is started (opts.start === false to skip),
 * with opts.broker (if given) as extra keys of every host's "broker" config.
 * brokerRef is what useBroker() returned. Everything is cleaned up after,
 * failed or not; a failing test's error carries every host's diagnostics.
 */
/**
 * Pins every host's public key on every other host (fleetctl identity /
 * peer add), as an operator sets up a fleet: unpinned hosts are not trusted.
 */
export async function pinAll(fleets) {
  const ids = {};
  // The hosts are asked side by side; each host's own pins one at a time.
  await Promise.all(
    fleets.map(async (f) => {
      const r = await f.fleetctl(['--json', 'identity']);
      assert.equal(r.code, 0, `fleetctl identity on ${f.hostId}: ${r.stderr}`);
      ids[f.hostId] = JSON.parse(r.stdout).publicKey;
    })
  );
  await Promise.all(
    fleets.map(async (f) => {
      for (const other of fleets) {
        if (other === f) continue;
        const r = await f.fleetctl(['peer', 'add', other.hostId, ids[other.hostId]]);
        assert.equal(r.code, 0, `pin ${other.hostId} on ${f.hostId}: ${r.stderr}`);
      }
    })
  );
  return ids;
}

export function hostsTest(name, brokerRef, opts, fn) {
  if (typeof opts === 'function') {
    fn = opts;
    opts = {};
  }
  const { hosts: hostIds = ['hostA', 'hostB'], start = true, broker: brokerCfg = {}, ...testOpts } = opts;
  return test(name, { timeout: 120000, ...testOpts }, async (t) => {
    const broker = brokerRef.broker;
    assert.ok(broker, 'the private broker did not start (see the before hook)');
    if (broker.appStopped) await broker.startApp(); // a previous test left it stopped
    const fleets = hostIds.map((h) => new HostFleet(h, broker, `${name} [${h}]`));
    for (const f of fleets) f.brokerConfig = { ...brokerCfg };
    const world = { broker, hosts: fleets };
    for (const f of fleets) world[f.hostId] = f;
    let failure = null;
    try {
      if (start) {
        await Promise.all(fleets.map((f) => f.startFleetd()));
        await pinAll(fleets);
      }
      await fn(world, t);
    } catch (e) {
      failure = e;
    }
    const cleanupErrors = [];
    if (broker.appStopped) {
      // fleetd should exit fine either way, but leave the broker as found.
      await broker.startApp().catch((e) => cleanupErrors.push(`broker start_app: ${e.message}`));
    }
    await Promise.all(
      fleets.map((f) =>
        f.cleanup().catch((e) => {
          cleanupErrors.push(`[${f.hostId}] ${e.message}`);
        })
      )
    );
    const diag = () => fleets.map((f) => `\n===== ${f.hostId} =====${f.diagnostics()}`).join('');
    if (failure) {
      if (failure instanceof Error) {
        try {
          failure.message += diag();
          if (cleanupErrors.length) failure.message += `\n--- clean-up also failed:\n${cleanupErrors.join('\n')}`;
        } catch {
          // read-only message
        }
      }
      throw failure;
    }
    if (cleanupErrors.length) throw new Error(`clean-up failed:\n${cleanupErrors.join('\n')}${diag()}`);
  });
}

// ---- roster helpers ----------------------------------------------------------

/** The entity named name (on host, if given) in a fleet_list result. */
export function findEntity(list, name, host) {
  return list.entities.find((e) => e.name === name && (host === undefined || e.host === host));
}

/**
 * Polls client's fleet_list until the entity name@host satisfies pred
 * (default: exists); returns { entity, ms } (ms since the call started).
 */
export async function waitEntity(client, name, host, pred = () => true, { timeout = 10000, what } = {}) {
  const t0 = Date.now();
  let last;
  try {
    const entity = await waitFor(
      async () => {
        last = await callTool(client, 'fleet_list', {});
        const e = findEntity(last, name, host);
        return e && pred(e) ? e : null;
      },
      { timeout, interval: 100, what: what || `${name}@${host}` }
    );
    return { entity, ms: Date.now() - t0 };
  } catch (e) {
    e.message += `\nlast fleet_list: ${JSON.stringify(last)}`;
    throw e;
  }
}

/** Waits until client sees name@host with the given status. */
export function waitStatus(client, name, host, status, opts = {}) {
  return waitEntity(client, name, host, (e) => e.status === status, {
    what: `${name}@${host} to read ${status}`,
    ...opts,
  });
}

export { sleep };
