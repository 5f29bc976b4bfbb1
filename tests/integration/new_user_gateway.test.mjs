// new_user_gateway.test.mjs — what a new user meets on the gateway side when
// following the docs with two gateways on one machine and one RabbitMQ.
//
//   - Before the peers are pinned: a send to bob@hostB (or to "bob") names
//     the host to pin and how; hostB's refused beats are counted every time
//     but logged once (per host per minute), not once per beat per agent.
//   - A message from a host that is not pinned is dead-lettered with a line
//     that names the recipient gid (or the routing key of a broadcast) and
//     the real host in the fleetctl hint.
//   - fleetctl peer remove drops the host's agents from the roster at once;
//     sends to them name the unpinned host; pinned again, they come back.
//   - fleetctl status says "degraded" while an inbox is not consumed (here
//     a broker user that may not read agent queues), naming the agent and
//     the broker's refusal.
//   - A broker address where nothing listens reads "connection refused".

import assert from 'node:assert/strict';
import net from 'node:net';
import { callTool, callToolRaw, resultText, selfGid, waitFor, sleep } from './harness.mjs';
import { useBroker, hostsTest, findEntity, waitEntity, waitStatus, FAST_PRESENCE_MS } from './broker-harness.mjs';
import { counters, identityOf, parseJson, status, waitCounter } from './trust-helpers.mjs';

const brokerRef = useBroker();

/** The error text of a tool call that must fail. */
async function toolError(client, name, args) {
  const res = await callToolRaw(client, name, args);
  assert.equal(res.isError, true, `${name}(${JSON.stringify(args)}) must fail: ${JSON.stringify(res)}`);
  return resultText(res);
}

