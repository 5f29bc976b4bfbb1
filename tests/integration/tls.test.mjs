// tls.test.mjs — acceptance 5: a gateway on amqps:// with its own broker
// login talks to a gateway on plain amqp://.
//
// The file makes a throwaway CA and a server certificate for "localhost"
// (and 127.0.0.1) with openssl, starts a private RabbitMQ with a TLS
// listener as well (tests/rabbitmq.sh with FLEET_RMQ_TLS_PORT /
// FLEET_RMQ_TLS_CERTDIR), and creates the user gw-b with the permissions a
// gateway needs and no more (the regexes docs/operations.md gives). hostA
// runs on amqp:// as guest; hostB on amqps://gw-b:...@localhost:TLSPORT/ with
// broker.caFile = the throwaway CA (hostname verification on). After the two
// pin each other, a blocking send from hostA gets hostB's reply (U1).
// Also: gw-b is refused what a gateway does not do, and a gateway whose
// caFile is another CA does not connect.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { callTool, waitFor, selfGid } from './harness.mjs';
import { Broker, HostFleet, RABBITMQ_SH, portFree, runDetached, waitStatus } from './broker-harness.mjs';
import { amqpClient, applyGatewayPermissions, gatewayPermissions, pinAll, status } from './trust-helpers.mjs';

const GW_USER = 'gw-b';
const GW_PASS = 'gw-b-test-password';

// ---- certificates -------------------------------------------------------------

function openssl(args, cwd) {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.error) {
    throw new Error(
      `openssl is needed to make the test certificates and could not be run (${r.error.message}); ` +
        'install the Debian package "openssl" (scripts/test.sh does)'
    );
  }
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
  return r.stdout;
}

