// dashboard_page.test.mjs — the embedded dashboard in headless Chromium
// (cdp.mjs) on a two-host fleet: both hosts' agents grouped by host, a new
// agent on the other host shown within 2 s without a reload, a flow's hops
// on a click on its trace id, a screenshot (wide, then narrow and dark).
// And the event stream: 100 clients connecting and leaving leave fleetd's
// RSS within 1 MiB of where it was.

import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { callTool, fleetTest, selfGid, sleep, waitFor } from './harness.mjs';
import { amqpClient, headersFor, readIdentity, sendEnvelope, signEnvelope } from './trust-helpers.mjs';
import { useBroker, hostsTest, pinAll, waitStatus } from './broker-harness.mjs';
import { Browser, CHROMIUM } from './cdp.mjs';
import { dashboardUrl, get, getJson, parseProm, sample } from './dashboard-helpers.mjs';

const brokerRef = useBroker();

// Screenshots outlive the test's own directory (removed after a pass).
const ARTIFACTS = process.env.FLEET_TEST_ARTIFACTS || '/tmp/fleet-test-artifacts';

/** What the page shows: { host: [agent names] } from its roster section. */
const ROSTER_JS = `(() => {
  const out = {};
  for (const h of document.querySelectorAll('#roster h3[data-host]')) {
    const names = [];
    for (let n = h.nextElementSibling; n && n.tagName !== 'H3'; n = n.nextElementSibling)
      for (const a of n.querySelectorAll('.agent')) names.push(a.dataset.name);
    out[h.dataset.host] = names.sort();
  }
  return out;
})()`;

hostsTest('the dashboard shows a two-host fleet and a new agent within 2 s, without a reload', brokerRef, { start: false, timeout: 120000 }, async (world, t) => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is installed (Debian package chromium)`);
  const { hostA, hostB } = world;
  await hostA.startFleetd({ config: { http: { listen: '127.0.0.1:0', requireToken: true } } });
  await hostB.startFleetd();
  await pinAll(world.hosts);
  const alice = await hostA.mcpClient('alice', { role: 'lead' });
  const bob = await hostB.mcpClient('bob');
  await waitStatus(alice, 'bob', 'hostB', 'online');
  const d = await dashboardUrl(hostA);
  assert.ok(d.token, 'requireToken: the printed URL carries the token');

  const browser = await Browser.launch();
  try {
    const page = await browser.newPage(d.url);
    await waitFor(async () => {
      const r = await page.eval(ROSTER_JS);
      return r.hostA?.includes('alice') && r.hostB?.includes('bob');
    }, { timeout: 10000, what: 'alice under hostA and bob under hostB on the page' });
    assert.deepEqual(await page.eval(ROSTER_JS), { hostA: ['alice'], hostB: ['bob'] });
    assert.equal(await page.eval(`document.getElementById('live').textContent`), 'live');
    assert.match(await page.eval(`document.getElementById('broker').textContent`), /broker up/);
    assert.match(await page.eval(`document.getElementById('peers').textContent`), /hostB\s*online/);
    await page.eval('window.__sameDocument = 42');

    // carol joins on hostB: once hostA knows her, the page shows her within 2 s.
    await hostB.mcpClient('carol');
    await waitFor(async () => (await getJson(d, '/api/roster')).entities.some((e) => e.name === 'carol'), {
      what: 'carol in hostA roster',
    });
    const since = Date.now();
    await waitFor(async () => (await page.eval(ROSTER_JS)).hostB?.includes('carol'), {
      timeout: 2000,
      interval: 50,
      what: 'carol on the page within 2 s',
    });
    t.diagnostic(`carol shown ${Date.now() - since} ms after hostA knew her`);
    assert.equal(await page.eval('window.__sameDocument'), 42, 'no reload');

    // A flow, and its hops on a click.
    const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'status?' });
    await waitFor(async () => page.eval(`!!document.querySelector('.trace[data-trace="${sent.traceId}"]')`), {
      timeout: 3000,
      what: 'the send in the flows list',
    });
    await page.eval(`document.querySelector('.trace[data-trace="${sent.traceId}"]').click()`);
    await waitFor(async () => (await page.eval(`document.getElementById('hops').textContent`)).includes(sent.msgId), {
      timeout: 3000,
      what: 'the hops of the trace',
    });
    // The counters show what moved.
    assert.match(await page.eval(`document.getElementById('counters').textContent`), /remote_published/);
    // /metrics of a host with a broker: the link, the peer, the confirm latency.
    const prom = parseProm(await (await get(d, '/metrics')).text());
    assert.equal(sample(prom, 'fleet_broker_link_up'), 1);
    assert.equal(sample(prom, 'fleet_peer_pinned', { host: 'hostB' }), 1);
    assert.equal(sample(prom, 'fleet_peer_up', { host: 'hostB' }), 1);
    assert.ok(sample(prom, 'fleet_peer_last_seen_timestamp_seconds', { host: 'hostB' }) > Date.now() / 1000 - 60);
    assert.ok(sample(prom, 'fleet_remote_publish_confirm_latency_seconds_count') >= 1, 'the send to bob was confirmed');
    assert.ok(sample(prom, 'fleet_remote_published_total') >= 1);
    assert.equal(sample(prom, 'fleet_entities', { role: 'worker', status: 'online' }), 2, 'bob and carol');

    // A forgery dead-lettered on hostB shows in the page's dead letters
    // with the reason, read in the background while the page is open.
    const mq = await amqpClient(world.broker.uri);
    try {
      const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
      const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
      const env = sendEnvelope({ from: aliceGid, to: bobGid, host: 'hostA', fromName: 'alice' });
      const sig = signEnvelope(env, 'signed', readIdentity(hostA.stateDir).privateKey);
      await mq.publish('fleet.msg', bobGid, headersFor(env, sig), 'signed, then changed');
      await waitFor(async () => (await page.eval(`document.getElementById('dlq').textContent`)).includes('signature does not verify'), {
        timeout: 15000,
        what: 'the forgery in the dead letters',
      });
      assert.match(await page.eval(`document.getElementById('dlq').textContent`), new RegExp(env.msgId.slice(0, 8)));
    } finally {
      await mq.conn.close().catch(() => {});
    }

    mkdirSync(ARTIFACTS, { recursive: true });
    const wide = path.join(ARTIFACTS, 'dashboard.png');
    writeFileSync(wide, await page.screenshot());
    await page.send('Emulation.setDeviceMetricsOverride', { width: 380, height: 900, deviceScaleFactor: 1, mobile: true });
    await page.send('Emulation.setEmulatedMedia', { features: [{ name: 'prefers-color-scheme', value: 'dark' }] });
    await sleep(300);
    assert.equal(await page.eval('document.documentElement.scrollWidth <= 380'), true, 'no sideways scrolling when narrow');
    const narrow = path.join(ARTIFACTS, 'dashboard-narrow-dark.png');
    writeFileSync(narrow, await page.screenshot());
    assert.ok(readFileSync(wide).subarray(1, 4).toString() === 'PNG');
    t.diagnostic(`screenshots: ${wide} ${narrow}`);
    console.log(`dashboard screenshots: ${wide} ${narrow}`);
  } finally {
    await browser.close();
  }
});

/** VmRSS of pid in KiB. */
const rssKiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

/** Opens /api/events, waits for the first state event, then leaves. */
function oneClient(base, token) {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/api/events?token=${token}`, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`/api/events: ${res.statusCode}`));
      assert.match(res.headers['content-type'], /^text\/event-stream/);
      let got = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        got += c;
        if (got.includes('event: state\ndata: {')) {
          req.destroy();
          resolve();
        }
      });
    });
    req.on('error', (e) => (e.code === 'ECONNRESET' ? resolve() : reject(e)));
    req.setTimeout(10000, () => reject(new Error('no state event in 10 s')));
  });
}

