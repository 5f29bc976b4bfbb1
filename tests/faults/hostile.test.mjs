// hostile.test.mjs — 200 hostile clients on fleetd's socket at once, and a
// well-behaved client that must hardly notice.
//
// One fleetd, no broker. A steady client (initialized, with an identity)
// repeats fleet_list, fleet_send to a local peer and the peer's fleet_poll,
// timing every call. First a quiet run (nobody else connected), then the same
// workload while two child processes (hostile-clients.mjs) keep 200 hostile
// clients busy: garbage and half lines, 1 MiB lines, lines over FL_MAX_LINE,
// 2000-deep nesting, invalid UTF-8, tool calls cancelled or abandoned
// mid-wait, and readers that flood pings and never read. The load comes from
// other processes so that what is measured is fleetd, not this test's own
// event loop.
//
// Checks: the steady client's p99 latency under the hostile load is at most
// 10 × its quiet p99 (a ratio against baselines taken in the same run, same
// process, same fleetd: the worse of a quiet run before and one after; the
// quiet p99 is floored at QUIET_FLOOR_MS, so a sub-millisecond quiet run does
// not make the bound meaningless); every message it sent was drained exactly
// once; fleetd's RSS stays within RSS_DURING_EXTRA_KIB of its quiet size
// while the hostile clients are there and comes back within
// RSS_AFTER_EXTRA_KIB once they are gone; fleetd is
// alive and its counters of unparsable and oversize lines went up.

import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { setPriority } from 'node:os';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fleetTest, sleep, waitFor, REPO } from '../integration/harness.mjs';

const ITERATIONS = 200; // × 3 calls = 600 samples per run
// The bound is a starvation check, not a latency target: a loop that let
// the hostile clients take its turns (before it bounded its work per
// iteration) put the steady client at 80 × its quiet p99, while a fleetd
// that works as it should measures 1.5–3.3 × on a shared 2-core machine
// (the spread is the scheduler's: the hostile processes and fleetd's
// thread pool compete for the same cores). 10 × fails the first and leaves
// the second room. Under AddressSanitizer every allocation and copy on the
// loop thread costs several times more, the hostile clients' (4 MiB
// buffers, session churn) far more than the steady client's, so the same
// load takes most of a core: a sanitizer build is held to 20 ×.
const RATIO = 10;
const RATIO_SANITIZED = 20;
// The floor for the quiet p99. The hostile load necessarily adds runnable
// threads (its two processes, fleetd's thread pool parsing the 1 MiB
// lines); on a small, shared machine a thread that is ready then waits a
// few milliseconds for a core now and then, whatever fleetd does. A bound
// below that would measure the kernel's scheduler, not fleetd.
const QUIET_FLOOR_MS = 2;
// The mix: 200 clients, split over two child processes.
const MIX = { garbage: 30, bigline: 16, oversize: 14, deep: 30, badutf8: 30, cancel: 50, slowreader: 30 };
// While they are connected fleetd may hold, by its own caps, above its
// quiet size: FL_OUTQ_PAUSE (1 MiB) of unread answers per slow reader
// (30 MiB), the unfinished part of an oversize line until it passes
// FL_MAX_LINE (14 × 4 MiB), a 1 MiB line's buffer, rounded up to 2 MiB, per
// bigline client (32 MiB), and the thread pool's parses of 1 MiB lines (4
// at once, about 4 MiB each). That is 134 MiB; the bound adds 10 MiB for
// the sessions themselves.
const RSS_DURING_EXTRA_KIB = 144 * 1024;
// Once they are gone fleetd gives the memory back: it must come back to
// within 16 MiB of its quiet size.
// AddressSanitizer's allocator keeps freed blocks in its own caches (and
// has no malloc_trim), 60–70 MiB of them here: there the bound is 96 MiB,
// which still fails a fleetd that kept the hostile clients' buffers.
const RSS_AFTER_EXTRA_KIB = 16 * 1024;
const RSS_AFTER_EXTRA_SANITIZED_KIB = 96 * 1024;

/** CPU seconds (user + system) pid has used so far. */
const cpuS = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
};
const rssKiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99), max: s[s.length - 1] };
}

const fmt = (x) => `n=${x.n} p50=${x.p50.toFixed(2)} p90=${x.p90.toFixed(2)} p99=${x.p99.toFixed(2)} max=${x.max.toFixed(2)} ms`;

async function counters(f) {
  const st = await f.fleetctl(['status', '--json']);
  assert.equal(st.code, 0, st.stderr);
  return JSON.parse(st.stdout).counters;
}

