// http_hostile.test.mjs — fleetd's two HTTP servers (the dashboard/API and
// the rooms server) against the clients a hostile web page or a local
// process would be, over raw loopback sockets:
// - a Host naming anything but the server's own address or a loopback name
//   (DNS rebinding) gets 421 from both, and is counted;
// - a GET with a body gets 400;
// - 80 connections trickling their headers a byte at a time do not keep a
//   fresh dashboard request or a peer's room pull from being answered, and
//   are dropped at the header deadline;
// - 100 Server-Sent-Event clients are served at once, and past the stream
//   budget the next one is answered 503 at once while the API still answers.

import assert from 'node:assert/strict';
import net from 'node:net';
import { callTool, fleetctlJson, fleetTest, sleep, waitFor } from './harness.mjs';

/** fleetd with a dashboard and rooms, each on an ephemeral loopback port. */
async function startHost(fleet, hostId) {
  fleet.hostId = hostId;
  await fleet.startFleetd({
    config: { http: { listen: '127.0.0.1:0' }, rooms: { listen: '127.0.0.1:0', syncIntervalS: 3600 } },
    args: ['--host-id', hostId],
  });
  const st = await fleetctlJson(fleet, ['status']);
  fleet.dash = st.http.listen;
  fleet.roomsAddr = (await fleetctlJson(fleet, ['rooms'])).listen;
  fleet.url = `http://${fleet.roomsAddr}`;
}

const portOf = (addr) => Number(addr.slice(addr.lastIndexOf(':') + 1));

/**
 * Sends raw bytes to 127.0.0.1:port and collects what comes back until the
 * server closes or a whole response (by Content-Length) is in. Resolves
 * { status, head, body, closed } or { error }; never waits past ms.
 */
function rawRequest(port, text, { ms = 10000, until = null } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (extra = {}) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      const s = buf.toString('latin1');
      const i = s.indexOf('\r\n\r\n');
      const head = i >= 0 ? s.slice(0, i) : s;
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({ status: m ? Number(m[1]) : 0, head, body: i >= 0 ? s.slice(i + 4) : '', ...extra });
    };
    const timer = setTimeout(() => finish({ timedOut: true }), ms);
    sock.on('connect', () => sock.write(text));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const s = buf.toString('latin1');
      const i = s.indexOf('\r\n\r\n');
      if (i < 0) return;
      if (until && until(s)) return finish();
      const cl = /\r\ncontent-length: *(\d+)/i.exec(s.slice(0, i));
      if (cl && buf.length - (Buffer.byteLength(s.slice(0, i), 'latin1') + 4) >= Number(cl[1])) finish();
    });
    sock.on('error', (e) => finish({ error: e.code || e.message }));
    sock.on('close', () => finish({ closed: true }));
  });
}

const get = (port, path, host, extra = '') =>
  `GET ${path} HTTP/1.1\r\n${host === null ? '' : `Host: ${host}\r\n`}${extra}Connection: close\r\n\r\n`;

