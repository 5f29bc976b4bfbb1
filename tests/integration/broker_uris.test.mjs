// broker_uris.test.mjs — broker.uri as a list (the nodes of a cluster): a
// gateway whose first URI answers nothing moves on to the next one, links up
// and carries messages; a list with a malformed URI is refused at start.

import assert from 'node:assert/strict';
import { callTool } from './harness.mjs';
import { useBroker, hostsTest, portFree, waitEntity } from './broker-harness.mjs';

const brokerRef = useBroker();

async function deadPort() {
  for (;;) {
    const p = 30000 + Math.floor(Math.random() * 10000);
    if (await portFree(p)) return p;
  }
}

hostsTest('a dead first URI is skipped; the next one carries the traffic', brokerRef, { start: false }, async ({ hostA, hostB, broker }) => {
  const port = await deadPort();
  const dead = `amqp://guest:guest@127.0.0.1:${port}/`;
  await hostA.startFleetd({ broker: { uri: [dead, broker.uri] } });
  await hostB.startFleetd();
  const st = JSON.parse((await hostA.fleetctl(['status', '--json'])).stdout);
  assert.equal(st.mode, 'broker');
  const { pinAll } = await import('./broker-harness.mjs');
  await pinAll([hostA, hostB]);
  const alice = await hostA.mcpClient('alice');
  const bob = await hostB.mcpClient('bob');
  await waitEntity(alice, 'bob', 'hostB', () => true, { timeout: 20000 });
  const sent = await callTool(alice, 'fleet_send', { to: 'bob', content: 'over the second URI' });
  assert.equal(sent.status, 'sent', JSON.stringify(sent));
  const got = await callTool(bob, 'fleet_poll', { wait_s: 10 });
  assert.deepEqual(got.messages.map((m) => m.content), ['over the second URI']);
  const after = JSON.parse((await hostA.fleetctl(['status', '--json'])).stdout);
  assert.equal(after.broker.state, 'up', JSON.stringify(after.broker));
  assert.match(hostA.fleetdLog, new RegExp(`cannot connect, retrying: .*127\\.0\\.0\\.1:${port}`));
  assert.match(hostA.fleetdLog, new RegExp(`link up \\(127\\.0\\.0\\.1:${broker.port} `));
});

hostsTest('a malformed URI in the list is refused at start, naming which', brokerRef, { start: false, hosts: ['hostA'] }, async ({ hostA, broker }) => {
  await assert.rejects(hostA.startFleetd({ broker: { uri: [broker.uri, 'nonsense'] } }));
  assert.match(hostA.fleetdLog, /broker URI 2 is malformed/);
});
