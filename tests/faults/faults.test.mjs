// faults.test.mjs — nothing acknowledged is lost, nothing is drained twice,
// while the broker and the gateways are killed under load.
//
// Two gateways (hostA, hostB) on one private RabbitMQ. Two senders (one per
// host) send numbered messages, each to a receiver on its own host or on the
// other, some with a wait; two receivers (one per host) long-poll. At points
// spread over the run, faults strike in a shuffled order:
//   broker-kill   kill -9 of the broker, then a restart on its old data
//   gateway-kill  kill -9 of one fleetd, then a restart on its state dir
//   client-kill   a sender's fleet-mcp killed in the middle of a waiting send
//   disk-alarm    the broker's free-disk limit set above what is free, then back
//   close-conns   rabbitmqctl close_all_connections
// At the end (broker and gateways up again) every message whose send was
// acknowledged (status sent, replied or pending) must have been drained by
// its recipient exactly once; nothing may be drained twice or that was never
// sent; holds, inbox queues and fleet.dlq must be empty; fleetd's RSS bounded.
//
// FLEET_FAULT_PROFILE=short (1,000 messages, 3 faults of each kind; the test
// command runs it) or long (20,000, 20 of each: bash tests/faults/run.sh
// --long). FLEET_FAULT_SEED fixes the random choices (printed at the start).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startBroker, HostFleet, pinAll, waitEntity } from '../integration/broker-harness.mjs';
import { callToolRaw, resultText, sleep, canConnect } from '../integration/harness.mjs';

const PROFILES = {
  short: { messages: 1000, each: 3, timeoutMs: 600000 },
  long: { messages: 20000, each: 20, timeoutMs: 3 * 3600000 },
};
const PROFILE_NAME = process.env.FLEET_FAULT_PROFILE || 'short';
if (!PROFILES[PROFILE_NAME]) throw new Error(`FLEET_FAULT_PROFILE must be short or long, not ${PROFILE_NAME}`);
const PROFILE = { ...PROFILES[PROFILE_NAME] };
const SEED = Number(process.env.FLEET_FAULT_SEED || Math.floor(Math.random() * 1e9));
const ALL_KINDS = ['broker-kill', 'gateway-kill', 'client-kill', 'disk-alarm', 'close-conns'];
// FLEET_FAULT_KINDS=gateway-kill,broker-kill and FLEET_FAULT_EACH=N narrow a
// run to some kinds, N of each (to chase one fault's bug).
const KINDS = process.env.FLEET_FAULT_KINDS ? process.env.FLEET_FAULT_KINDS.split(',') : ALL_KINDS;
for (const k of KINDS) {
  if (!ALL_KINDS.includes(k)) throw new Error(`FLEET_FAULT_KINDS: no fault kind ${k} (${ALL_KINDS.join(', ')})`);
}
if (process.env.FLEET_FAULT_EACH) PROFILE.each = Number(process.env.FLEET_FAULT_EACH);
const ACKED = new Set(['sent', 'replied', 'pending', 'injected']);
const RSS_BOUND_KIB = 128 * 1024;

/** A small seeded generator (mulberry32), so a failing run can be replayed. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An MCP client through fleet-mcp that reconnects when its gateway or its
 * own fleet-mcp went away. */
class Agent {
  constructor(fleet, name, role) {
    this.fleet = fleet;
    this.name = name;
    this.role = role;
    this.client = null;
    this.doing = 'idle'; /* what it is waiting for, for a wedge's report */
  }

  async connect(deadlineMs = 60000) {
    const until = Date.now() + deadlineMs;
    for (;;) {
      if (this.fleet.fleetd && (await canConnect(this.fleet.socket))) {
        try {
          this.client = await this.fleet.mcpClient(this.name, { role: this.role });
          return;
        } catch {
          // fleetd went down again meanwhile: try once more
        }
      }
      if (Date.now() > until) throw new Error(`${this.name}: could not reconnect in ${deadlineMs} ms`);
      await sleep(100);
    }
  }

