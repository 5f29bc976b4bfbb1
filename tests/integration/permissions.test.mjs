// permissions.test.mjs — the per-gateway broker permissions of
// docs/operations.md, held against a real broker, one subtest per row of its
// table.
//
// The test creates user gw-hostB with exactly the recommended permissions
// (trust-helpers.mjs gatewayPermissions, the regexes the doc prints) and runs
// hostB's fleetd as that user next to hostA's as guest: a send, a reply and a
// broadcast cross both ways, so what a gateway must do works. Then, logged in
// as gw-hostB with amqplib (a compromised gateway that ignores fleetd), each
// row checks what the permission allows and what the table says it refuses,
// and, where the table says so, what a compromised gateway can still do —
// which is only ever ciphertext.

import assert from 'node:assert/strict';
import amqp from 'amqplib';
import { callTool, selfGid } from './harness.mjs';
import { useBroker, hostsTest, pinAll, waitStatus } from './broker-harness.mjs';
import { applyGatewayPermissions, envelopeOf } from './trust-helpers.mjs';

const brokerRef = useBroker();
const USER = `gw-hostB-${process.pid}`; // users are the node's: a name of this run's own
const PASS = 'gw-hostB-test-password';
const GID0 = '00000000-0000-4000-8000-000000000000';

/** Runs op(channel) on a fresh channel of conn: 'ok', or the broker's refusal text. */
async function attempt(conn, op, { confirm = false } = {}) {
  const ch = confirm ? await conn.createConfirmChannel() : await conn.createChannel();
  let closedWith = null;
  ch.on('error', (e) => (closedWith = e));
  try {
    await op(ch);
    if (closedWith) return String(closedWith.message);
    await ch.close();
    return 'ok';
  } catch (e) {
    return String((closedWith || e).message);
  }
}
const refused = (r) => /ACCESS_REFUSED|403/.test(r);

/** Publishes on a confirm channel and waits for the confirm. */
const publish = (ex, key, body = 'x') => (ch) =>
  new Promise((resolve, reject) => ch.publish(ex, key, Buffer.from(body), { headers: {} }, (err) => (err ? reject(err) : resolve())));

