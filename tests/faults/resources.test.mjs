// resources.test.mjs — fleetd when the machine runs out: file descriptors
// and disk space.
//
// fds: fleetd runs under `prlimit --nofile=64:64`. Connections are opened
// until fleetd refuses one. A refused client gets an error line saying why;
// fleetd logs it once (not once per refusal), counts every refusal
// (sessions_refused_fds), does not spin, and keeps serving the sessions it
// has, store writes included; once connections close, new ones are
// accepted again.
//
// disk: fleetd's state dir is on a 4 MiB tmpfs (needs root and mount: outside
// CI the test is skipped with the reason, under CI=true it fails). With the
// disk filled up, every local send fails with a clear error and is counted
// (store_disk_full), fleetd keeps running, and nothing the sends before had
// accepted is lost; once space is freed, sends work again and every
// accepted message is drained exactly once. Starting fleetd on a full disk
// fails with a clear message and exit status 1, not a crash.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fill, mountTmpfs, unmountTmpfs } from '../integration/disk.mjs';
import { fleetTest, sleep, waitFor, bin, PROTOCOL_VERSION } from '../integration/harness.mjs';

const NOFILE = 64;
const CI = process.env.CI === 'true' || process.env.CI === '1';

const cpuS = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

async function counters(f) {
  const st = await f.fleetctl(['status', '--json']);
  assert.equal(st.code, 0, `fleetctl status: ${st.stderr}`);
  return JSON.parse(st.stdout).counters;
}

/** Connects and waits briefly: 'open' (still connected, nothing said), or
 * {refused: line} when fleetd wrote a line and closed, or 'closed'. */
function probe(sock) {
  return new Promise((resolve) => {
    const s = net.createConnection(sock);
    let buf = '';
    let timer;
    s.setEncoding('utf8');
    s.on('data', (d) => (buf += d));
    s.on('error', () => {});
    s.once('close', () => {
      clearTimeout(timer);
      resolve({ state: buf ? 'refused' : 'closed', line: buf, sock: s });
    });
    s.once('connect', () => {
      // A refused connection is told so at once and closed; a served one
      // then answers a ping. (Writing first could meet a closed socket and
      // lose what fleetd said.)
      timer = setTimeout(() => {
        s.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
        timer = setTimeout(() => resolve({ state: buf.includes('"result"') ? 'open' : 'silent', line: buf, sock: s }), 300);
      }, 100);
    });
  });
}

