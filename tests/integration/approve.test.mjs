// approve.test.mjs — a worker blocked on a permission request is seen by its
// spawner, who answers it with fleet_approve.
//
// The worker is a real spawned agent (agents/prompt_agent.mjs in a tmux
// pane, registered through fleet-mcp with the gid fleetd gave its window);
// its PermissionRequest hook is fleet-hook driven as Claude Code drives it:
// the hook's JSON on stdin, FLEET_GID and FLEET_SOCKET in its environment.
// Checked, against a real fleetd:
//   - the worker shows blocked (reason "permission: Bash") in fleet_list,
//     `fleetctl roster` and the dashboard's page (headless Chromium) while
//     the hook waits, and the spawner polls a
//     BLOCKED message with the tool, the input and a requestId;
//   - fleet_approve allow / deny reaches fleet-hook, which answers Claude
//     Code's allow / deny (with the reason);
//   - a session the worker's host has not authorised is refused whatever
//     role it declares; one authority.approve names may decide;
//   - a requestId is answered once (a repeat is refused and counted), an
//     unknown one is named as such, a bad decision is refused;
//   - with no decision in hooks.approveTimeoutMs, fleet-hook answers
//     nothing (the agent's own dialog stays), and a late decision hears
//     that the request expired.

import assert from 'node:assert/strict';
import path from 'node:path';
import { BIN_DIR, callTool, callToolRaw, fleetTest, resultText, waitFor } from './harness.mjs';
import { runHook } from './hook-harness.mjs';
import { promptAgentProfile, startTmux, stopTmux } from './tmux-harness.mjs';
import { Browser } from './cdp.mjs';
import { dashboardUrl } from './dashboard-helpers.mjs';

const HOST = 'hostA';

/** Runs fleet-hook with input on stdin as worker gid; resolves { code, stdout, stderr }. */
const hook = (f, gid, input, { timeout = 60000 } = {}) => runHook({ gid, socket: f.socket, input }, timeout);

const PERM = (command) => ({
  session_id: 's-1',
  transcript_path: '/tmp/t.jsonl',
  cwd: '/tmp',
  permission_mode: 'default',
  hook_event_name: 'PermissionRequest',
  tool_name: 'Bash',
  tool_input: { command, description: 'a command' },
  permission_suggestions: [],
});

