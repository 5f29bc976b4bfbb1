// hostid.test.mjs — two gateways that share a host id on one broker: the
// second cannot take the host's exclusive queues, says so loudly (an ERROR
// line and the reason in fleetctl status), and does not disturb the first.

import assert from 'node:assert/strict';
import { waitFor } from './harness.mjs';
import { useBroker, hostsTest } from './broker-harness.mjs';

const brokerRef = useBroker();

async function brokerStatus(fleet) {
  const r = await fleet.fleetctl(['--json', 'status']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).broker;
}

hostsTest('a second gateway with the same host id fails loudly', brokerRef, { hosts: ['twin', 'twin'], start: false }, async (world) => {
  const [first, second] = world.hosts;
  await first.startFleetd();
  await waitFor(async () => (await brokerStatus(first)).state === 'up', { what: 'the first gateway to be up' });
  await second.startFleetd();
  const st = await waitFor(
    async () => {
      const b = await brokerStatus(second);
      return /another gateway/.test(b.why) ? b : null;
    },
    { timeout: 15000, what: 'the second gateway to report the clash' }
  );
  assert.equal(st.state, 'down');
  assert.match(second.fleetdLog, /ERROR another gateway with host id 'twin'/);
  assert.equal((await brokerStatus(first)).state, 'up', 'the first gateway is unaffected');
});