fleetTest('out of file descriptors: refused clearly, logged once, the rest keeps working', async (f, t) => {
  await f.startFleetd({ wrap: ['prlimit', `--nofile=${NOFILE}:${NOFILE}`] });
  const pid = f.fleetd.pid;
  const steady = await f.rawConn();
  await steady.initialize({ identity: { name: 'steady', role: 'worker', groups: [] } });
  const peer = await f.rawConn();
  await peer.initialize({ identity: { name: 'peer', role: 'worker', groups: [] } });
  const before = await counters(f);

  const held = [];
  const refused = [];
  for (let i = 0; i < NOFILE * 2 && refused.length < 10; i++) {
    const p = await probe(f.socket);
    if (p.state === 'open') held.push(p.sock);
    else refused.push(p);
  }
  t.diagnostic(`${held.length} connections served, then ${refused.length} refused`);
  assert.ok(held.length > 5, 'fleetd served connections up to near its limit');
  assert.equal(refused.length, 10, 'connections past the limit are refused');
  for (const r of refused) {
    assert.equal(r.state, 'refused', `a refused client is told why: ${JSON.stringify(r.line)}`);
    const m = JSON.parse(r.line.trim());
    assert.match(m.error.message, /out of file descriptors/);
  }

  // No spinning: held at the limit, with more clients knocking, fleetd
  // stays nearly idle.
  const c0 = cpuS(pid);
  const t0 = Date.now();
  for (let i = 0; i < 20; i++) {
    const p = await probe(f.socket);
    assert.notEqual(p.state, 'open', 'still at the limit');
    await sleep(25);
  }
  const load = (cpuS(pid) - c0) / ((Date.now() - t0) / 1000);
  t.diagnostic(`fleetd CPU at the limit: ${load.toFixed(2)} cores`);
  assert.ok(load < 0.5, `fleetd spins at the limit (${load.toFixed(2)} cores)`);

  // The sessions it has keep working, the store too (a send is a commit).
  for (let i = 0; i < 5; i++) {
    const r = await steady.request('tools/call', { name: 'fleet_send', arguments: { to: 'peer', content: `at-limit-${i}` } });
    assert.equal(r.result?.structuredContent?.status, 'sent', JSON.stringify(r));
  }
  const polled = await peer.request('tools/call', { name: 'fleet_poll', arguments: {} });
  assert.deepEqual(
    polled.result.structuredContent.messages.map((m) => m.content),
    [0, 1, 2, 3, 4].map((i) => `at-limit-${i}`)
  );

  // Logged once, not per refusal.
  const logged = f.fleetdLog.match(/out of file descriptors/g) || [];
  assert.equal(logged.length, 1, `one log line for ${refused.length + 20} refusals:\n${f.fleetdLog.slice(-3000)}`);

  // Connections close: new ones are accepted again; every refusal counted.
  for (const s of held) s.destroy();
  await waitFor(async () => (await probe(f.socket)).state === 'open', { what: 'a new connection served again' });
  const after = await counters(f);
  const grew = (after.sessions_refused_fds ?? 0) - (before.sessions_refused_fds ?? 0);
  assert.ok(grew >= refused.length + 20, `sessions_refused_fds counts every refusal (+${grew})`);
  const ident = await f.fleetctl(['identity']);
  assert.equal(ident.code, 0, `the node identity is readable: ${ident.stderr}`);
  assert.ok(f.fleetdAlive());
});

// ---- disk full ----------------------------------------------------------------------

function diskTest(name, fn) {
  fleetTest(name, async (f, t) => {
    const mnt = path.join(f.dir, 'disk');
    mkdirSync(mnt);
    const why = mountTmpfs(mnt, '4m');
    if (why) {
      if (CI) assert.fail(`a disk-full test needs a small tmpfs: ${why}`);
      t.skip(`needs root and mount for a tmpfs (${why}); runs under CI=true`);
      return;
    }
    try {
      await fn(f, t, mnt);
    } finally {
      if (f.fleetd) await f.stopFleetd().catch(() => {});
      unmountTmpfs(mnt);
    }
  });
}

