// stop_authority.test.mjs — who may stop an agent comes from the config of
// the host that acts, never from the role a session declares. A session that
// calls itself a lead (here, and on another host over the broker) cannot
// stop an agent it did not spawn; with authority.stop naming it (role:lead
// for a local lead, name@host for a remote one) it can; this host's operator
// (fleetctl) can; and a stop never closes a pane fleetd did not open: an
// agent that registered its own tmux pane (a person's session) leaves the
// roster, but its pane stays, and the result says so.

import assert from 'node:assert/strict';
import path from 'node:path';
import { callTool, callToolRaw, fleetTest, resultText, waitFor } from './harness.mjs';
import { useBroker, hostsTest, waitStatus } from './broker-harness.mjs';
import { panes, startTmux, stopTmux } from './tmux-harness.mjs';
import { counters } from './trust-helpers.mjs';

const listed = async (client, name) => (await callTool(client, 'fleet_list', {})).entities.some((e) => e.name === name);

fleetTest('a self-declared lead cannot stop a local agent; the operator can, and no pane fleetd did not open is closed', async (f) => {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    const humanPane = await startTmux(f, sock, 'exec cat');
    await f.startFleetd();
    // A person's own lead session, registered with its own pane.
    const human = await f.mcpClient('human', { role: 'lead', env: { TMUX_PANE: humanPane, TMUX: `${sock},0,0` } });
    const rogue = await f.mcpClient('rogue', { role: 'lead' });
    const r = await callToolRaw(rogue, 'fleet_stop', { to: 'human' });
    assert.equal(r.isError, true, `a declared lead stopped a session it did not spawn: ${resultText(r)}`);
    assert.match(resultText(r), /a role grants nothing/);
    assert.equal((await counters(f)).stops_refused, 1);
    assert.ok(await listed(rogue, 'human'), 'still listed after the refused stop');

    // The operator may stop it: it leaves the roster, its pane stays.
    const st = await f.fleetctl(['--json', 'stop', 'human']);
    assert.equal(st.code, 0, st.stdout + st.stderr);
    const res = JSON.parse(st.stdout);
    assert.equal(res.status, 'stopped');
    assert.equal(res.terminalClosed, false);
    assert.equal(await listed(rogue, 'human'), false);
    assert.ok((await panes(f, sock)).includes(humanPane), 'the pane fleetd did not open is still there');
    assert.match(f.fleetdLog, /fleetd opened no terminal for it, so none is closed/);
    await f.closeClient(human);

    // With authority.stop naming the role, a local lead may.
    await f.closeClient(rogue);
    await f.stopFleetd();
    await f.startFleetd({ config: { authority: { stop: ['role:lead'] } } });
    const lead = await f.mcpClient('rogue', { role: 'lead' });
    const victim = await f.mcpClient('victim', { role: 'worker' });
    const ok = await callTool(lead, 'fleet_stop', { to: 'victim' });
    assert.equal(ok.status, 'stopped');
    await f.closeClient(victim);
    // A worker is not named: still refused.
    const w = await f.mcpClient('w', { role: 'worker' });
    await f.mcpClient('other', { role: 'worker' });
    const no = await callToolRaw(w, 'fleet_stop', { to: 'other' });
    assert.equal(no.isError, true);
  } finally {
    await stopTmux(f, sock);
  }
});

fleetTest('an authority entry that is not a host, name@host or role:<role> is an error naming the file and key', async (f) => {
  await assert.rejects(f.startFleetd({ config: { authority: { stop: ['role:'] } } }));
  assert.match(f.fleetdLog, /authority\.stop/);
  assert.match(f.fleetdLog, /config\.json/);
  f.fleetd = null;
  await assert.rejects(f.startFleetd({ config: { authority: { kill: [] } } }));
  assert.match(f.fleetdLog, /unknown key "authority\.kill"/);
  f.fleetd = null;
});

const brokerRef = useBroker();

hostsTest('a lead of another host cannot stop an agent here unless this host\'s config names it', brokerRef, async ({ hostA, hostB }) => {
  const lead = await hostA.mcpClient('alead', { role: 'lead' });
  let bob = await hostB.mcpClient('bob', { role: 'worker' });
  await waitStatus(lead, 'bob', 'hostB', 'online');
  await waitStatus(bob, 'alead', 'hostA', 'online');
  const r = await callToolRaw(lead, 'fleet_stop', { to: 'bob@hostB' });
  assert.equal(r.isError, true, `a remote declared lead stopped bob: ${resultText(r)}`);
  assert.match(resultText(r), /a role grants nothing/);
  assert.ok(await listed(bob, 'bob'));
  assert.equal((await counters(hostB)).stops_refused, 1);

  // hostB names alead@hostA: now it may.
  await hostB.closeClient(bob);
  await hostB.stopFleetd();
  await hostB.startFleetd({ config: { authority: { stop: ['alead@hostA'] } } });
  bob = await hostB.mcpClient('bob', { role: 'worker' });
  await waitStatus(lead, 'bob', 'hostB', 'online', { timeout: 20000 });
  await waitStatus(bob, 'alead', 'hostA', 'online', { timeout: 20000 });
  const ok = await callTool(lead, 'fleet_stop', { to: 'bob@hostB' });
  assert.equal(ok.status, 'stopped');
  await waitFor(async () => !(await listed(lead, 'bob')), { what: 'bob gone from hostA' });
});