/** fleetd with a spawn profile, a boss that spawns worker agent-1; runs fn. */
async function withWorker(f, config, fn) {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    const pane = await startTmux(f, sock, 'exec cat');
    await f.startFleetd({
      config: { hostId: HOST, profiles: { agent: promptAgentProfile(f.dir, BIN_DIR) }, ...config },
    });
    const boss = await f.mcpClient('boss', { role: 'lead', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const res = await callTool(boss, 'fleet_spawn', { profile: 'agent' });
    assert.equal(res.status, 'ready');
    await fn(boss, res.gid);
  } finally {
    await stopTmux(f, sock);
  }
}

/** Polls boss until a BLOCKED message comes; returns it. */
async function blockedFor(boss) {
  for (let i = 0; i < 10; i++) {
    const got = await callTool(boss, 'fleet_poll', { wait_s: 10 });
    const m = got.messages.find((x) => x.kind === 'BLOCKED');
    if (m) return m;
  }
  throw new Error('no BLOCKED message came');
}

fleetTest('a blocked worker: blocked in fleet_list and fleetctl, BLOCKED to its spawner, fleet_approve allow and deny reach the hook', async (f, t) => {
  const config = { authority: { approve: [`trusted@${HOST}`] }, hooks: { approveTimeoutMs: 60000 }, http: { listen: '127.0.0.1:0' } };
  await withWorker(f, config, async (boss, gid) => {
    const intruder = await f.mcpClient('intruder', { role: 'lead' });
    const trusted = await f.mcpClient('trusted', { role: 'worker' });

    const t0 = Date.now();
    const asked = hook(f, gid, PERM('ls /tmp'));
    // Blocked, with the reason, in fleet_list and fleetctl roster.
    await waitFor(async () => {
      const list = await callTool(boss, 'fleet_list', {});
      const w = list.entities.find((e) => e.gid === gid);
      return w?.activity?.state === 'blocked' && w.activity.reason === 'permission: Bash';
    }, { what: 'agent-1 blocked in fleet_list' });
    t.diagnostic(`blocked in fleet_list ${Date.now() - t0} ms after the hook started`);
    const roster = await f.fleetctl(['roster']);
    assert.equal(roster.code, 0, roster.stderr);
    assert.match(roster.stdout, /agent-1.*online \(blocked\)/);
    // The dashboard's page shows it too, without a reload.
    const d = await dashboardUrl(f);
    const browser = await Browser.launch();
    try {
      const page = await browser.newPage(d.url);
      const cell = `document.querySelector('.activity[data-name="agent-1"]')?.textContent`;
      await waitFor(async () => (await page.eval(cell)) === 'blocked — permission: Bash', { timeout: 10000, what: 'blocked on the dashboard page' });
    } finally {
      await browser.close();
    }

    // The spawner's poll: BLOCKED from the worker, with the request.
    const m = await blockedFor(boss);
    assert.equal(m.from.gid, gid);
    assert.equal(m.from.name, 'agent-1');
    assert.equal(m.request.tool, 'Bash');
    assert.equal(m.request.input, '{"command":"ls /tmp","description":"a command"}');
    assert.match(m.request.requestId, /^[0-9a-f-]{36}$/i);
    assert.ok(Date.parse(m.request.expiresAt) > Date.now(), m.request.expiresAt);
    const id = m.request.requestId;

    // Not the intruder, whatever role it declares; not a bad decision; not an unknown id.
    let r = await callToolRaw(intruder, 'fleet_approve', { to: 'agent-1', requestId: id, decision: 'allow' });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /authority\.approve/);
    r = await callToolRaw(boss, 'fleet_approve', { to: 'agent-1', requestId: id, decision: 'maybe' });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /decision/);
    r = await callToolRaw(boss, 'fleet_approve', { to: 'agent-1', requestId: '00000000-0000-4000-8000-000000000000', decision: 'allow' });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /unknown requestId/);
    r = await callToolRaw(boss, 'fleet_approve', { to: 'nobody-here', requestId: id, decision: 'allow' });
    assert.equal(r.isError, true);

    // The spawner allows: the hook answers Claude Code's allow.
    const ok = await callTool(boss, 'fleet_approve', { to: 'agent-1', requestId: id, decision: 'allow' });
    assert.deepEqual(ok, { gid, name: 'agent-1', host: HOST, requestId: id, decision: 'allow', status: 'allowed' });
    const out = await asked;
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(JSON.parse(out.stdout), {
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });
    // Answered, its turn goes on: busy until its Stop.
    const after = (await callTool(boss, 'fleet_list', {})).entities.find((e) => e.gid === gid);
    assert.equal(after.activity.state, 'busy');

    // A second decision on it is refused, and counted.
    r = await callToolRaw(boss, 'fleet_approve', { to: 'agent-1', requestId: id, decision: 'deny' });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /already answered \(allow\)/);

    // One that authority.approve names denies the next, with a reason. This
    // one comes on the socket straight, with an input over the bound that
    // fleet-hook would have cut: fleetd cuts it too.
    const raw = await f.rawConn();
    await raw.initialize();
    const asked2 = raw.request('fleet/hook', {
      gid, agent: 'claude', event: 'PermissionRequest', wake: false,
      hook: { tool: 'Bash', input: JSON.stringify({ command: `echo ${'é'.repeat(4000)}` }) },
    }, 60000);
    const m2 = await blockedFor(boss);
    assert.notEqual(m2.request.requestId, id, 'each request has its own id');
    assert.ok(Buffer.byteLength(m2.request.input) <= 512 + 3, `input cut at 512 bytes: ${Buffer.byteLength(m2.request.input)}`);
    assert.ok(m2.request.input.startsWith('{"command":"echo éé') && m2.request.input.endsWith('…'), m2.request.input.slice(0, 40));
    const no = await callTool(trusted, 'fleet_approve', {
      to: gid, requestId: m2.request.requestId, decision: 'deny', reason: 'not in this repo',
    });
    assert.equal(no.status, 'denied');
    const out2 = await asked2;
    assert.deepEqual(out2.result, { action: 'deny', reason: 'not in this repo' });

    // A deny through fleet-hook: Claude Code's deny, with the reason.
    const asked3 = hook(f, gid, PERM('rm -rf build'));
    const m3 = await blockedFor(boss);
    await callTool(boss, 'fleet_approve', { to: 'agent-1', requestId: m3.request.requestId, decision: 'deny', reason: 'not now' });
    const out3 = await asked3;
    assert.deepEqual(JSON.parse(out3.stdout), {
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'deny', message: 'not now' } },
    });

    const st = JSON.parse((await f.fleetctl(['--json', 'status'])).stdout);
    assert.equal(st.approvals.requests, 3);
    assert.equal(st.approvals.allowed, 1);
    assert.equal(st.approvals.denied, 2);
    assert.equal(st.approvals.refused, 1);
    assert.equal(st.approvals.replayed, 1);
    assert.equal(st.approvals.pending, 0);
  });
});

fleetTest('with no decision in hooks.approveTimeoutMs, fleet-hook answers nothing and a late decision hears it expired', async (f) => {
  await withWorker(f, { hooks: { approveTimeoutMs: 1500 } }, async (boss, gid) => {
    const asked = hook(f, gid, PERM('make'));
    const m = await blockedFor(boss);
    const out = await asked;
    assert.deepEqual(out, { code: 0, stdout: '', stderr: '' }, 'no answer: the agent keeps its own dialog');
    const r = await callToolRaw(boss, 'fleet_approve', { to: 'agent-1', requestId: m.request.requestId, decision: 'allow' });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /expired/);
    const st = JSON.parse((await f.fleetctl(['--json', 'status'])).stdout);
    assert.equal(st.approvals.timedOut, 1);
  });
});
