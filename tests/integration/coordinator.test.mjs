// coordinator.test.mjs — lead-to-lead mailboxes: two fleets, each on its own
// vhost of the private broker, whose leads (one per host) write to each
// other by coordId through a third, shared coordinator vhost with its own
// login. Also: the refusals (to and coordId together, an unknown coordId, a
// non-lead), and a coordinator outage that leaves fleet traffic alone.

import assert from 'node:assert/strict';
import amqp from 'amqplib';
import { callTool, callToolRaw, resultText, waitFor } from './harness.mjs';
import { useBroker, hostsTest, pinAll } from './broker-harness.mjs';

const brokerRef = useBroker({ own: true }); // adds vhosts and users on its node

let seq = 0;

/** A new vhost on broker (permissions for user); returns its URI. */
async function vhost(broker, name, user = 'guest', pass = 'guest') {
  await broker.ctl(['add_vhost', name]);
  await broker.ctl(['set_permissions', '-p', name, user, '.*', '.*', '.*']);
  return broker.uri.replace('guest:guest@', `${user}:${pass}@`) + encodeURIComponent(name);
}

async function status(f) {
  const r = await f.fleetctl(['--json', 'status']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

hostsTest('lead-to-lead: leads of two fleets exchange messages by coordId on the coordinator vhost', brokerRef, { start: false }, async ({ broker, hostA, hostB }) => {
  const n = ++seq;
  const user = `coord-${n}`;
  await broker.ctl(['add_user', user, 'coord-secret']);
  const coordName = `coord-${n}`;
  const coordUri = await vhost(broker, coordName, user, 'coord-secret');
  hostA.broker = { uri: await vhost(broker, `alpha-${n}`) };
  hostB.broker = { uri: await vhost(broker, `beta-${n}`) };
  await hostA.startFleetd({ config: { coordinator: { uri: coordUri, fleet: 'alpha' } } });
  await hostB.startFleetd({ config: { coordinator: { uri: coordUri, fleet: 'beta' } } });
  await pinAll([hostA, hostB]);

  // A spy of our own on the coordinator vhost: it must see only ciphertext.
  const spyConn = await amqp.connect(coordUri);
  const spyCh = await spyConn.createChannel();
  const { queue } = await spyCh.assertQueue('', { exclusive: true, autoDelete: true });
  await spyCh.bindQueue(queue, 'fleet.msg', '#');
  const spied = [];
  await spyCh.consume(queue, (m) => spied.push(m), { noAck: true });

  const leadA = await hostA.mcpClient('lead-a', { role: 'lead' });
  const leadB = await hostB.mcpClient('lead-b', { role: 'lead', env: { FLEET_COORD_ID: 'boss@beta' } });
  const workerA = await hostA.mcpClient('worker-a');

  // Each lead's own coordId, and every lead seen on the coordinator.
  const seen = await waitFor(async () => {
    const l = await callTool(leadA, 'fleet_list', {});
    const ids = (l.coordinators || []).map((c) => c.coordId).sort();
    return ids.includes('boss@beta') && ids.includes('lead-a@alpha') ? l : null;
  }, { what: 'both leads on the coordinator' });
  const self = seen.entities.find((e) => e.self);
  assert.equal(self.coordId, 'lead-a@alpha');
  assert.equal(seen.entities.find((e) => e.name === 'worker-a').coordId, undefined, 'a worker has no coordId');
  assert.ok(!seen.entities.some((e) => e.name === 'lead-b'), 'the other fleet is not in this fleet');
  const boss = seen.coordinators.find((c) => c.coordId === 'boss@beta');
  assert.equal(boss.host, 'hostB');
  assert.equal(boss.status, 'online');

  // A waits; B reads it from its mailbox and answers by coordId.
  const sending = callTool(leadA, 'fleet_send', { coordId: 'boss@beta', content: 'I take the parser; you take the cache', wait_s: 20 });
  // Awaited below; until then a failure must not escape as an unhandled
  // rejection, which would end the test without the hosts' diagnostics.
  sending.catch(() => {});
  const got = await callTool(leadB, 'fleet_poll', { wait_s: 15 });
  assert.equal(got.messages.length, 1, JSON.stringify(got));
  const m = got.messages[0];
  assert.equal(m.kind, 'COORD');
  assert.equal(m.coordId, 'lead-a@alpha');
  assert.equal(m.content, 'I take the parser; you take the cache');
  const ans = await callTool(leadB, 'fleet_send', { coordId: 'lead-a@alpha', content: 'agreed' });
  assert.equal(ans.status, 'sent', JSON.stringify(ans));
  const res = await sending;
  assert.equal(res.status, 'replied', JSON.stringify(res));
  assert.equal(res.coordId, 'boss@beta');
  assert.equal(res.reply.kind, 'COORD');
  assert.equal(res.reply.content, 'agreed');
  assert.equal(res.reply.coordId, 'boss@beta');
  assert.equal(res.reply.inReplyTo, res.msgId);
  assert.equal(res.reply.traceId, res.traceId, 'one trace for the exchange');
  for (const f of [hostA, hostB]) {
    const r = await f.fleetctl(['--json', 'trace', res.traceId]);
    assert.equal(r.code, 0, `${f.hostId} trace: ${r.stderr}`);
    assert.match(JSON.parse(r.stdout).lines.join('\n'), /COORD/);
  }

  // B writes without waiting; it is held in A's mailbox until A pulls it,
  // and A answers with fleet_reply to the msgId.
  const note = await callTool(leadB, 'fleet_send', { coordId: 'lead-a@alpha', content: 'cache done' });
  assert.equal(note.status, 'sent');
  const held = await waitFor(async () => {
    const l = await callTool(leadA, 'fleet_list', {});
    return l.entities.find((e) => e.self).held === 1 ? l : null;
  }, { what: 'the COORD held for lead-a' });
  assert.ok(held);
  const pulled = await callTool(leadA, 'fleet_poll', {});
  assert.equal(pulled.messages.length, 1);
  const rep = await callTool(leadA, 'fleet_reply', { to: pulled.messages[0].coordId, content: 'thanks', inReplyTo: pulled.messages[0].msgId });
  assert.equal(rep.status, 'sent', JSON.stringify(rep));
  const back = await callTool(leadB, 'fleet_poll', { wait_s: 15 });
  assert.equal(back.messages.length, 1, JSON.stringify(back));
  assert.equal(back.messages[0].content, 'thanks');
  assert.equal(back.messages[0].inReplyTo, note.msgId);

  // Every COORD body crossed the coordinator sealed to its lead's host.
  const coords = spied.filter((m) => String(m.properties.headers?.kind) === 'COORD');
  assert.ok(coords.length >= 4, `the spy saw the COORD messages: ${coords.length}`);
  for (const m of coords) {
    assert.match(String(m.properties.headers?.sealedTo), /^host[AB]$/, 'sealedTo names the lead\'s host');
    for (const marker of ['I take the parser', 'agreed', 'cache done', 'thanks'])
      assert.ok(!m.content.toString('latin1').includes(marker), `no "${marker}" in clear on the coordinator`);
  }
  await spyConn.close();

  // Refusals.
  const both = await callToolRaw(leadA, 'fleet_send', { to: 'worker-a', coordId: 'boss@beta', content: 'x' });
  assert.equal(both.isError, true);
  assert.match(resultText(both), /exactly one of/);
  const unknown = await callToolRaw(leadA, 'fleet_send', { coordId: 'ghost@gamma', content: 'x' });
  assert.equal(unknown.isError, true);
  assert.match(resultText(unknown), /no lead with coordId 'ghost@gamma'/);
  const worker = await callToolRaw(workerA, 'fleet_send', { coordId: 'boss@beta', content: 'x' });
  assert.equal(worker.isError, true);
  assert.match(resultText(worker), /only a lead/);

  // The coordinator goes away: sends there fail fast, the fleet carries on.
  assert.equal((await status(hostA)).coordinator.state, 'up');
  await broker.ctl(['delete_vhost', coordName]);
  await waitFor(async () => (await status(hostA)).coordinator.state === 'down', { what: 'the coordinator link down' });
  const t0 = Date.now();
  const down = await callToolRaw(leadA, 'fleet_send', { coordId: 'boss@beta', content: 'x', wait_s: 10 });
  assert.equal(down.isError, true);
  assert.match(resultText(down), /coordinator is unreachable/);
  assert.ok(Date.now() - t0 < 2000, 'fails fast');
  const st = await status(hostA);
  assert.equal(st.broker.state, 'up', 'the fleet’s own broker link is untouched');
  const local = await callTool(leadA, 'fleet_send', { to: 'worker-a', content: 'carry on' });
  assert.equal(local.status, 'sent');
  assert.equal((await callTool(workerA, 'fleet_poll', {})).messages[0].content, 'carry on');
});
