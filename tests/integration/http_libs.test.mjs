// http_libs.test.mjs — libcurl and libmicrohttpd are loaded only by a gateway
// that uses them (gateway/http/http_libs.h). Read from fleetd's own
// /proc/PID/maps: with neither "rooms" nor "http" configured, embedded or on
// a broker (where the claims still start), neither library nor GnuTLS is
// mapped; "http" maps libmicrohttpd alone; "rooms" with a listen address maps
// both (rooms.test.mjs pulls rooms with them).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fleetTest, callTool, fleetctlJson, waitFor } from './harness.mjs';
import { useBroker, hostsTest } from './broker-harness.mjs';
import { dashboardUrl, get } from './dashboard-helpers.mjs';

const brokerRef = useBroker();

/** The shared objects fleetd has mapped, by file name. */
function mapped(f) {
  assert.ok(f.fleetdAlive(), 'fleetd is running');
  const maps = readFileSync(`/proc/${f.fleetd.pid}/maps`, 'utf8');
  const libs = new Set();
  for (const line of maps.split('\n')) {
    const m = /\/([^/\s]+\.so[.\d]*)$/.exec(line.trim());
    if (m) libs.add(m[1]);
  }
  return [...libs];
}
const has = (libs, re) => libs.some((l) => re.test(l));
const CURL = /^libcurl\.so/;
const MHD = /^libmicrohttpd\.so/;
const GNUTLS = /^libgnutls\.so/;

fleetTest('http libraries: an embedded gateway without rooms or http maps neither', async (f) => {
  await f.startFleetd();
  const alice = await f.mcpClient('alice');
  await callTool(alice, 'fleet_list', {});
  const libs = mapped(f);
  assert.ok(has(libs, /^libsqlite3\.so/), `the maps were read: ${libs.join(' ')}`);
  for (const re of [CURL, MHD, GNUTLS]) assert.ok(!has(libs, re), `${re} is not mapped: ${libs.join(' ')}`);
});

fleetTest('http libraries: "http" loads libmicrohttpd and serves; libcurl stays unloaded', async (f) => {
  await f.startFleetd({ config: { http: { listen: '127.0.0.1:0' } } });
  const libs = mapped(f);
  assert.ok(has(libs, MHD), `libmicrohttpd is mapped: ${libs.join(' ')}`);
  assert.ok(!has(libs, CURL), `libcurl is not mapped: ${libs.join(' ')}`);
  assert.equal((await get(await dashboardUrl(f), '/metrics')).status, 200);
});

fleetTest('http libraries: "rooms" with a listen address loads both and serves', async (f) => {
  await f.startFleetd({ config: { rooms: { listen: '127.0.0.1:0', syncIntervalS: 3600 } } });
  const libs = mapped(f);
  assert.ok(has(libs, CURL), `libcurl is mapped: ${libs.join(' ')}`);
  assert.ok(has(libs, MHD), `libmicrohttpd is mapped: ${libs.join(' ')}`);
  const rooms = await fleetctlJson(f, ['rooms']);
  assert.match(rooms.listen, /^127\.0\.0\.1:\d+$/);
  assert.equal((await fetch(`http://${rooms.listen}/v1/rooms/${'0'.repeat(64)}`)).status, 404);
});

hostsTest('http libraries: a gateway on a broker without rooms or http maps neither', brokerRef, { hosts: ['hostA'] }, async ({ hostA }) => {
  const alice = await hostA.mcpClient('alice');
  // The claims run over the broker without rooms: the room tools stay degraded.
  // A claim made before the link is up is refused as "broker unreachable", so
  // wait for it: fleetd comes up before its broker link does.
  await waitFor(async () => (await fleetctlJson(hostA, ['status'])).broker?.state === 'up', { what: 'the broker link to be up' });
  assert.equal((await callTool(alice, 'fleet_room_register', { label: '#x' })).degraded, true);
  const c = await callTool(alice, 'fleet_claim', { resource: 'deploy-api', ttl_s: 60 });
  assert.ok(c.status, JSON.stringify(c));
  const libs = mapped(hostA);
  assert.ok(has(libs, /^librabbitmq\.so/), `the broker library is mapped: ${libs.join(' ')}`);
  for (const re of [CURL, MHD, GNUTLS]) assert.ok(!has(libs, re), `${re} is not mapped: ${libs.join(' ')}`);
});
