// claude_approve.test.mjs — the real Claude Code (tests/clis, pinned) as a
// fleet worker, spawned by a lead from the profile `fleetctl profile claude`
// prints, against the fake model on loopback and a real fleetd. A scripted
// tool call that needs permission (Bash) makes the worker blocked; the lead
// polls the BLOCKED message and answers with fleet_approve:
//
//   - allow: Claude Code's dialog closes, the tool runs (its marker file
//     appears) and the model gets the tool's result;
//   - deny, with a reason: the tool does not run and the model gets the
//     reason as the tool's error.
//
// Claude Code runs in a window fleetd opens on a private tmux server, with
// HOME and its config dir in the test's temp dir.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { callTool, claudeWorker, fleetTest, fleetctlJson, startModel, waitFor } from './cli_harness.mjs';

const DENY_REASON = 'fleet-approve-deny: not on this branch';

fleetTest('Claude Code worker blocked on Bash: the lead polls BLOCKED; fleet_approve allow runs the tool, deny refuses it', { timeout: 300000 }, async (f, t) => {
  const model = await startModel(f, (r) => {
    if (r.side || r.lastUser == null) return { text: 'done' };
    // The brief comes through the hooks (a system reminder) or typed: the newest user message holds it.
    const mark = JSON.stringify(r.body.messages.filter((m) => m.role === 'user').slice(-1)).match(/DOBASH-(\w+)/);
    if (mark) return { toolCalls: [{ name: 'Bash', input: { command: `touch ${path.join(f.dir, `ran-${mark[1]}`)}`, description: 'touch a marker' } }] };
    return { text: 'noted' };
  });
  // The lead spawns the worker itself, so it is the worker's spawner.
  const w = await claudeWorker(f, model, { config: { hooks: { approveTimeoutMs: 90000 } }, spawnBy: 'lead' });
  const { tm, lead, activity } = w;
  const blocked = async () => {
    for (let i = 0; i < 12; i++) {
      const got = await callTool(lead, 'fleet_poll', { wait_s: 10 });
      const m = got.messages.find((x) => x.kind === 'BLOCKED');
      if (m) return m;
    }
    throw new Error('no BLOCKED message reached the lead');
  };
  const toolResult = (pred, what) =>
    waitFor(() => model.requests.some((r) => r.toolResults.some((x) => x.name === 'Bash' && pred(x))), { timeout: 60000, what });

  await t.test('spawned by the lead, idle', async () => {
    await w.spawn('w1');
    await waitFor(async () => (await activity())?.state === 'idle', { timeout: 60000, what: 'w1 idle' });
  });

  await t.test('allow: the tool runs and the model sees its result', async () => {
    const r = await callTool(lead, 'fleet_send', { to: 'w1', content: 'DOBASH-a please', wait_s: 0 });
    assert.equal(r.status, 'injected', JSON.stringify(r));
    const m = await blocked();
    assert.equal(m.from.name, 'w1');
    assert.equal(m.request.tool, 'Bash');
    assert.ok(m.request.input.includes('ran-a'), m.request.input);
    const a = await activity();
    assert.equal(a.state, 'blocked');
    assert.equal(a.reason, 'permission: Bash');
    await tm.waitScreen(w.pane, /Do you want to proceed\?/, { timeout: 30000, what: "Claude Code's dialog, open while the hook waits" });
    const ok = await callTool(lead, 'fleet_approve', { to: 'w1', requestId: m.request.requestId, decision: 'allow' });
    assert.equal(ok.status, 'allowed');
    await waitFor(() => existsSync(path.join(f.dir, 'ran-a')), { timeout: 60000, what: 'the allowed tool running' });
    await toolResult((x) => !x.isError, 'the tool result at the model');
    await waitFor(async () => (await activity())?.state === 'idle', { timeout: 60000, what: 'w1 idle after the turn' });
  });

  await t.test('deny: the tool is refused and the model sees the reason', async () => {
    const r = await callTool(lead, 'fleet_send', { to: 'w1', content: 'DOBASH-d please', wait_s: 0 });
    assert.equal(r.status, 'injected', JSON.stringify(r));
    const m = await blocked();
    const no = await callTool(lead, 'fleet_approve', { to: 'w1', requestId: m.request.requestId, decision: 'deny', reason: DENY_REASON });
    assert.equal(no.status, 'denied');
    await toolResult((x) => x.isError && x.text.includes(DENY_REASON), 'the refusal, with its reason, at the model');
    assert.equal(existsSync(path.join(f.dir, 'ran-d')), false, 'the denied tool did not run');
    const st = await fleetctlJson(f, ['status']);
    assert.equal(st.approvals.allowed, 1);
    assert.equal(st.approvals.denied, 1);
  });
});