/** The steady workload: ITERATIONS × (fleet_list, fleet_send, fleet_poll), each timed. */
async function steadyRun(steady, peer, label, drained) {
  const samples = [];
  const call = async (conn, name, args) => {
    const t0 = process.hrtime.bigint();
    const r = await conn.request('tools/call', { name, arguments: args }, 30000);
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    assert.ok(r.result && !r.result.isError, `${label}: ${name}: ${JSON.stringify(r).slice(0, 400)}`);
    return r.result.structuredContent;
  };
  for (let i = 0; i < ITERATIONS; i++) {
    const list = await call(steady, 'fleet_list', {});
    assert.ok(list.entities.some((e) => e.name === 'steady-peer'), `${label}: the peer is listed`);
    const content = `${label}-${i}`;
    const sent = await call(steady, 'fleet_send', { to: 'steady-peer', content });
    assert.equal(sent.status, 'sent', `${label}: send ${i}`);
    const polled = await call(peer, 'fleet_poll', {});
    for (const m of polled.messages) drained.push(m.content);
  }
  return samples;
}

function startLoad(f, mix) {
  const kinds = Object.entries(mix);
  const halves = [[], []];
  for (const [k, n] of kinds) {
    halves[0].push(`${k}=${Math.ceil(n / 2)}`);
    halves[1].push(`${k}=${Math.floor(n / 2)}`);
  }
  return halves.map((specs) => {
    const child = fork(path.join(REPO, 'tests/faults/hostile-clients.mjs'), [f.socket, ...specs], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    f.others.push(child);
    // Niced: on a small machine the load's own CPU use must not be what
    // slows the steady client down (the two compete for the same cores).
    try {
      setPriority(child.pid, 10);
    } catch {
      // not allowed: run at the same priority
    }
    const h = { child, ready: null, stats: null, errors: [] };
    h.settled = new Promise((resolve) => child.on('message', (m) => m.settled && resolve()));
    h.ready = new Promise((resolve, reject) => {
      child.on('message', (m) => {
        if (m.ready) resolve();
        if (m.error) h.errors.push(m.error);
        if (m.stats) h.stats = m.stats;
      });
      child.once('exit', (code) => reject(new Error(`hostile load process exited early (${code})`)));
    });
    h.ready.catch(() => {});
    h.stop = async () => {
      if (child.exitCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.send('stop');
      await Promise.race([gone, sleep(10000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    };
    return h;
  });
}

fleetTest('200 hostile clients at once: the steady client keeps its latency', { timeout: 120000 }, async (f, t) => {
  // Under AddressSanitizer freed memory sits in a quarantine (256 MiB by
  // default) and goes back to the system only when asked to: keep both
  // small so RSS says what fleetd holds. (Ignored by other builds.)
  const asan = [process.env.ASAN_OPTIONS, 'quarantine_size_mb=8', 'allocator_release_to_os_interval_ms=100']
    .filter(Boolean)
    .join(':');
  // The latency measured is fleetd's own: without the test-only check of
  // every tool result against its outputSchema (FLEET_CHECK_RESULTS), which
  // costs the hostile clients' results more than the quiet runs' and so
  // skews the ratio. The integration suite keeps that check on.
  await f.startFleetd({ env: { ASAN_OPTIONS: asan, FLEET_CHECK_RESULTS: null } });
  const pid = f.fleetd.pid;
  const steady = await f.rawConn();
  await steady.initialize({ identity: { name: 'steady', role: 'worker', groups: [] } });
  const peer = await f.rawConn();
  await peer.initialize({ identity: { name: 'steady-peer', role: 'worker', groups: [] } });
  const drained = [];

  // A short warm-up, so neither run pays for first-use costs.
  await steadyRun(steady, peer, 'warmup', drained);
  const before = await counters(f);
  const quietRss = rssKiB(pid);
  const quiet = summary(await steadyRun(steady, peer, 'quiet', drained));
  t.diagnostic(`quiet:   ${fmt(quiet)}, fleetd RSS ${(quietRss / 1024).toFixed(1)} MiB`);

  const load = startLoad(f, MIX);
  let peakRss = 0;
  const sampler = setInterval(() => {
    try {
      peakRss = Math.max(peakRss, rssKiB(pid));
    } catch {
      // fleetd gone: the checks below say so
    }
  }, 50);
  let hostile;
  try {
    await Promise.all(load.map((h) => h.ready));
    // Measure the hostile clients' steady state: the slow readers' opening
    // flood is paced (fleetd has stopped reading them; how that keeps
    // others served is bad_input.test.mjs's), big lines are in flight.
    const settledIn = Date.now();
    await Promise.race([Promise.all(load.map((h) => h.settled)), sleep(20000)]);
    t.diagnostic(`slow readers paced after ${Date.now() - settledIn} ms`);
    await sleep(500);
    const cpu0 = [pid, ...load.map((h) => h.child.pid)].map(cpuS);
    const w0 = Date.now();
    hostile = summary(await steadyRun(steady, peer, 'hostile', drained));
    const wall = (Date.now() - w0) / 1000;
    const cpu = [pid, ...load.map((h) => h.child.pid)].map((p, i) => ((cpuS(p) - cpu0[i]) / wall).toFixed(2));
    t.diagnostic(`CPU (cores) during the hostile run: fleetd ${cpu[0]}, load processes ${cpu.slice(1).join(', ')}`);
  } finally {
    clearInterval(sampler);
  }
  const during = await counters(f);
  await Promise.all(load.map((h) => h.stop()));
  for (const h of load) assert.deepEqual(h.errors, [], 'the hostile clients ran as written');
  const stats = load.map((h) => h.stats);
  t.diagnostic(`hostile: ${fmt(hostile)}, fleetd RSS peak ${(peakRss / 1024).toFixed(1)} MiB`);
  t.diagnostic(`hostile clients: ${JSON.stringify(stats)}`);

  const sanitized = /libasan/.test(readFileSync(`/proc/${pid}/maps`, 'utf8'));
  const ratio = sanitized ? RATIO_SANITIZED : RATIO;
  const hostileRatio = hostile.p99 / Math.max(quiet.p99, QUIET_FLOOR_MS);
  t.diagnostic(`p99 against the first quiet run: ${hostileRatio.toFixed(2)}`);
  assert.ok(f.fleetdAlive(), 'fleetd is alive');
  const duringBound = quietRss + RSS_DURING_EXTRA_KIB;
  assert.ok(peakRss <= duringBound, `fleetd RSS peaked at ${peakRss} KiB (bound ${duringBound} KiB)`);

  // The rejects were counted.
  const grew = (k) => (during[k] ?? 0) - (before[k] ?? 0);
  t.diagnostic(
    `counters during the hostile run: ${['requests_unparsable', 'requests_oversize', 'sessions_accepted', 'sessions_dropped_slow']
      .map((k) => `${k} +${grew(k)}`)
      .join(', ')}`
  );
  assert.ok(grew('requests_unparsable') >= MIX.garbage + MIX.deep + MIX.badutf8, 'garbage, deep nesting, bad UTF-8 counted');
  assert.ok(grew('requests_oversize') >= MIX.oversize, 'oversize lines counted');
  assert.ok(grew('sessions_accepted') >= 200, 'every hostile client was accepted');

  // Once the hostile clients are gone, fleetd gives their memory back and
  // still serves.
  const afterBound = quietRss + (sanitized ? RSS_AFTER_EXTRA_SANITIZED_KIB : RSS_AFTER_EXTRA_KIB);
  let afterRss = 0;
  await waitFor(() => (afterRss = rssKiB(pid)) <= afterBound, {
    timeout: 10000,
    what: `fleetd RSS back under ${afterBound} KiB (quiet ${quietRss} KiB)`,
  }).catch((e) => {
    e.message += `; it is ${afterRss} KiB`;
    throw e;
  });
  const st = await f.fleetctl(['status']);
  assert.equal(st.code, 0, `fleetctl status: ${st.stderr}`);
  t.diagnostic(`fleetd RSS after: ${(rssKiB(pid) / 1024).toFixed(1)} MiB`);
  assert.ok(f.fleetdAlive(), 'fleetd is alive after the hostile clients left');

  // The quiet run once more, now that the hostile clients are gone: the
  // baseline is the worse of the two, so other work on the machine that
  // slowed the whole test down is not blamed on the hostile clients.
  const quiet2 = summary(await steadyRun(steady, peer, 'quiet2', drained));
  t.diagnostic(`quiet again: ${fmt(quiet2)}`);
  const base = Math.max(quiet.p99, quiet2.p99, QUIET_FLOOR_MS);
  const bound = ratio * base;
  t.diagnostic(
    `p99 ratio ${(hostile.p99 / base).toFixed(2)} against ${base.toFixed(2)} ms (bound ${ratio}${sanitized ? ', sanitizer build' : ''})`
  );
  assert.ok(
    hostile.p99 <= bound,
    `steady p99 under hostile load ${hostile.p99.toFixed(2)} ms > ${ratio} × max(quiet p99s ${quiet.p99.toFixed(2)}, ${quiet2.p99.toFixed(2)} ms, ${QUIET_FLOOR_MS} ms)`
  );

  // Every message the steady client sent was drained once, none twice.
  const want = [];
  for (const label of ['warmup', 'quiet', 'hostile', 'quiet2']) for (let i = 0; i < ITERATIONS; i++) want.push(`${label}-${i}`);
  const tail = await peer.request('tools/call', { name: 'fleet_poll', arguments: {} });
  for (const m of tail.result.structuredContent.messages) drained.push(m.content);
  assert.deepEqual([...drained].sort(), [...want].sort(), 'each message drained exactly once');
});