/** A CA (cacert.pem, ca.key) in dir; name goes into its subject. */
function makeCa(dir, name) {
  mkdirSync(dir, { recursive: true });
  openssl(
    [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', 'ca.key', '-out', 'cacert.pem', '-days', '2', '-subj', `/CN=${name}`,
      '-addext', 'basicConstraints=critical,CA:TRUE',
      '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir
  );
  return path.join(dir, 'cacert.pem');
}

/** A server key and certificate for localhost / 127.0.0.1 signed by the CA in dir. */
function makeServerCert(dir) {
  openssl(
    [
      'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', 'key.pem', '-out', 'server.csr', '-subj', '/CN=localhost',
    ],
    dir
  );
  writeFileSync(
    path.join(dir, 'server.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n' +
      'extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n'
  );
  openssl(
    [
      'x509', '-req', '-in', 'server.csr', '-CA', 'cacert.pem', '-CAkey', 'ca.key', '-CAcreateserial',
      '-out', 'cert.pem', '-days', '2', '-extfile', 'server.ext',
    ],
    dir
  );
}

// ---- a private broker with a TLS listener ------------------------------------------

async function freePorts() {
  for (let j = 0; j < 100; j++) {
    const p = 5700 + Math.floor(Math.random() * 199);
    const q = 5700 + Math.floor(Math.random() * 200);
    if (q === p || q === p + 20000) continue;
    if ((await portFree(p)) && (await portFree(p + 20000)) && (await portFree(q))) return [p, q];
  }
  throw new Error('no free ports in 5700-5899 for a private RabbitMQ');
}

const ref = { broker: null, tlsPort: 0, dir: null, caFile: null, otherCaFile: null };

before(
  async () => {
    openssl(['version']);
    const dir = mkdtempSync('/tmp/fltls-');
    chmodSync(dir, 0o755);
    ref.dir = dir;
    const certs = path.join(dir, 'certs');
    ref.caFile = makeCa(certs, 'fleet test CA');
    makeServerCert(certs);
    ref.otherCaFile = makeCa(path.join(dir, 'other-ca'), 'some other CA');
    let lastErr = '';
    for (let attempt = 0; attempt < 2 && !ref.broker; attempt++) {
      const [port, tlsPort] = await freePorts();
      const nodeDir = path.join(dir, `n${attempt}`);
      const b = new Broker(dir, nodeDir, port, null);
      const r = await runDetached('sh', [RABBITMQ_SH, 'start', nodeDir, String(port)], path.join(dir, `start${attempt}`), 90000, {
        FLEET_RMQ_TLS_PORT: String(tlsPort),
        FLEET_RMQ_TLS_CERTDIR: certs,
      });
      if (r.code === 0) {
        b.node = r.stdout.trim().split('\n').pop();
        ref.broker = b;
        ref.tlsPort = tlsPort;
      } else {
        lastErr = `rabbitmq.sh start exited ${r.code}:\n${r.stderr.slice(-3000)}`;
        spawnSync('sh', [RABBITMQ_SH, 'stop', nodeDir], { stdio: 'ignore', timeout: 60000 });
      }
    }
    if (!ref.broker) throw new Error(`could not start a private RabbitMQ with TLS:\n${lastErr}`);
  },
  { timeout: 200000 }
);

after(
  async () => {
    if (ref.broker) await ref.broker.stop(); // removes ref.dir too
    else if (ref.dir) rmSync(ref.dir, { recursive: true, force: true });
  },
  { timeout: 120000 }
);
process.once('exit', () => {
  if (ref.broker) ref.broker.stopSync();
});

/** Runs fn over hosts, cleaning every one up after; failures carry diagnostics. */
async function withHosts(hosts, fn) {
  let failure = null;
  try {
    await fn();
  } catch (e) {
    failure = e;
  }
  const problems = [];
  await Promise.all(hosts.map((h) => h.cleanup().catch((e) => problems.push(`[${h.hostId}] ${e.message}`))));
  const diag = () => hosts.map((h) => `\n===== ${h.hostId} =====${h.diagnostics()}`).join('');
  if (failure) {
    try {
      failure.message += diag();
    } catch {
      // read-only message
    }
    throw failure;
  }
  if (problems.length) throw new Error(`clean-up failed:\n${problems.join('\n')}${diag()}`);
}

/** A HostFleet whose fleetd uses uri (and broker config extra) instead of the broker's guest URI. */
function hostOn(hostId, uri, extra = {}) {
  const view = Object.create(ref.broker);
  view.uri = uri;
  const h = new HostFleet(hostId, view, `tls [${hostId}]`);
  h.brokerConfig = extra;
  return h;
}

test('acceptance 5: a gateway on amqps:// with its own login exchanges messages with one on amqp://', { timeout: 120000 }, async (t) => {
  const broker = ref.broker;
  assert.ok(broker, 'the private broker did not start (see the before hook)');
  const perms = gatewayPermissions('hostB');
  await applyGatewayPermissions(broker, GW_USER, GW_PASS, 'hostB');
  t.diagnostic(`gw-b permissions: configure ${perms.configure} write ${perms.write} read ${perms.read}`);

  const tlsUri = `amqps://${GW_USER}:${GW_PASS}@localhost:${ref.tlsPort}/`;
  const hostA = new HostFleet('hostA', broker, 'tls [hostA]');
  const hostB = hostOn('hostB', tlsUri, { caFile: ref.caFile });
  await withHosts([hostA, hostB], async () => {
    await hostA.startFleetd();
    await hostB.startFleetd();
    const up = await waitFor(
      async () => {
        const s = await status(hostB);
        return s.broker && s.broker.state === 'up' ? s : null;
      },
      { timeout: 15000, interval: 200, what: 'hostB to be connected over amqps' }
    ).catch(async (e) => {
      e.message += `\nhostB status: ${JSON.stringify(await status(hostB))}`;
      throw e;
    });
    t.diagnostic(`hostB broker: ${JSON.stringify(up.broker)}`);

    // The broker sees hostB as gw-b over TLS, hostA as guest without.
    const conns = await waitFor(
      async () => {
        const cs = await broker.ctlJson(['list_connections', 'user', 'ssl', 'client_properties']);
        return cs.some((c) => c.user === GW_USER) && cs.some((c) => c.user === 'guest') ? cs : null;
      },
      { timeout: 10000, interval: 500, what: 'both gateways in list_connections' }
    );
    const mine = conns.filter((c) => c.user === GW_USER);
    assert.ok(mine.length >= 1 && mine.every((c) => c.ssl === true), `gw-b connects over TLS only: ${JSON.stringify(conns)}`);
    assert.ok(conns.filter((c) => c.user === 'guest').every((c) => c.ssl === false), `guest is plain: ${JSON.stringify(conns)}`);

    await pinAll([hostA, hostB]);
    const alice = await hostA.mcpClient('alice', { role: 'lead' });
    const bob = await hostB.mcpClient('bob');
    await waitStatus(alice, 'bob', 'hostB', 'online');
    await waitStatus(bob, 'alice', 'hostA', 'online');
    const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));

    // U1: a blocking send from the plain side returns the TLS side's reply.
    const sending = callTool(alice, 'fleet_send', { to: 'bob', content: 'ping over amqp, to amqps', wait_s: 20 });
    sending.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
    const polled = await callTool(bob, 'fleet_poll', { wait_s: 20 });
    assert.equal(polled.messages.length, 1, `bob's poll: ${JSON.stringify(polled)}`);
    const msg = polled.messages[0];
    assert.equal(msg.content, 'ping over amqp, to amqps');
    assert.equal(msg.from.name, 'alice');
    const replied = await callTool(bob, 'fleet_reply', { to: msg.from.gid, content: 'pong over amqps', inReplyTo: msg.msgId });
    assert.ok(['sent', 'delivered', 'held'].includes(replied.status), JSON.stringify(replied));
    const sent = await sending;
    assert.equal(sent.status, 'replied', JSON.stringify(sent));
    assert.equal(sent.reply.content, 'pong over amqps');
    assert.equal(sent.reply.from.name, 'bob');
    assert.equal(sent.reply.inReplyTo, msg.msgId);

    // And a send that starts on the TLS side.
    const back = await callTool(bob, 'fleet_send', { to: 'alice', content: 'hello from amqps' });
    assert.equal(back.status, 'sent', JSON.stringify(back));
    const aliceGot = await callTool(alice, 'fleet_poll', { wait_s: 10 });
    assert.deepEqual(aliceGot.messages.map((m) => m.content), ['hello from amqps'], JSON.stringify(aliceGot));

    // gw-b gets nothing a gateway does not need: another queue, another
    // host's control queue, someone else's exchange.
    const mq = await amqpClient(tlsUri, { ca: [readFileSync(ref.caFile)], servername: 'localhost' });
    try {
      for (const [what, op] of [
        ['declare queue not-fleet', (ch) => ch.assertQueue('not-fleet')],
        ['declare control.hostA', (ch) => ch.assertQueue('control.hostA', { durable: true })],
        ['consume control.hostA', (ch) => ch.consume('control.hostA', () => {})],
        ['declare exchange other.ex', (ch) => ch.assertExchange('other.ex', 'topic', { durable: true })],
        ['read fleet.dlq', (ch) => ch.get('fleet.dlq')],
      ]) {
        const ch = await mq.conn.createChannel();
        ch.on('error', () => {});
        await assert.rejects(op(ch), /ACCESS_REFUSED|403/, `gw-b must be refused: ${what}`);
      }
      // Presence under its own host's key is accepted by the broker (the
      // gateways then ignore this unsigned beat) ...
      await mq.publish('fleet.roster', 'roster.hostB.00000000-0000-4000-8000-000000000000', { kind: 'PRESENCE' }, '{}');
      // ... under another host's routing key it is refused by the broker
      // (the channel is closed; the confirm never comes back positive).
      await assert.rejects(
        mq.publish('fleet.roster', 'roster.hostA.00000000-0000-4000-8000-000000000000', { kind: 'PRESENCE' }, '{}'),
        /closed|ACCESS_REFUSED/,
        'gw-b must not publish presence as hostA'
      );
      assert.match(String(mq.pubError?.message), /ACCESS_REFUSED/, `the broker closed the channel for access: ${mq.pubError?.message}`);
      // What it does need works: its own inbox, presence under its own host.
      const ch = await mq.conn.createChannel();
      ch.on('error', () => {});
      await ch.checkQueue(`agent.${bobGid}.inbox.v2`);
      await ch.close();
    } finally {
      await mq.close();
    }
  });
});

test('amqps:// with a caFile that did not sign the broker certificate does not connect', { timeout: 60000 }, async () => {
  const broker = ref.broker;
  assert.ok(broker, 'the private broker did not start (see the before hook)');
  const tlsUri = `amqps://${GW_USER}:${GW_PASS}@localhost:${ref.tlsPort}/`;
  const hostB = hostOn('hostB', tlsUri, { caFile: ref.otherCaFile });
  await withHosts([hostB], async () => {
    await hostB.startFleetd();
    // Give the link time for a few attempts.
    const s = await waitFor(
      async () => {
        const st = await status(hostB);
        // "connecting" is the state before the first attempt has failed.
        return st.broker && st.broker.why && st.broker.why !== 'connecting' ? st : null;
      },
      { timeout: 10000, interval: 200, what: 'hostB to report why its broker link is down' }
    );
    assert.equal(s.broker.state, 'down', JSON.stringify(s.broker));
    assert.match(s.broker.why, /cert|verif|ssl|tls|handshake/i, `the reason names the TLS failure: ${s.broker.why}`);
  });
});