diskTest('disk full under the state dir: sends fail clearly, nothing accepted is lost', async (f, t, mnt) => {
  f.stateDir = path.join(mnt, 'state');
  await f.startFleetd();
  const steady = await f.rawConn();
  await steady.initialize({ identity: { name: 'steady', role: 'worker', groups: [] } });
  const peer = await f.rawConn();
  await peer.initialize({ identity: { name: 'peer', role: 'worker', groups: [] } });
  const pad = 'd'.repeat(32 * 1024);
  const send = (content) => steady.request('tools/call', { name: 'fleet_send', arguments: { to: 'peer', content } });
  const accepted = [];
  for (let i = 0; i < 10; i++) {
    const r = await send(`before-${i} ${pad}`);
    assert.equal(r.result?.structuredContent?.status, 'sent', JSON.stringify(r).slice(0, 300));
    accepted.push(`before-${i}`);
  }
  const c0 = await counters(f);

  const filler = path.join(mnt, 'filler');
  const filled = fill(filler);
  t.diagnostic(`filler: ${filled} bytes`);
  const failures = [];
  for (let i = 0; i < 10; i++) {
    const r = await send(`full-${i} ${pad}`);
    if (r.result?.structuredContent?.status === 'sent') accepted.push(`full-${i}`);
    else failures.push(r);
  }
  t.diagnostic(`sends on the full disk: ${failures.length} of 10 refused`);
  assert.equal(failures.length, 10, 'every send on a full disk fails');
  for (const r of failures) {
    assert.ok(r.result?.isError === true || r.error, JSON.stringify(r).slice(0, 300));
    const text = r.error ? r.error.message : r.result.content[0].text;
    assert.match(text, /disk (is )?full|no space/i, `the error says the disk is full: ${text}`);
  }
  // A poll on the full disk must not hand out what it cannot take off the
  // store (else the message is drained again later).
  const drained = [];
  const p = await peer.request('tools/call', { name: 'fleet_poll', arguments: { max: 3 } });
  if (p.result && !p.result.isError) for (const m of p.result.structuredContent.messages) drained.push(m.content.split(' ')[0]);
  t.diagnostic(`a poll on the full disk: ${p.error ? 'error' : p.result.isError ? 'isError' : `${p.result.structuredContent.messages.length} messages`}`);
  assert.ok(f.fleetdAlive(), 'fleetd keeps running on a full disk');
  const c1 = await counters(f);
  assert.ok((c1.store_disk_full ?? 0) - (c0.store_disk_full ?? 0) >= 10, `store_disk_full counted: ${JSON.stringify(c1)}`);
  assert.match(f.fleetdLog, /disk (is )?full|No space/i, 'the log says the disk is full');

  rmSync(filler);
  for (let i = 0; i < 5; i++) {
    const r = await send(`after-${i} ${pad}`);
    assert.equal(r.result?.structuredContent?.status, 'sent', JSON.stringify(r).slice(0, 300));
    accepted.push(`after-${i}`);
  }
  for (let round = 0; round < 10; round++) {
    const r = await peer.request('tools/call', { name: 'fleet_poll', arguments: { max: 100 } });
    const got = r.result.structuredContent.messages;
    if (!got.length) break;
    for (const m of got) drained.push(m.content.split(' ')[0]);
  }
  assert.deepEqual([...drained].sort(), [...accepted].sort(), 'every accepted message drained exactly once');
});

diskTest('starting on a full disk fails with a clear message, not a crash', async (f, t, mnt) => {
  fill(path.join(mnt, 'filler'));
  const r = await f.run(bin('fleetd'), ['--state-dir', path.join(mnt, 'state'), '--socket', f.socket], { timeout: 30000 });
  t.diagnostic(`exit ${r.code}: ${r.stderr.trim().split('\n').slice(-2).join(' | ')}`);
  assert.equal(r.signal, null, `fleetd was killed by ${r.signal}:\n${r.stderr}`);
  assert.equal(r.code, 1, `exit status 1:\n${r.stderr}`);
  assert.match(r.stderr, /disk (is )?full|No space left/i, `the message says the disk is full:\n${r.stderr}`);
});

diskTest('on a full disk an agent that was connected before reconnects (initialize writes nothing unchanged)', async (f, t, mnt) => {
  f.stateDir = path.join(mnt, 'state');
  await f.startFleetd();
  const identity = { name: 'steady', role: 'worker', groups: ['ops'] };
  const first = await f.rawConn();
  await first.initialize({ identity });
  first.destroy();
  fill(path.join(mnt, 'filler'));
  await sleep(200); // fleetd sees the first session end
  const again = await f.rawConn();
  await again.initialize({ identity });
  const l = await again.request('tools/call', { name: 'fleet_list', arguments: {} });
  assert.ok(l.result && !l.result.isError, `the reconnected agent works: ${JSON.stringify(l).slice(0, 300)}`);
  // A changed identity must be written, and the full disk says so.
  again.destroy();
  await sleep(200);
  const changed = await f.rawConn();
  const r = await changed.request('initialize', {
    protocolVersion: PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'raw-test', version: '0.0.0' },
    _meta: { 'fleet/identity': { ...identity, groups: ['ops', 'new'] } },
  });
  t.diagnostic(`a changed identity on the full disk: ${JSON.stringify(r).slice(0, 200)}`);
  assert.ok(r.error, `a change that cannot be recorded is refused: ${JSON.stringify(r).slice(0, 300)}`);
  assert.match(r.error.message, /disk (is )?full|no space|could not record/i);
  assert.ok(f.fleetdAlive(), 'fleetd keeps running');
});