  /** Drops the client (its fleet-mcp killed if still running). */
  drop() {
    const rec = this.client && this.fleet.clientRecord(this.client);
    if (rec?.proc && rec.proc.exitCode === null) rec.proc.kill('SIGKILL');
    if (rec) rec.closed = true;
    this.client = null;
  }

  /** The tool result, or {transport: error} when the call never got one. */
  async call(tool, args, timeout = 70000) {
    this.doing = `${tool} since ${new Date().toISOString()}`;
    if (!this.client) {
      this.doing = `reconnecting for ${this.doing}`;
      await this.connect();
    }
    try {
      return await callToolRaw(this.client, tool, args, { timeout });
    } catch (e) {
      this.drop();
      return { transport: e };
    } finally {
      this.doing = 'idle';
    }
  }
}

test(`fault suite (${PROFILE_NAME}): exactly once under broker and gateway kills`, { timeout: PROFILE.timeoutMs }, async (t) => {
  const rand = rng(SEED);
  const pick = (arr) => arr[Math.floor(rand() * arr.length)];
  t.diagnostic(`profile ${PROFILE_NAME}, seed ${SEED} (FLEET_FAULT_SEED=${SEED} replays the choices)`);

  const broker = await startBroker();
  const hostA = new HostFleet('hostA', broker, 'faults [hostA]');
  const hostB = new HostFleet('hostB', broker, 'faults [hostB]');
  const hosts = { hostA, hostB };
  const stats = Object.fromEntries(KINDS.map((k) => [k, 0]));
  let failure = null;
  // The load's switches: a failed run turns them off, so its senders and
  // receivers end and the process exits.
  let sending = true;
  let receiving = true;
  try {
    await Promise.all([hostA.startFleetd(), hostB.startFleetd()]);
    await pinAll([hostA, hostB]);

    const ra = new Agent(hostA, 'ra', 'lead');
    const rb = new Agent(hostB, 'rb', 'lead');
    const sa = new Agent(hostA, 'sa', 'worker');
    const sb = new Agent(hostB, 'sb', 'worker');
    for (const a of [ra, rb, sa, sb]) await a.connect();
    for (const [a, name, host] of [
      [sa, 'rb', 'hostB'],
      [sb, 'ra', 'hostA'],
    ]) {
      await waitEntity(a.client, name, host, () => true, { timeout: 20000, what: `${name} seen from ${a.name}` });
    }

    // ---- the ledger ----
    const attempted = new Map(); // content -> recipient name
    const acked = new Set();
    const ackedAs = new Map(); // content -> "msgId status to" (a loss's report)
    const failed = new Set(); // isError: not delivered, or said may-or-may-not
    const failReasons = new Map(); // the start of each error text, counted
    const unknown = new Set(); // no result at all (the client or its gateway died)
    const drained = new Map(); // content -> count
    const strays = [];

    // ---- receivers ----
    const receive = async (agent) => {
      while (receiving) {
        const r = await agent.call('fleet_poll', { wait_s: 1, max: 100 }, 20000);
        if (r.transport || r.isError) {
          await sleep(100);
          continue;
        }
        for (const m of r.structuredContent.messages) {
          if (!m.content.startsWith('m:')) continue;
          drained.set(m.content, (drained.get(m.content) || 0) + 1);
          if (attempted.get(m.content) !== agent.name) strays.push(`${agent.name} got ${m.content}`);
        }
      }
    };
    const receivers = [receive(ra), receive(rb)];

    // ---- senders ----
    let seq = 0;
    // Senders go on past the count until every fault has struck: a fault
    // (a client killed mid-call needs a sender to kill) must never wait for
    // traffic that has already ended.
    let faultsDone = false;
    const killRequests = [];
    const send = async (agent, local, remote) => {
      while (sending && (acked.size < PROFILE.messages || !faultsDone)) {
        const i = seq++;
        const to = rand() < 0.5 ? local : remote;
        const content = `m:${agent.name}:${i}`;
        attempted.set(content, to);
        const kill = killRequests.shift();
        if (kill) {
          // A waiting send (nobody replies), its fleet-mcp killed mid-call.
          const call = agent.call('fleet_send', { to, content, wait_s: 5 });
          await sleep(50 + rand() * 250);
          agent.drop();
          await call;
          unknown.add(content);
          kill();
          continue;
        }
        const wait = rand() < 0.1 ? 0.2 : 0;
        const r = await agent.call('fleet_send', wait ? { to, content, wait_s: wait } : { to, content });
        if (r.transport) {
          unknown.add(content);
          await sleep(100);
        } else if (r.isError) {
          failed.add(content);
          const why = resultText(r).slice(0, 80);
          failReasons.set(why, (failReasons.get(why) || 0) + 1);
          await sleep(100);
        } else {
          assert.ok(ACKED.has(r.structuredContent.status), `send status: ${JSON.stringify(r.structuredContent)}`);
          acked.add(content);
          const sc = r.structuredContent;
          ackedAs.set(content, `${sc.msgId} ${sc.status} to ${to} at ${new Date().toISOString()}`);
        }
      }
    };
    // A sender that throws stops the run at once, with its reason, rather
    // than leaving the fault loop below waiting for acknowledgements.
    let senderFailure = null;
    const senders = [send(sa, 'ra', 'rb'), send(sb, 'rb', 'ra')].map((p) =>
      p.catch((e) => {
        senderFailure ??= e;
      })
    );

    // ---- faults, spread over the run ----
    const faults = [];
    for (const k of KINDS) for (let j = 0; j < PROFILE.each; j++) faults.push(k);
    for (let i = faults.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [faults[i], faults[j]] = [faults[j], faults[i]];
    }
    const strike = {
      'broker-kill': async () => {
        await broker.kill9();
        await sleep(300 + rand() * 1500);
        await broker.restart();
      },
      'gateway-kill': async () => {
        const h = hosts[pick(['hostA', 'hostB'])];
        await h.kill9();
        await sleep(200 + rand() * 800);
        await h.startFleetd();
      },
      'client-kill': async () => {
        let done = false;
        killRequests.push(() => {
          done = true;
        });
        while (!done) {
          if (senderFailure) throw senderFailure;
          await sleep(20);
        }
      },
      'disk-alarm': async () => {
        await broker.ctl(['set_disk_free_limit', String(1e15)]);
        await sleep(1000 + rand() * 2000);
        await broker.ctl(['set_disk_free_limit', '50000000']);
      },
      'close-conns': async () => {
        await broker.ctl(['close_all_connections', 'fault suite']);
      },
    };
    for (let f = 0; f < faults.length; f++) {
      const at = Math.floor(((f + 1) * PROFILE.messages) / (faults.length + 1));
      let last = acked.size;
      let lastAt = Date.now();
      while (acked.size < at) {
        if (senderFailure) throw senderFailure;
        if (acked.size !== last) [last, lastAt] = [acked.size, Date.now()];
        // No acknowledgement for two minutes is a wedge: say where each
        // sender is instead of waiting for the test's timeout.
        assert.ok(
          Date.now() - lastAt < 120000,
          `no send acknowledged for 120 s before fault ${f + 1} (${faults[f]}): ` +
            `${sa.name}: ${sa.doing}; ${sb.name}: ${sb.doing}`
        );
        assert.ok(seq < PROFILE.messages * 20, `too few sends acknowledged: ${acked.size} of ${seq}`);
        await sleep(20);
      }
      // A fault that does not finish is a wedge too: say which, and where
      // the senders are.
      let timer;
      const wedged = new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `fault ${f + 1} (${faults[f]}) did not finish in 150 s; ` +
                  `${sa.name}: ${sa.doing}; ${sb.name}: ${sb.doing}`
              )
            ),
          150000
        );
      });
      try {
        await Promise.race([strike[faults[f]](), wedged]);
      } finally {
        clearTimeout(timer);
      }
      stats[faults[f]]++;
    }
    faultsDone = true;
    await Promise.all(senders);
    if (senderFailure) throw senderFailure;
    sending = false;

    // ---- settle: everything acknowledged drained ----
    const until = Date.now() + 90000;
    const missing = () => [...acked].filter((c) => !drained.has(c));
    while (missing().length && Date.now() < until) await sleep(200);
    // A little longer, for duplicates to show if there are any.
    await sleep(2000);
    receiving = false;
    await Promise.all(receivers);

    t.diagnostic(
      `sent ${seq}: acknowledged ${acked.size}, failed ${failed.size}, unknown ${unknown.size}; ` +
        `drained ${drained.size}; faults ${JSON.stringify(stats)}`
    );
    for (const [why, n] of failReasons) t.diagnostic(`  failed x${n}: ${why}`);
    const lost = missing();
    assert.deepEqual(
      lost.slice(0, 20).map((c) => `${c}: ${ackedAs.get(c)}`),
      [],
      `${lost.length} acknowledged messages were never drained`
    );
    const twice = [...drained].filter(([, n]) => n > 1).map(([c, n]) => `${c} x${n}`);
    assert.deepEqual(twice.slice(0, 20), [], `${twice.length} messages were drained more than once`);
    const unsent = [...drained.keys()].filter((c) => !attempted.has(c));
    assert.deepEqual(unsent, [], 'nothing was drained that was never sent');
    assert.deepEqual(strays.slice(0, 20), [], 'each message reached the recipient it was sent to');

    // ---- nothing stuck ----
    for (const h of [hostA, hostB]) {
      const st = await h.fleetctl(['status', '--json']);
      assert.equal(st.code, 0, st.stderr);
      const s = JSON.parse(st.stdout);
      assert.equal(s.held, 0, `${h.hostId} holds nothing: ${st.stdout}`);
      const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${h.fleetd.pid}/status`, 'utf8'))[1]);
      t.diagnostic(`${h.hostId}: fleetd RSS ${(rss / 1024).toFixed(1)} MiB`);
      assert.ok(rss < RSS_BOUND_KIB, `${h.hostId} fleetd RSS ${rss} KiB is under ${RSS_BOUND_KIB} KiB`);
    }
    // Settled on the broker too (an ack may trail the drain by a moment).
    const gids = {};
    for (const a of [ra, rb, sa, sb]) {
      const r = await a.call('fleet_list', {});
      if (!r.transport && !r.isError) for (const e of r.structuredContent.entities) gids[e.gid] = `${e.name}@${e.host}`;
    }
    let full = [];
    for (let i = 0; i < 50; i++) {
      const queues = await broker.listQueues(['name', 'messages_ready', 'messages_unacknowledged', 'consumers']);
      full = queues
        .filter((q) => q.messages_ready + q.messages_unacknowledged > 0 && (q.name.startsWith('agent.') || q.name === 'fleet.dlq'))
        .map((q) => ({ ...q, owner: gids[q.name.split('.')[1]] }));
      if (!full.length) break;
      await sleep(200);
    }
    assert.deepEqual(full, [], `inboxes and fleet.dlq are empty: ${JSON.stringify(full)}`);
  } catch (e) {
    failure = e;
    sending = false;
    receiving = false;
  }
  const problems = [];
  for (const h of [hostA, hostB]) {
    await h.cleanup().catch((e) => problems.push(`[${h.hostId}] ${e.message}`));
  }
  await broker.stop();
  if (failure) {
    try {
      failure.message += `\n(seed ${SEED})` + [hostA, hostB].map((h) => `\n===== ${h.hostId} =====${h.diagnostics()}`).join('');
    } catch {
      // read-only message
    }
    throw failure;
  }
  if (problems.length) throw new Error(`clean-up failed:\n${problems.join('\n')}`);
});