hostsTest('the recommended per-gateway permissions allow what a gateway does and refuse what the table says', brokerRef, { start: false, timeout: 150000 }, async ({ hostA, hostB, broker }, t) => {
  const perms = await applyGatewayPermissions(broker, USER, PASS, 'hostB');
  t.diagnostic(`${USER}: ${JSON.stringify(perms)}`);
  const gwUri = broker.uriAs(USER, PASS);
  hostB.broker = Object.create(broker);
  hostB.broker.uri = gwUri;
  await Promise.all([hostA.startFleetd(), hostB.startFleetd()]);
  await pinAll([hostA, hostB]);

  // What must work, works: fleetd as gw-hostB sends, receives, broadcasts.
  const alice = await hostA.mcpClient('alice');
  const bob = await hostB.mcpClient('bob', { groups: ['ops'] });
  const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
  const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));
  await waitStatus(alice, 'bob', 'hostB', 'online');
  await waitStatus(bob, 'alice', 'hostA', 'online');
  const st = JSON.parse((await hostB.fleetctl(['--json', 'status'])).stdout);
  assert.equal(st.broker.state, 'up', `hostB's link as ${USER}: ${JSON.stringify(st.broker)}`);
  await callTool(alice, 'fleet_send', { to: 'bob', content: 'to bob' });
  assert.deepEqual((await callTool(bob, 'fleet_poll', { wait_s: 10 })).messages.map((m) => m.content), ['to bob']);
  await callTool(bob, 'fleet_send', { to: 'alice', content: 'to alice' });
  await callTool(bob, 'fleet_broadcast', { content: 'from bob to all' });
  await callTool(alice, 'fleet_broadcast', { group: 'ops', content: 'to ops' });
  assert.deepEqual((await callTool(alice, 'fleet_poll', { wait_s: 10, max: 10 })).messages.map((m) => m.content).sort(), ['from bob to all', 'to alice']);
  assert.deepEqual((await callTool(bob, 'fleet_poll', { wait_s: 10 })).messages.map((m) => m.content), ['to ops']);

  const aliceInbox = `agent.${aliceGid}.inbox.v2`;
  const conn = await amqp.connect(gwUri);
  conn.on('error', () => {});
  const guest = await amqp.connect(broker.uri);
  guest.on('error', () => {});
  try {
    await t.test('configure: fleet exchanges, its own queues, agent inboxes — nothing else', async () => {
      assert.equal(await attempt(conn, (ch) => ch.assertExchange('fleet.msg', 'topic', { durable: true })), 'ok');
      assert.equal(await attempt(conn, (ch) => ch.assertQueue('control.hostB', { durable: true })), 'ok');
      assert.ok(refused(await attempt(conn, (ch) => ch.assertQueue('not-fleet'))), 'a queue outside fleet names');
      assert.ok(refused(await attempt(conn, (ch) => ch.assertQueue('control.hostA', { durable: true }))), "another host's control queue");
      assert.ok(refused(await attempt(conn, (ch) => ch.assertQueue('roster.hostA', { exclusive: true }))), "another host's roster queue");
      assert.ok(refused(await attempt(conn, (ch) => ch.assertExchange('other.ex', 'topic'))), 'another exchange');
      // Still possible, as the table says: delete any agent inbox (gids are
      // not host-scoped). A throwaway inbox stands in for another host's.
      const victim = `agent.${GID0.replace(/^0/, '1')}.inbox.v2`;
      await attempt(guest, (ch) => ch.assertQueue(victim, { durable: true }));
      assert.equal(await attempt(conn, (ch) => ch.deleteQueue(victim)), 'ok', 'deleting an inbox is not fenced');
    });

    await t.test('write on fleet.msg, fleet.roster, fleet.control: it publishes', async () => {
      assert.equal(await attempt(conn, publish('fleet.control', 'hostA'), { confirm: true }), 'ok');
      assert.equal(await attempt(conn, publish('fleet.roster', `roster.hostB.${GID0}`), { confirm: true }), 'ok');
      assert.equal(await attempt(conn, publish('fleet.msg', aliceGid), { confirm: true }), 'ok');
      assert.ok(refused(await attempt(conn, publish('amq.topic', 'x'), { confirm: true })), 'an exchange outside fleet');
    });

    await t.test('write on fleet.dlx: it declares inboxes that dead-letter there', async () => {
      assert.equal(await attempt(conn, (ch) => ch.checkQueue(`agent.${bobGid}.inbox.v2`)), 'ok');
      const q = `agent.${GID0.replace(/^0/, '2')}.inbox.v2`;
      assert.equal(await attempt(conn, (ch) => ch.assertQueue(q, { durable: true, deadLetterExchange: 'fleet.dlx' })), 'ok');
      assert.equal(await attempt(conn, (ch) => ch.deleteQueue(q)), 'ok');
      // Still possible, as the table says: junk into fleet.dlq through fleet.dlx.
      assert.equal(await attempt(conn, publish('fleet.dlx', ''), { confirm: true }), 'ok');
    });

    await t.test('write on its queues: it binds them', async () => {
      assert.equal(await attempt(conn, (ch) => ch.bindQueue('control.hostB', 'fleet.control', 'hostB')), 'ok');
      assert.ok(refused(await attempt(conn, (ch) => ch.bindQueue('control.hostA', 'fleet.control', 'hostB'))), "binding another host's control queue");
    });

    await t.test('read on fleet exchanges: it binds queues to them', async () => {
      assert.equal(await attempt(conn, (ch) => ch.bindQueue(`agent.${bobGid}.inbox.v2`, 'fleet.msg', bobGid)), 'ok');
      assert.ok(refused(await attempt(conn, (ch) => ch.bindQueue(`agent.${bobGid}.inbox.v2`, 'amq.topic', bobGid))), 'binding to an exchange outside fleet');
    });

    await t.test('read on its queues and inboxes: it consumes; others are ciphertext, fleet.dlq and other hosts\' control are refused', async () => {
      assert.equal(await attempt(conn, (ch) => ch.checkQueue('control.hostB')), 'ok');
      assert.ok(refused(await attempt(conn, (ch) => ch.get('fleet.dlq'))), 'reading fleet.dlq');
      assert.ok(refused(await attempt(conn, (ch) => ch.consume('control.hostA', () => {}))), "consuming another host's control queue");
      // Still possible: get from and purge another host's inbox (a stand-in
      // declared here); what inboxes hold is sealed (see the last row).
      const other = `agent.${GID0.replace(/^0/, '4')}.inbox.v2`;
      await attempt(guest, async (ch) => {
        await ch.assertQueue(other, { durable: true });
        ch.sendToQueue(other, Buffer.from('ciphertext'));
        ch.sendToQueue(other, Buffer.from('ciphertext'));
      });
      let got = null;
      assert.equal(await attempt(conn, async (ch) => {
        for (let i = 0; i < 50 && !got; i++) {
          got = await ch.get(other, { noAck: true });
          if (!got) await new Promise((res) => setTimeout(res, 50));
        }
      }), 'ok');
      assert.ok(got, 'basic.get on another inbox');
      assert.equal(await attempt(conn, (ch) => ch.purgeQueue(other)), 'ok', 'purging another inbox');
      await attempt(guest, (ch) => ch.deleteQueue(other));
    });

    await t.test('topic write on fleet.roster: presence only under roster.hostB.*', async () => {
      assert.equal(await attempt(conn, publish('fleet.roster', `roster.hostB.${GID0}`), { confirm: true }), 'ok');
      assert.ok(refused(await attempt(conn, publish('fleet.roster', `roster.hostA.${GID0}`), { confirm: true })), 'presence as hostA');
    });

    await t.test('topic read on fleet.roster: only the roster.# binding', async () => {
      // roster.hostB is fleetd's (exclusive); a queue the user may configure stands in.
      const q = `agent.${GID0.replace(/^0/, '5')}.inbox.v2`;
      assert.equal(await attempt(conn, (ch) => ch.assertQueue(q, { autoDelete: true })), 'ok');
      assert.equal(await attempt(conn, (ch) => ch.bindQueue(q, 'fleet.roster', 'roster.#')), 'ok');
      assert.ok(refused(await attempt(conn, (ch) => ch.bindQueue(q, 'fleet.roster', 'roster.hostA.*'))), 'another key');
      await attempt(conn, (ch) => ch.deleteQueue(q));
    });

    await t.test('topic write on fleet.msg: gids and per-host broadcast keys only', async () => {
      assert.equal(await attempt(conn, publish('fleet.msg', 'broadcast.hostA.all'), { confirm: true }), 'ok');
      assert.ok(refused(await attempt(conn, publish('fleet.msg', 'broadcast.all'), { confirm: true })), 'the shared key in clear');
      assert.ok(refused(await attempt(conn, publish('fleet.msg', 'anything.else'), { confirm: true })), 'any other key');
    });

    await t.test('topic read on fleet.msg: no `#`, no other host\'s broadcasts; another host\'s gid gives ciphertext', async () => {
      assert.equal(await attempt(conn, (ch) => ch.bindQueue(`agent.${bobGid}.inbox.v2`, 'fleet.msg', 'broadcast.hostB.ops')), 'ok');
      assert.ok(refused(await attempt(conn, (ch) => ch.bindQueue('fleet.dlq', 'fleet.msg', '#'))), 'fleet.dlq bound to fleet.msg with #');
      assert.ok(refused(await attempt(conn, (ch) => ch.bindQueue(`agent.${bobGid}.inbox.v2`, 'fleet.msg', 'broadcast.hostA.all'))), "hostA's broadcasts");
      assert.ok(refused(await attempt(conn, (ch) => ch.bindQueue(`agent.${bobGid}.inbox.v2`, 'fleet.msg', 'broadcast.all'))), 'the shared key');
      // Still possible: a queue of its own bound to alice's gid. It sees
      // every message to alice — sealed to hostA.
      const spyQ = `agent.${GID0.replace(/^0/, '3')}.inbox.v2`;
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      await ch.assertQueue(spyQ, { durable: false, autoDelete: true });
      await ch.bindQueue(spyQ, 'fleet.msg', aliceGid);
      await callTool(bob, 'fleet_send', { to: 'alice', content: 'secret for alice only' });
      let m = null;
      for (let i = 0; i < 100 && !m; i++) {
        m = await ch.get(spyQ, { noAck: true });
        if (!m) await new Promise((res) => setTimeout(res, 50));
      }
      assert.ok(m, 'the spy queue got the message');
      assert.equal(String(envelopeOf(m).sealedTo), 'hostA');
      assert.ok(!m.content.toString('latin1').includes('secret'), 'ciphertext only');
      await ch.deleteQueue(spyQ).catch(() => {});
      await ch.close().catch(() => {});
      assert.deepEqual((await callTool(alice, 'fleet_poll', { wait_s: 10 })).messages.map((x) => x.content), ['secret for alice only']);
    });
  } finally {
    await conn.close().catch(() => {});
    await guest.close().catch(() => {});
  }
});