fleetTest('http: a foreign Host gets 421 from the dashboard and the rooms server; own and loopback names are served', async (f) => {
  await startHost(f, 'hostA');
  for (const addr of [f.dash, f.roomsAddr]) {
    const port = portOf(addr);
    const path = addr === f.dash ? '/api/status' : '/v1/rooms/' + '0'.repeat(64);
    for (const host of ['evil.example', `evil.example:${port}`, `attacker.test:${port}`, `127.0.0.1.nip.io:${port}`, `localhost:${port + 1}`, `127.0.0.1`, `[::1]:${port}x`, '']) {
      const r = await rawRequest(port, get(port, path, host));
      assert.equal(r.status, 421, `${addr} Host "${host}": ${r.head}`);
      assert.match(r.body, /misdirected/);
    }
    for (const host of [addr, `localhost:${port}`, `LOCALHOST:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      const r = await rawRequest(port, get(port, path, host));
      assert.notEqual(r.status, 421, `${addr} Host "${host}" is served: ${r.head}`);
      assert.ok(r.status === 200 || r.status === 404, `${addr} Host "${host}": ${r.head}`);
    }
    // HTTP/1.0 may omit Host (a browser never does): served.
    const r10 = await rawRequest(port, `GET ${path} HTTP/1.0\r\n\r\n`);
    assert.ok(r10.status === 200 || r10.status === 404, `HTTP/1.0 without Host: ${r10.head}`);
  }
  const st = await fleetctlJson(f, ['status']);
  assert.equal(st.counters.http_misdirected, 16, JSON.stringify(st.counters));
});

fleetTest('http: a GET with a body is refused with 400', async (f) => {
  await startHost(f, 'hostA');
  const port = portOf(f.dash);
  const r = await rawRequest(port, `GET /api/status HTTP/1.1\r\nHost: ${f.dash}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`);
  assert.equal(r.status, 400, r.head);
  const c = await rawRequest(port, `GET /api/status HTTP/1.1\r\nHost: ${f.dash}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
  assert.equal(c.status, 400, c.head);
  const ok = await rawRequest(port, `GET /api/status HTTP/1.1\r\nHost: ${f.dash}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  assert.equal(ok.status, 200, ok.head);
});

/** Opens n connections that send a request line and then one header byte a second. */
function trickle(port, n, host) {
  const socks = [];
  let closed = 0;
  for (let i = 0; i < n; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.on('close', () => closed++);
    s.on('connect', () => s.write(`GET /api/status HTTP/1.1\r\nHost: ${host}\r\nX-Slow: `));
    socks.push(s);
  }
  const timer = setInterval(() => {
    for (const s of socks) if (!s.destroyed) s.write('a');
  }, 1000);
  return {
    socks,
    closed: () => closed,
    end() {
      clearInterval(timer);
      for (const s of socks) s.destroy();
    },
  };
}

fleetTest('http: 80 trickling connections on each server do not lock out the dashboard or a peer\'s room pull', async (A) => {
  const { Fleet } = await import('./harness.mjs');
  const B = new Fleet('slowB');
  let dashSlow, roomSlow;
  try {
    await startHost(A, 'hostA');
    await startHost(B, 'hostB');
    const keyA = (await fleetctlJson(A, ['identity'])).publicKey;
    const add = await B.fleetctl(['peer', 'add', 'hostA', keyA, A.url]);
    assert.equal(add.code, 0, add.stderr);
    const alice = await A.mcpClient('alice');
    const bob = await B.mcpClient('bob');
    await callTool(alice, 'fleet_room_register', { label: '#slow' });
    await callTool(alice, 'fleet_room_publish', { room: '#slow', msgType: 'note', payload: { n: 1 } });
    await callTool(bob, 'fleet_room_register', { label: '#slow' });

    dashSlow = trickle(portOf(A.dash), 80, A.dash);
    roomSlow = trickle(portOf(A.roomsAddr), 80, A.roomsAddr);
    await sleep(1500); // all connected and trickling

    const t0 = Date.now();
    const r = await rawRequest(portOf(A.dash), get(0, '/api/status', A.dash));
    const dashMs = Date.now() - t0;
    assert.equal(r.status, 200, `a fresh dashboard request is answered while 80 connections trickle: ${JSON.stringify(r)}`);
    const t1 = Date.now();
    const sync = await callTool(bob, 'fleet_room_sync', { room: '#slow' });
    const pullMs = Date.now() - t1;
    const fromA = sync.results.find((x) => x.peer === 'hostA');
    assert.ok(fromA && fromA.ok && fromA.merged === 1, `B's pull from A while A's rooms server is trickled: ${JSON.stringify(sync)}`);
    A.notes.push(`fresh dashboard request ${dashMs} ms, room pull ${pullMs} ms with 80+80 trickling connections`);
    console.log(`# fresh dashboard request ${dashMs} ms, peer's room pull ${pullMs} ms with 80+80 trickling connections`);

    // Every trickler is dropped: the oldest at once, the rest at the header deadline.
    await waitFor(() => dashSlow.closed() === 80 && roomSlow.closed() === 80, { timeout: 20000, what: 'every trickling connection dropped' });
    const st = await fleetctlJson(A, ['status']);
    assert.ok(st.counters.http_dropped_slow >= 160, JSON.stringify(st.counters));
  } finally {
    dashSlow?.end();
    roomSlow?.end();
    await B.cleanup();
  }
});

/** Opens an event stream; resolves { sock, status } once its first event (or a refusal) is in. */
function openStream(port, host) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = '';
    let done = false;
    const finish = (v) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ sock, ...v });
    };
    const timer = setTimeout(() => finish({ status: 0, timedOut: true }), 20000);
    sock.setEncoding('latin1');
    sock.on('connect', () => sock.write(`GET /api/events HTTP/1.1\r\nHost: ${host}\r\n\r\n`));
    sock.on('data', (d) => {
      buf += d;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(buf);
      if (m && Number(m[1]) !== 200 && buf.includes('\r\n\r\n')) finish({ status: Number(m[1]), text: buf });
      else if (m && buf.includes('event: state')) finish({ status: 200 });
    });
    sock.on('error', (e) => finish({ status: 0, error: e.code }));
    sock.on('close', () => finish({ status: 0, closed: true, text: buf }));
  });
}

