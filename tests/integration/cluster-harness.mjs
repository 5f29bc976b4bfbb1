// cluster-harness.mjs — a private 3-node RabbitMQ cluster on loopback.
//
//   const cluster = await startCluster();   // three Broker objects, one cluster
//   cluster.nodes[0].uri ... cluster.uris   // every node's AMQP URI
//   await cluster.nodes[1].kill9();         // crash one node
//   await cluster.stop();                   // every node stopped, dirs removed
//
// The nodes are started with tests/rabbitmq.sh under one shared Erlang
// cookie (FLEET_RMQ_COOKIE), each on its own port in 5700-5899 (dist port
// PORT+20000) and its own data dir; the first boots, the other two boot side
// by side and then join it (`rabbitmq.sh join`). Each node is a Broker of
// broker-harness.mjs, so ctl, listQueues, kill9 and restart work per node.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, mkdirSync, chmodSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Broker, RABBITMQ_SH, runDetached, portFree } from './broker-harness.mjs';

const PORT_BASE = 5700;
const PORT_SPAN = 200;
const NODE_START_MS = 90000;

function tail(s, n = 3000) {
  return s.length > n ? '…' + s.slice(-n) : s;
}

async function freePorts(n) {
  const ports = [];
  for (let j = 0; j < 200 && ports.length < n; j++) {
    const p = PORT_BASE + Math.floor(Math.random() * PORT_SPAN);
    if (ports.includes(p)) continue;
    if ((await portFree(p)) && (await portFree(p + 20000))) ports.push(p);
  }
  if (ports.length < n) throw new Error(`no ${n} free ports in 5700-5899 for a RabbitMQ cluster`);
  return ports;
}

/** A cluster of Broker nodes. Made by startCluster(). */
export class Cluster {
  constructor(dir, nodes) {
    this.dir = dir;
    this.nodes = nodes;
  }

  get uris() {
    return this.nodes.map((b) => b.uri);
  }

  /** The node whose AMQP port is port. */
  byPort(port) {
    return this.nodes.find((b) => b.port === port);
  }

  /** Stops every node and removes the cluster's dir. Idempotent. */
  async stop() {
    await Promise.all(this.nodes.map((b) => b.stop()));
    rmSync(this.dir, { recursive: true, force: true });
    liveClusters.delete(this);
  }

  /** Synchronous stop for process exit (best effort). */
  stopSync() {
    for (const b of this.nodes) b.stopSync();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const liveClusters = new Set();
process.once('exit', () => {
  for (const c of liveClusters) c.stopSync();
});

/** Starts n (default 3) nodes and clusters them; rejects (after cleaning up) if any step fails. */
export async function startCluster({ n = 3 } = {}) {
  const dir = mkdtempSync('/tmp/flcl-');
  chmodSync(dir, 0o755); // the nodes run as user rabbitmq when we are root
  const cookie = randomBytes(16).toString('hex');
  const ports = await freePorts(n);
  const nodes = ports.map((p, i) => new Broker(path.join(dir, `d${i}`), path.join(dir, `d${i}`, 'n'), p, null));
  const cluster = new Cluster(dir, nodes);
  liveClusters.add(cluster);
  try {
    const boot = async (b, i) => {
      // Broker.dir holds the node dir and the logs of its start and restart.
      mkdirSync(b.dir, { mode: 0o755 });
      const r = await runDetached('sh', [RABBITMQ_SH, 'start', b.nodeDir, String(b.port)], path.join(b.dir, 'start'), NODE_START_MS, {
        FLEET_RMQ_COOKIE: cookie,
      });
      if (r.code !== 0) throw new Error(`node ${i} (port ${b.port}): rabbitmq.sh start exited ${r.code}:\n${tail(r.stderr)}`);
      b.node = r.stdout.trim().split('\n').pop();
    };
    await Promise.all(nodes.map(boot));
    for (let i = 1; i < n; i++) {
      const r = await runDetached('sh', [RABBITMQ_SH, 'join', nodes[i].nodeDir, nodes[0].nodeDir], path.join(nodes[i].dir, 'join'), NODE_START_MS);
      if (r.code !== 0) throw new Error(`node ${i} could not join node 0: exit ${r.code}:\n${tail(r.stderr)}`);
    }
    return cluster;
  } catch (e) {
    await cluster.stop().catch(() => {});
    throw e;
  }
}

