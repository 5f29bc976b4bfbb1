// profiles.test.mjs — spawn profiles (fleetd.json "profiles") announced by
// every host: fleet_list's `hosts` shows this host's profiles and those of
// every pinned host heard from, even one with no agent, and never what a
// profile runs (command, cwd, env stay on their host). A host whose gateway
// beats stop reads unknown after the presence TTL. Single-host mode lists
// just this host.

import assert from 'node:assert/strict';
import { callTool, fleetTest, waitFor } from './harness.mjs';
import { useBroker, hostsTest, pinAll, FAST_PRESENCE_TTL_MS } from './broker-harness.mjs';

const brokerRef = useBroker();

// Strings that must never leave their host.
const SECRET_CMD = 'secret-agent-binary-7f3a';
const SECRET_ARG = '--secret-flag-91c2';
const SECRET_CWD = '/srv/secret-cwd-5d1e';
const SECRET_ENV = 'secret-env-value-b8e0';

const PROFILES_B = {
  claude: {
    backend: 'tmux',
    command: [SECRET_CMD, SECRET_ARG],
    cwd: SECRET_CWD,
    env: { API_TOKEN: SECRET_ENV },
    role: 'worker',
    groups: ['backend', 'night'],
    readyTimeoutS: 90,
    prompt: '^> *$',
    quietMs: 800,
  },
  runner: {
    backend: 'exec',
    command: [`${SECRET_CMD}-exec`],
    role: 'orchestrator',
  },
};

const PROFILES_A = {
  lead: { backend: 'tmux', command: ['claude-lead-cmd-e4a1'], role: 'lead', groups: ['leads'] },
};

// What fleet_list must show for them: name order, defaults filled in.
const SHOWN_B = [
  { name: 'claude', backend: 'tmux', role: 'worker', groups: ['backend', 'night'] },
  { name: 'runner', backend: 'exec', role: 'orchestrator', groups: [] },
];
const SHOWN_A = [{ name: 'lead', backend: 'tmux', role: 'lead', groups: ['leads'] }];

function hostEntry(list, host) {
  return (list.hosts || []).find((h) => h.host === host);
}

function assertNoSecrets(list, what) {
  const text = JSON.stringify(list);
  for (const s of [SECRET_CMD, SECRET_ARG, SECRET_CWD, SECRET_ENV, 'claude-lead-cmd-e4a1', 'API_TOKEN']) {
    assert.ok(!text.includes(s), `${what} leaks '${s}': ${text}`);
  }
  for (const h of list.hosts) {
    for (const p of h.profiles) {
      assert.deepEqual(Object.keys(p).sort(), ['backend', 'groups', 'name', 'role'], `${what}: ${JSON.stringify(p)}`);
    }
  }
}

hostsTest(
  'an agentless host with profiles is a spawn target in fleet_list, without its command',
  brokerRef,
  { start: false },
  async ({ hostA, hostB }) => {
    await Promise.all([
      hostA.startFleetd({ config: { profiles: PROFILES_A } }),
      hostB.startFleetd({ config: { profiles: PROFILES_B } }),
    ]);
    await pinAll([hostA, hostB]);
    const alice = await hostA.mcpClient('alice', { role: 'lead' });
    // Listing the tools first makes the SDK check fleet_list's
    // structuredContent (hosts included) against its outputSchema.
    await alice.listTools();

    let last;
    const b = await waitFor(
      async () => {
        last = await callTool(alice, 'fleet_list', {});
        const h = hostEntry(last, 'hostB');
        return h && h.status === 'online' ? h : null;
      },
      { timeout: 15000, interval: 100, what: 'hostB in fleet_list hosts' }
    ).catch((e) => {
      e.message += `\nlast fleet_list: ${JSON.stringify(last)}`;
      throw e;
    });
    assert.equal(b.self, false);
    assert.deepEqual(b.profiles, SHOWN_B);
    // hostB runs no agent: it is a host entry, not an entity.
    assert.ok(!last.entities.some((e) => e.host === 'hostB'), JSON.stringify(last.entities));

    const a = hostEntry(last, 'hostA');
    assert.ok(a, JSON.stringify(last));
    assert.equal(a.self, true);
    assert.equal(a.status, 'online');
    assert.deepEqual(a.profiles, SHOWN_A);
    assert.equal(last.hosts[0].host, 'hostA', 'this host comes first');
    assert.equal(last.hosts.length, 2, JSON.stringify(last.hosts));
    assertNoSecrets(last, "hostA's fleet_list");

    // hostB sees itself and hostA the same way.
    const bob = await hostB.mcpClient('bob');
    const fromB = await waitFor(
      async () => {
        const l = await callTool(bob, 'fleet_list', {});
        const h = hostEntry(l, 'hostA');
        return h && h.status === 'online' ? l : null;
      },
      { timeout: 15000, interval: 100, what: 'hostA in hostB fleet_list hosts' }
    );
    assert.deepEqual(hostEntry(fromB, 'hostB'), { host: 'hostB', self: true, status: 'online', profiles: SHOWN_B });
    assert.deepEqual(hostEntry(fromB, 'hostA'), { host: 'hostA', self: false, status: 'online', profiles: SHOWN_A });
    assertNoSecrets(fromB, "hostB's fleet_list");
    await hostB.closeClient(bob);

    // hostB's beats stop: after the TTL it reads unknown, its last
    // profiles kept.
    await hostB.stopFleetd();
    const gone = await waitFor(
      async () => {
        const l = await callTool(alice, 'fleet_list', {});
        const h = hostEntry(l, 'hostB');
        return h && h.status === 'unknown' ? h : null;
      },
      { timeout: FAST_PRESENCE_TTL_MS + 10000, interval: 200, what: 'hostB to read unknown' }
    );
    assert.deepEqual(gone.profiles, SHOWN_B);
    await hostA.closeClient(alice);
  }
);

fleetTest('single-host mode: fleet_list hosts is just this host, with its profiles', async (f) => {
  await f.startFleetd({ config: { profiles: PROFILES_B } });
  const sam = await f.mcpClient('sam');
  await sam.listTools();
  const list = await callTool(sam, 'fleet_list', {});
  assert.deepEqual(list.hosts, [{ host: list.host, self: true, status: 'online', profiles: SHOWN_B }]);
  assertNoSecrets(list, 'fleet_list');
  await f.closeClient(sam);
});

fleetTest('single-host mode without profiles: this host, with none', async (f) => {
  await f.startFleetd();
  const sam = await f.mcpClient('sam');
  const list = await callTool(sam, 'fleet_list', {});
  assert.deepEqual(list.hosts, [{ host: list.host, self: true, status: 'online', profiles: [] }]);
  await f.closeClient(sam);
});