fleetTest('http: 100 event-stream clients at once are served; past the stream budget 503 at once, the API still answers', async (f) => {
  await startHost(f, 'hostA');
  const port = portOf(f.dash);
  const streams = [];
  try {
    const first = await Promise.all(Array.from({ length: 100 }, () => openStream(port, f.dash)));
    streams.push(...first);
    const bad = first.filter((s) => s.status !== 200);
    assert.equal(bad.length, 0, `all 100 streams open: ${JSON.stringify(bad.slice(0, 3).map(({ sock, ...r }) => r))}`);
    await waitFor(async () => (await fleetctlJson(f, ['status'])).http.eventStreams === 100, { what: '100 event streams counted' });

    // Fill the budget (128), then one more is refused at once.
    const more = await Promise.all(Array.from({ length: 28 }, () => openStream(port, f.dash)));
    streams.push(...more);
    assert.ok(more.every((s) => s.status === 200), 'up to the budget every stream opens');
    const over = await openStream(port, f.dash);
    streams.push(over);
    assert.equal(over.status, 503, `the stream past the budget: ${JSON.stringify({ ...over, sock: undefined })}`);
    const api = await rawRequest(port, get(port, '/api/status', f.dash));
    assert.equal(api.status, 200, 'the API answers while the streams are full');
    const st = await fleetctlJson(f, ['status']);
    assert.ok(st.counters.http_refused_busy >= 1, JSON.stringify(st.counters));
  } finally {
    for (const s of streams) s.sock.destroy();
  }
});

/** Resolves once a connection from localAddress to 127.0.0.1:port is open. */
function idle(port, localAddress = '127.0.0.1') {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    s.on('error', () => {});
    s.on('connect', () => resolve(s));
  });
}

/** rawRequest from another source address. */
function requestFrom(localAddress, port, text) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1', localAddress });
    let buf = '';
    const timer = setTimeout(() => sock.destroy(), 10000);
    sock.setEncoding('latin1');
    sock.on('connect', () => sock.write(text));
    sock.on('data', (d) => (buf += d));
    sock.on('error', () => {});
    sock.on('close', () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.1 (\d{3})/.exec(buf);
      resolve({ status: m ? Number(m[1]) : 0, text: buf });
    });
  });
}

fleetTest('http: one client address holds at most 192 connections; another address is still served', async (f) => {
  await startHost(f, 'hostA');
  const port = portOf(f.dash);
  const socks = [];
  try {
    // 128 event streams and 64 connections that send nothing, all from 127.0.0.1.
    // The streams open 32 at a time: a burst of them all at once is the test
    // above, and here a slow build could leave more than FL_HTTP_MAX_WAITING
    // of a burst unread for longer than the grace, which drops them.
    const streams = [];
    for (let i = 0; i < 4; i++) {
      const batch = await Promise.all(Array.from({ length: 32 }, () => openStream(port, f.dash)));
      socks.push(...batch.map((s) => s.sock));
      streams.push(...batch);
    }
    const refused = streams.filter((s) => s.status !== 200).map(({ sock, ...r }) => r);
    assert.equal(refused.length, 0, `the streams open: ${JSON.stringify(refused.slice(0, 3))}`);
    socks.push(...(await Promise.all(Array.from({ length: 64 }, () => idle(port)))));
    const over = await requestFrom('127.0.0.1', port, get(port, '/api/status', f.dash));
    assert.equal(over.status, 503, `the 193rd connection from one address: ${over.text}`);
    assert.match(over.text, /from your address/);
    const other = await requestFrom('127.0.0.2', port, get(port, '/api/status', f.dash));
    assert.equal(other.status, 200, `another address is served: ${other.text}`);
  } finally {
    for (const s of socks) s.destroy();
  }
});
