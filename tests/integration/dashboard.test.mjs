// dashboard.test.mjs — fleetd's HTTP endpoint: /metrics after an exchange of
// messages (every line in Prometheus text format, the counters those of
// fleetctl status, a latency histogram filled), the JSON API, the token on
// loopback, and the http.* configuration errors.

import assert from 'node:assert/strict';
import { statSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fleetTest, callTool, bin } from './harness.mjs';
import { dashboardUrl, get, getJson, parseProm, sample } from './dashboard-helpers.mjs';

async function exchange(f) {
  const alice = await f.mcpClient('alice', { role: 'lead' });
  const bob = await f.mcpClient('bob', { role: 'worker' });
  const sending = callTool(alice, 'fleet_send', { to: 'bob', content: 'how far along?', wait_s: 20 });
  const polled = await callTool(bob, 'fleet_poll', { wait_s: 20 });
  assert.equal(polled.messages.length, 1, JSON.stringify(polled));
  await callTool(bob, 'fleet_reply', { to: 'alice', content: 'half done', inReplyTo: polled.messages[0].msgId });
  const sent = await sending;
  assert.equal(sent.status, 'replied', JSON.stringify(sent));
  await callTool(alice, 'fleet_send', { to: 'bob', content: 'one more, no wait' });
  return { alice, bob, sent };
}