fleetTest('the event stream survives 100 clients connecting and leaving; RSS comes back within 1 MiB', async (f) => {
  // Freed memory goes straight back to the allocator, so RSS measures what
  // is held, not the sanitizer's quarantine.
  const child = await f.startFleetd({
    config: { http: { listen: '127.0.0.1:0', requireToken: true } },
    env: { ASAN_OPTIONS: 'detect_leaks=1:quarantine_size_mb=0:allocator_release_to_os_interval_ms=10' },
  });
  const d = await dashboardUrl(f);
  await f.mcpClient('alice');
  const round = async (n) => {
    for (let i = 0; i < n; i += 20) await Promise.all(Array.from({ length: Math.min(20, n - i) }, () => oneClient(d.base, d.token)));
  };
  const settled = async () => {
    // Every stream is gone once a keep-alive found its client had left.
    await waitFor(async () => (await getJson(d, '/api/status')).http.eventStreams === 0, { what: 'every stream closed' });
    await sleep(500);
  };
  // Warm up: the allocator's size classes and libmicrohttpd's connection
  // pools reach their steady state over the first rounds.
  await round(100);
  await settled();
  await round(100);
  await settled();
  const before = rssKiB(child.pid);
  await round(100);
  await settled();
  const after = rssKiB(child.pid);
  assert.ok(after - before <= 1024, `RSS ${before} KiB before, ${after} KiB after 100 clients`);
  assert.equal((await getJson(d, '/api/status')).http.eventStreams, 0);
  // Still serving streams and pages after all that.
  await oneClient(d.base, d.token);
  assert.equal((await getJson(d, '/api/roster')).entities[0].name, 'alice');
});