/** Lines of a host's fleetd output matching re. */
function logLines(host, re) {
  return host.fleetdLog.split('\n').filter((l) => re.test(l));
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The exact words for a host that is not pinned, as a RegExp. */
const unpinnedRe = (host) =>
  new RegExp(escape(`host '${host}' is not pinned here: fleetctl peer add ${host} KEY (run fleetctl identity on ${host} for its key)`));

/** A loopback port nothing listens on. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

hostsTest('before pinning: a send names the host to pin, and its refused beats are logged once', brokerRef, { start: false }, async ({ hostA, hostB }, t) => {
  await Promise.all([hostA.startFleetd(), hostB.startFleetd()]);
  const alice = await hostA.mcpClient('alice');
  await hostB.mcpClient('bob');
  // Each beat of hostB (bob's and its _gateway entry, every 500 ms) reaches
  // hostA and is refused there.
  await sleep(3000 + 2 * FAST_PRESENCE_MS);

  const direct = await toolError(alice, 'fleet_send', { to: 'bob@hostB', content: 'hello?' });
  assert.match(direct, unpinnedRe('hostB'), direct);
  // A bare name: nobody here has it, but unpinned hostB announced it.
  const bare = await toolError(alice, 'fleet_send', { to: 'bob', content: 'hello?' });
  assert.match(bare, unpinnedRe('hostB'), bare);
  assert.match(bare, /'bob'/, bare);

  const c = await counters(hostA);
  assert.ok(c.verify_unpinned >= 3, `every refused beat is counted: ${JSON.stringify(c)}`);
  assert.ok(c.presence_refused >= 3, `every refused beat is counted: ${JSON.stringify(c)}`);
  const lines = logLines(hostA, /presence from host 'hostB'.*not pinned/);
  assert.equal(lines.length, 1, `one log line for hostB, not one per beat (${c.presence_refused} refused):\n${lines.join('\n')}`);
  assert.match(lines[0], /fleetctl peer add hostB KEY/, `the hint names the real host: ${lines[0]}`);
  t.diagnostic(`${c.presence_refused} beats refused, logged as: ${lines[0]}`);
});

hostsTest('a dead-lettered message from an unpinned host names the recipient gid and the host to pin', brokerRef, { start: false }, async ({ hostA, hostB }) => {
  await Promise.all([hostA.startFleetd(), hostB.startFleetd()]);
  // One-sided: hostB trusts hostA, hostA does not trust hostB.
  const idA = await identityOf(hostA);
  const r = await hostB.fleetctl(['peer', 'add', 'hostA', idA.publicKey]);
  assert.equal(r.code, 0, r.stderr);
  const alice = await hostA.mcpClient('alice');
  const bob = await hostB.mcpClient('bob');
  const aliceGid = selfGid(await callTool(alice, 'fleet_list', {}));
  await waitStatus(bob, 'alice', 'hostA', 'online');

  const before = await counters(hostA);
  const sent = await callTool(bob, 'fleet_send', { to: 'alice@hostA', content: 'from an unpinned host' });
  assert.equal(sent.status, 'sent', JSON.stringify(sent));
  await waitCounter(hostA, 'verify_unpinned', (before.verify_unpinned ?? 0) + 1);
  const line = await waitFor(() => logLines(hostA, new RegExp(`dead-lettered ${sent.msgId}`))[0], { what: 'the dead-letter line' });
  assert.match(line, new RegExp(escape(`from host 'hostB' (recipient gid ${aliceGid}): its host is not pinned here (fleetctl peer add hostB KEY)`)), line);

  const bc = await callTool(bob, 'fleet_broadcast', { content: 'to everyone' });
  const bline = await waitFor(() => logLines(hostA, new RegExp(`dead-lettered ${bc.msgId}`))[0], { what: 'the broadcast dead-letter line' });
  // The copy sealed for hostA's members, under hostA's broadcast key.
  assert.match(bline, /from host 'hostB' \(routing key broadcast\.hostA\.all\): its host is not pinned here \(fleetctl peer add hostB KEY\)/, bline);
  const p = await callTool(alice, 'fleet_poll', { wait_s: 0 });
  assert.deepEqual(p.messages, [], `nothing from the unpinned host is delivered: ${JSON.stringify(p)}`);
});

hostsTest('peer remove drops the host\'s agents at once; pinned again, they come back', brokerRef, async ({ hostA, hostB }) => {
  const alice = await hostA.mcpClient('alice');
  const bob = await hostB.mcpClient('bob');
  await waitStatus(alice, 'bob', 'hostB', 'online');
  const ok = await callTool(alice, 'fleet_send', { to: 'bob@hostB', content: 'while pinned' });
  assert.equal(ok.status, 'sent', JSON.stringify(ok));
  const got = await callTool(bob, 'fleet_poll', { wait_s: 10 });
  assert.deepEqual(got.messages.map((m) => m.content), ['while pinned'], JSON.stringify(got));
  const bobGid = selfGid(await callTool(bob, 'fleet_list', {}));

  const keyB = (await identityOf(hostB)).publicKey;
  const rm = await hostA.fleetctl(['peer', 'remove', 'hostB']);
  assert.equal(rm.code, 0, `peer remove: ${rm.stdout}${rm.stderr}`);
  // At once: no poll of the roster, no waiting for a TTL.
  const list = await callTool(alice, 'fleet_list', {});
  assert.deepEqual(list.entities.filter((e) => e.host === 'hostB'), [], `no hostB entries after peer remove: ${JSON.stringify(list)}`);
  assert.ok(findEntity(list, 'alice', 'hostA'), 'local entries stay');
  for (const to of ['bob@hostB', 'bob', bobGid]) {
    const err = await toolError(alice, 'fleet_send', { to, content: 'after the unpin' });
    assert.match(err, unpinnedRe('hostB'), `send to ${to}: ${err}`);
  }
  // Still gone a few beats later: its beats are refused now.
  await sleep(3 * FAST_PRESENCE_MS);
  assert.ok(!findEntity(await callTool(alice, 'fleet_list', {}), 'bob', 'hostB'), 'bob stays out while hostB is not pinned');
  const st = parseJson(await hostA.fleetctl(['--json', 'status']), 'status');
  assert.equal(st.entities, 1, `status counts only believed entities: ${JSON.stringify(st)}`);

  const add = await hostA.fleetctl(['peer', 'add', 'hostB', keyB]);
  assert.equal(add.code, 0, `peer add: ${add.stdout}${add.stderr}`);
  const back = await waitStatus(alice, 'bob', 'hostB', 'online', { timeout: 6 * FAST_PRESENCE_MS + 4000 });
  assert.equal(back.entity.gid, bobGid, 'bob comes back with his gid');
  const again = await callTool(alice, 'fleet_send', { to: 'bob@hostB', content: 'pinned again' });
  assert.equal(again.status, 'sent', JSON.stringify(again));
  const got2 = await callTool(bob, 'fleet_poll', { wait_s: 10 });
  assert.deepEqual(got2.messages.map((m) => m.content), ['pinned again'], JSON.stringify(got2));
});

hostsTest('status reads degraded, naming the agent, while its inbox is not consumed', brokerRef, { hosts: ['hostL'], start: false }, async ({ hostL, broker }, t) => {
  // A broker user that may connect, declare and publish, and read the
  // link's own queues, but not agent inboxes.
  const user = `limited${process.pid}`;
  await broker.ctl(['add_user', user, 'pw']);
  try {
    await broker.ctl(['set_permissions', '-p', broker.vhost, user, '.*', '.*', '^(fleet\\..*|roster\\..*|control\\..*|claims\\..*)$']);
    hostL.broker = { uri: broker.uriAs(user, 'pw') };
    await hostL.startFleetd();
    const carol = await hostL.mcpClient('carol');
    const carolGid = selfGid(await callTool(carol, 'fleet_list', {}));
    const st = await waitFor(
      async () => {
        const s = await status(hostL);
        return s.broker && s.broker.state !== 'down' && s.broker.consumers?.failing?.length ? s : null;
      },
      { timeout: 15000, what: 'a failing consumer in fleetctl status' }
    );
    const b = st.broker;
    t.diagnostic(`broker: ${JSON.stringify(b)}`);
    assert.equal(b.state, 'degraded', `not "up" while an inbox is refused: ${JSON.stringify(b)}`);
    const f = b.consumers.failing.find((x) => x.gid === carolGid);
    assert.ok(f, `carol is listed as failing: ${JSON.stringify(b)}`);
    assert.equal(f.name, 'carol');
    assert.match(f.why, /ACCESS_REFUSED/, `the why names the broker's refusal: ${f.why}`);
    assert.match(b.why, /carol/, `the broker's why names the agent: ${b.why}`);
    assert.equal(typeof b.consumers.consuming, 'number');
  } finally {
    await broker.ctl(['delete_user', user], { check: false });
  }
});

hostsTest('a broker address where nothing listens reads "connection refused"', brokerRef, { hosts: ['hostR'], start: false }, async ({ hostR }) => {
  const port = await freePort();
  hostR.broker = { uri: `amqp://guest:guest@127.0.0.1:${port}/` };
  await hostR.startFleetd();
  const st = await waitFor(
    async () => {
      const s = await status(hostR);
      return s.broker && s.broker.why && s.broker.why !== 'connecting' ? s : null;
    },
    { timeout: 15000, what: 'a reason in fleetctl status' }
  );
  assert.equal(st.broker.state, 'down', JSON.stringify(st.broker));
  assert.match(st.broker.why, /connection refused/, st.broker.why);
  assert.match(st.broker.why, new RegExp(`127\\.0\\.0\\.1:${port}`), st.broker.why);
  assert.doesNotMatch(st.broker.why, /a socket error occurred/, st.broker.why);
});