async function statusJson(f) {
  const r = await f.fleetctl(['--json', 'status']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

fleetTest('/metrics after an exchange: valid exposition, counters of fleetctl status, a filled histogram', async (f) => {
  await f.startFleetd({ config: { http: { listen: '127.0.0.1:0' } } });
  const { sent } = await exchange(f);
  const d = await dashboardUrl(f);
  assert.equal(d.tokenRequired, false, 'on loopback no token by default');
  assert.equal(d.token, null);

  const before = await statusJson(f);
  const r = await get(d, '/metrics');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const prom = parseProm(await r.text());
  const after = await statusJson(f);

  // Every counter of fleetctl status, as fleet_<name>_total. The MCP layer
  // counts the fleetctl sessions themselves, so a counter that moved between
  // the two status calls must lie between them; every other one is equal.
  const names = Object.keys(after.counters);
  assert.ok(names.length > 30, `status has its counters: ${names.length}`);
  for (const name of names) {
    const v = sample(prom, `fleet_${name}_total`);
    assert.notEqual(v, undefined, `fleet_${name}_total is exposed`);
    assert.equal(prom.families.get(`fleet_${name}_total`).type, 'counter');
    if (before.counters[name] === after.counters[name]) assert.equal(v, after.counters[name], name);
    else assert.ok(v >= before.counters[name] && v <= after.counters[name], `${name}: ${v}`);
  }
  assert.equal(sample(prom, 'fleet_messages_accepted_total'), 3, 'two sends and a reply were accepted');

  // Gauges.
  assert.equal(sample(prom, 'fleet_entities', { role: 'lead', status: 'online' }), 1);
  assert.equal(sample(prom, 'fleet_entities', { role: 'worker', status: 'online' }), 1);
  assert.equal(sample(prom, 'fleet_held_messages'), 1, 'the one-way send waits for bob');
  assert.equal(sample(prom, 'fleet_waiting_calls'), 0);
  assert.equal(sample(prom, 'fleet_broker_link_up'), 0, 'single-host: no broker link');
  for (const g of ['fleet_entities', 'fleet_held_messages', 'fleet_waiting_calls', 'fleet_broker_link_up'])
    assert.equal(prom.families.get(g).type, 'gauge', g);

  // The send→reply latency histogram saw the replied send.
  const h = prom.families.get('fleet_send_reply_latency_seconds');
  assert.equal(h.type, 'histogram');
  assert.equal(sample(prom, 'fleet_send_reply_latency_seconds_count'), 1);
  assert.ok(
    h.samples.some((s) => s.name.endsWith('_bucket') && s.labels.le !== '+Inf' && s.value > 0),
    'a finite bucket holds the observation'
  );
  for (const n of ['fleet_remote_publish_confirm_latency_seconds', 'fleet_injection_latency_seconds'])
    assert.equal(prom.families.get(n)?.type, 'histogram', n);

  // The JSON API.
  const st = await getJson(d, '/api/status');
  assert.equal(st.hostId, after.hostId);
  assert.equal(st.http.listen, d.listen);
  const roster = await getJson(d, '/api/roster');
  assert.deepEqual(roster.entities.map((e) => e.name).sort(), ['alice', 'bob']);
  assert.equal(roster.hostId, after.hostId);
  const flows = (await getJson(d, '/api/flows?limit=10')).flows;
  assert.equal(flows.length, 3, JSON.stringify(flows));
  const send = flows.find((x) => x.msgId === sent.msgId);
  assert.ok(send, 'the replied send is a flow');
  assert.equal(send.kind, 'SEND');
  assert.equal(send.status, 'replied');
  assert.equal(send.traceId, sent.traceId);
  assert.match(send.from, /^alice@/);
  assert.match(send.to, /^bob@/);
  assert.ok(send.latencyS >= 0, JSON.stringify(send));
  assert.equal(flows[0].kind, 'SEND', 'newest first: the one-way send');
  assert.equal(flows[0].status, 'sent');
  assert.equal((await getJson(d, '/api/flows?limit=1')).flows.length, 1);
  assert.equal((await get(d, '/api/flows?limit=0')).status, 400);
  assert.equal((await get(d, '/api/flows?limit=x')).status, 400);
  const trace = await getJson(d, `/api/trace?id=${sent.traceId}`);
  assert.ok(trace.lines.length >= 2, JSON.stringify(trace));
  assert.ok(trace.lines.every((l) => l.includes(sent.traceId)));
  assert.equal((await get(d, '/nothing-here')).status, 404);
  assert.equal((await fetch(d.base + '/metrics', { method: 'POST', body: 'x' })).status, 405);
});

fleetTest('http.requireToken on loopback: no token or a wrong one is 401, the right one 200', async (f) => {
  await f.startFleetd({ config: { http: { listen: '127.0.0.1:0', requireToken: true } } });
  const d = await dashboardUrl(f);
  assert.equal(d.tokenRequired, true);
  const file = path.join(f.stateDir, 'http-token');
  assert.equal(statSync(file).mode & 0o777, 0o600, 'the token file is mode 0600');
  assert.equal(d.token, readFileSync(file, 'utf8').trim(), 'fleetctl dashboard puts the token in the URL');
  assert.match(d.token, /^[0-9a-f]{64}$/);
  const wrong = d.token.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  for (const p of ['/metrics', '/api/status', '/api/roster', '/api/flows', '/nothing-here']) {
    assert.equal((await get(d, p, { token: null })).status, 401, `${p} without a token`);
    assert.equal((await get(d, p, { token: wrong })).status, 401, `${p} with a wrong token`);
    assert.equal((await get(d, p, { token: d.token.slice(0, 10) })).status, 401, `${p} with a short token`);
  }
  assert.equal((await get(d, '/metrics')).status, 200, 'Bearer token');
  assert.equal((await fetch(`${d.base}/api/status?token=${wrong}`)).status, 401);
  assert.equal((await fetch(d.url.replace('/?', '/api/status?'))).status, 200, 'the token as in the printed URL');

  // The same token after a restart: the file is kept.
  await f.stopFleetd();
  await f.startFleetd({ config: { http: { listen: '127.0.0.1:0', requireToken: true } } });
  const d2 = await dashboardUrl(f);
  assert.equal(d2.token, d.token);
  assert.equal((await get(d2, '/api/status')).status, 200);
});

fleetTest('fleetctl dashboard without http says how to turn it on', async (f) => {
  await f.startFleetd();
  const r = await f.fleetctl(['dashboard']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /serves no dashboard: set "http"/);
});

fleetTest('http.* configuration errors name the key', async (f) => {
  const cases = [
    [{ http: 'yes' }, /key "http" must be an object/],
    [{ http: { listen: 'localhost:80' } }, /http\.listen "localhost:80" is not HOST:PORT/],
    [{ http: { listen: '' } }, /key "http\.listen" must be HOST:PORT/],
    [{ http: { requireToken: 'no' } }, /key "http\.requireToken" must be true or false, not a string/],
    [{ http: { port: 1 } }, /port/],
  ];
  for (const [cfg, re] of cases) {
    const file = path.join(f.dir, 'bad.json');
    (await import('node:fs')).writeFileSync(file, JSON.stringify(cfg));
    const r = await f.run(bin('fleetd'), ['--config', file, '--state-dir', f.stateDir, '--socket', f.socket]);
    assert.notEqual(r.code, 0, JSON.stringify(cfg));
    assert.match(r.stderr, re, JSON.stringify(cfg));
  }
});
