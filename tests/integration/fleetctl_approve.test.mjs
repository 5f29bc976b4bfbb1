// fleetctl_approve.test.mjs — the operator sees and answers permission
// requests: `fleetctl approvals` and `fleetctl approve AGENT REQUESTID
// allow|deny [REASON]`.
//
// The worker is spawned by fleetctl (so its BLOCKED messages go to the
// fleetctl identity), a real agent (agents/prompt_agent.mjs in a tmux pane,
// registered through fleet-mcp with the gid fleetd gave its window); its
// PermissionRequest hook is fleet-hook driven as Claude Code drives it (the
// hook's JSON on stdin, FLEET_GID and FLEET_SOCKET in its environment).
// Checked against a real fleetd:
//   - `fleetctl approvals` lists the waiting request (requestId, agent, tool,
//     input, until when, who was asked), as text and --json;
//   - a session the host has not authorised is refused whatever role it
//     declares, and the request still waits;
//   - `fleetctl approve ... allow` reaches fleet-hook as Claude Code's allow;
//     `... deny REASON` as its deny with the reason;
//   - a decision that is neither allow nor deny is a usage error; a request
//     answered twice is refused.

import assert from 'node:assert/strict';
import path from 'node:path';
import { BIN_DIR, callToolRaw, fleetTest, fleetctlJson, resultText, waitFor } from './harness.mjs';
import { runHook } from './hook-harness.mjs';
import { promptAgentProfile, startTmux, stopTmux } from './tmux-harness.mjs';

const HOST = 'hostA';

/** Runs fleet-hook with input on stdin as worker gid; resolves { code, stdout, stderr }. */
const hook = (f, gid, input, { timeout = 60000 } = {}) => runHook({ gid, socket: f.socket, input }, timeout);

const PERM = (command) => ({
  session_id: 's-1',
  hook_event_name: 'PermissionRequest',
  tool_name: 'Bash',
  tool_input: { command, description: 'a command' },
  permission_suggestions: [],
});

/** The one request fleetctl approvals lists, once it does. */
async function waiting(f) {
  return (
    await waitFor(async () => {
      const r = await fleetctlJson(f, ['approvals']);
      return r.requests.length === 1 && r.requests[0];
    }, { what: 'the request in fleetctl approvals' })
  );
}

fleetTest('fleetctl approvals lists what a worker it spawned is blocked on; fleetctl approve allow and deny reach the hook; others are refused', async (f) => {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    await startTmux(f, sock, 'exec cat');
    await f.startFleetd({
      config: { hostId: HOST, profiles: { agent: promptAgentProfile(f.dir, BIN_DIR) }, hooks: { approveTimeoutMs: 60000 } },
    });
    const sp = await fleetctlJson(f, ['spawn', 'agent', '--wait', '30'], { env: { TMUX: `${sock},0,0` } });
    assert.equal(sp.status, 'ready', JSON.stringify(sp));
    const gid = sp.gid;
    const none = await f.fleetctl(['approvals']);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, `no permission request waits for a decision on ${HOST}\n`);

    // Blocked: the request is listed for the operator, who spawned it.
    const asked = hook(f, gid, PERM('ls /tmp'));
    const r = await waiting(f);
    assert.match(r.requestId, /^[0-9a-f-]{36}$/i);
    assert.equal(r.gid, gid);
    assert.equal(r.name, sp.name);
    assert.equal(r.tool, 'Bash');
    assert.equal(r.input, '{"command":"ls /tmp","description":"a command"}');
    assert.ok(Date.parse(r.expiresAt) > Date.now(), r.expiresAt);
    assert.equal(r.spawner.name, 'operator');
    assert.equal(r.spawner.host, HOST);
    const text = await f.fleetctl(['approvals']);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(
      text.stdout,
      `${r.requestId}  ${sp.name} (${gid})  Bash  until ${r.expiresAt}  asked of operator@${HOST}\n` +
        '  input: {"command":"ls /tmp","description":"a command"}\n' +
        'answer with: fleetctl approve AGENT REQUESTID allow|deny [REASON]\n'
    );

    // A session the host has not authorised: refused whatever role it declares; still waiting.
    const intruder = await f.mcpClient('intruder', { role: 'lead' });
    const no = await callToolRaw(intruder, 'fleet_approve', { to: sp.name, requestId: r.requestId, decision: 'allow' });
    assert.equal(no.isError, true);
    assert.match(resultText(no), /authority\.approve/);
    assert.equal((await fleetctlJson(f, ['approvals'])).requests.length, 1, 'the request still waits');

    // A decision that is neither: a usage error, nothing sent.
    const bad = await f.fleetctl(['approve', sp.name, r.requestId, 'maybe']);
    assert.equal(bad.code, 2, bad.stdout);
    assert.match(bad.stderr, /allow or deny/);

    // The operator allows: the hook answers Claude Code's allow.
    const ok = await f.fleetctl(['approve', sp.name, r.requestId, 'allow']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, `allowed request ${r.requestId} of ${sp.name} (${gid}) on ${HOST}\n`);
    const out = await asked;
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(JSON.parse(out.stdout), {
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });
    assert.deepEqual((await fleetctlJson(f, ['approvals'])).requests, []);
    const again = await f.fleetctl(['approve', sp.name, r.requestId, 'deny']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already answered \(allow\)/);

    // The next one denied, with a reason: Claude Code's deny with it.
    const asked2 = hook(f, gid, PERM('rm -rf build'));
    const r2 = await waiting(f);
    assert.notEqual(r2.requestId, r.requestId);
    const den = await fleetctlJson(f, ['approve', gid, r2.requestId, 'deny', 'not in this repo']);
    assert.deepEqual(den, { gid, name: sp.name, host: HOST, requestId: r2.requestId, decision: 'deny', status: 'denied' });
    const out2 = await asked2;
    assert.deepEqual(JSON.parse(out2.stdout), {
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'deny', message: 'not in this repo' } },
    });

    const st = await fleetctlJson(f, ['status']);
    assert.equal(st.approvals.allowed, 1);
    assert.equal(st.approvals.denied, 1);
    assert.equal(st.approvals.refused, 1);
    assert.equal(st.approvals.replayed, 1);
  } finally {
    await stopTmux(f, sock);
  }
});
