// claude_hooks.test.mjs — the hooks `fleetctl profile claude` writes, run
// by the real Claude Code (tests/clis, pinned) against the fake model on
// loopback, with fleet-hook talking to a scripted stand-in for fleetd's side
// of fleet/hook (tests/integration/hook_stub.mjs). It proves the agent's half
// of the door, each step counted at the model:
//
// 1. The waiter: SessionStart runs `fleet-hook --wake` in the background; a
//    `wake` answer wakes the idle session, and the text reaches the model
//    once, as a system reminder, with nothing typed into the pane. The turn
//    it starts ends with Stop, whose waiter asks again.
// 2. UserPromptSubmit reports the prompt; a `context` answer reaches the
//    model with that turn (additionalContext), once.
// 3. A tool call that needs permission: PermissionRequest reports the tool
//    and its input while Claude Code shows its dialog; `allow` closes the
//    dialog and the tool runs, `deny` refuses it and the model gets the
//    reason; with no answer the dialog stays, and Notification reports
//    permission_prompt.
//
// Claude Code runs in a pane of a private tmux server, as fleetd would start
// it (the profile's command and env, FLEET_GID and FLEET_SOCKET in the
// window), with HOME and its config dir in the test's temp dir.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { stubFleetd } from '../integration/hook_stub.mjs';
import {
  TmuxServer,
  bin,
  callTool,
  claudeProfile,
  claudeWorker,
  fleetTest,
  fleetctlJson,
  gate,
  onCleanup,
  sleep,
  startModel,
  waitFor,
} from './cli_harness.mjs';

const WAKE_TEXT = 'fleet-wake: a brief handed over by the hook';
const CONTEXT_TEXT = 'fleet-context: a message added to this turn';
const DENY_REASON = 'fleet-deny: the lead said no';

/** Every text the model was given in request r (user, system and tool result parts). */
function textsOf(r) {
  const out = [];
  for (const m of r.body.messages || []) {
    const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content || [];
    for (const p of parts) {
      if (p.type === 'text') out.push(p.text);
      if (p.type === 'tool_result') out.push(typeof p.content === 'string' ? p.content : JSON.stringify(p.content));
    }
  }
  return out;
}

/** The requests (side calls left out) whose newest message holds text. */
function carrying(model, text) {
  return model.requests.filter((r) => {
    if (r.api !== 'anthropic' || r.side) return false;
    const msgs = r.body.messages || [];
    const last = msgs.filter((m) => m.role === 'user').slice(-1)[0];
    const sys = msgs.filter((m) => m.role === 'system');
    return [last, ...sys].some((m) => m && textsOf({ body: { messages: [m] } }).some((t) => t.includes(text)));
  });
}

/** A shell word for sh -c. */
const q = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

fleetTest('Claude Code hooks: the waiter wakes an idle session, additionalContext, permission allow/deny/none', { timeout: 300000 }, async (f, t) => {
  const model = await startModel(f, (r) => {
    if (r.side) return { text: 'ok' };
    const mark = (r.lastUser || '').match(/DOBASH-(\w+)/);
    if (mark) return { toolCalls: [{ name: 'Bash', input: { command: `touch ${path.join(f.dir, `ran-${mark[1]}`)}`, description: 'touch a marker' } }] };
    return { text: 'done' };
  });
  const { env, prof } = await claudeProfile(f, model);
  const settings = JSON.parse(prof.files.find((x) => x.path.endsWith('/settings.json')).content);
  assert.equal(settings.hooks.Stop[0].hooks[0].command, `${bin('fleet-hook')} --wake`, 'the hooks run the built fleet-hook');

  // fleetd's side, scripted per event.
  const wakeGate = gate();
  const contexts = [];
  const decisions = [];
  const stub = await stubFleetd(f.dir, async (p) => {
    if (p.event === 'SessionStart' && p.wake) {
      await wakeGate.promise;
      return { action: 'wake', text: WAKE_TEXT };
    }
    if (p.wake) return new Promise(() => {}); // an idle session's waiter, parked
    if (p.event === 'UserPromptSubmit' && contexts.length) return { action: 'context', text: contexts.shift() };
    if (p.event === 'PermissionRequest' && decisions.length) return decisions.shift();
    return { action: 'none' };
  });
  onCleanup(f, () => stub.close());
  const events = (name, pred = () => true) => stub.calls.filter((c) => c.event === name && pred(c));

  const tm = new TmuxServer(f);
  const windowEnv = { ...env, ...prof.profile.env, FLEET_GID: 'gid-hooks-w1', FLEET_SOCKET: stub.sock };
  const pane = await tm.start(`cd ${q(prof.cwd)} && exec ${prof.profile.command.map(q).join(' ')}`, { env: windowEnv });
  onCleanup(f, async () => f.notes.push(`screen:\n${await tm.capture(pane).catch((e) => e.message)}\nhook calls:\n${JSON.stringify(stub.calls, null, 1)}`));
  const promptRe = new RegExp(prof.profile.prompt);
  const idle = () => waitFor(async () => promptRe.test(await tm.cursorLine(pane)), { timeout: 60000, what: 'the idle input line' });
  const type = async (text) => {
    await idle();
    await tm.run('send-keys', '-t', pane, '-l', text);
    await sleep(300);
    await tm.run('send-keys', '-t', pane, 'Enter');
  };

  await t.test('the SessionStart waiter wakes the idle session: the text reaches the model once, nothing typed', async () => {
    await idle();
    await waitFor(() => events('SessionStart', (c) => c.wake).length === 1, { timeout: 30000, what: 'the SessionStart waiter asking fleetd' });
    const w = events('SessionStart')[0];
    assert.equal(w.gid, 'gid-hooks-w1');
    assert.equal(w.agent, 'claude');
    assert.equal(typeof w.hook.sessionId, 'string');
    const before = model.requests.length;
    wakeGate.open();
    await waitFor(() => carrying(model, WAKE_TEXT).length >= 1, { timeout: 60000, what: 'the wake text at the model' });
    await waitFor(() => events('Stop', (c) => c.wake).length >= 1, { timeout: 60000, what: "the woken turn's Stop waiter" });
    const got = carrying(model, WAKE_TEXT);
    assert.equal(got.length, 1, 'the wake text reached the model once');
    const user = got[0].body.messages.filter((m) => m.role === 'user').slice(-1)[0];
    const text = textsOf({ body: { messages: [user] } }).join('\n');
    assert.match(text, /SYSTEM NOTIFICATION - NOT USER INPUT/, 'as a system reminder');
    // The label names the hook that woke it: "SessionStart:startup" here, "Stop" after a turn.
    assert.ok(text.includes(`Stop hook blocking error from command "SessionStart:startup": ${WAKE_TEXT}`), text);
    assert.equal(got[0].lastUser, '', 'no typed text in that turn');
    assert.ok(model.requests.slice(before).every((r) => !r.lastUser), 'nothing was typed for it');
    // The woken turn ran UserPromptSubmit with the reminder as its prompt.
    assert.ok(events('UserPromptSubmit').length >= 1);
    await idle();
  });

  await t.test('UserPromptSubmit: a context answer reaches the model with that turn, once', async () => {
    contexts.push(CONTEXT_TEXT);
    const n = events('UserPromptSubmit').length;
    await type('prompt one: hello');
    await waitFor(() => carrying(model, CONTEXT_TEXT).length >= 1, { timeout: 60000, what: 'the context at the model' });
    const got = carrying(model, CONTEXT_TEXT);
    assert.equal(got.length, 1, 'once');
    assert.equal(got[0].lastUser, 'prompt one: hello');
    const sys = got[0].body.messages.filter((m) => m.role === 'system').flatMap((m) => textsOf({ body: { messages: [m] } }));
    assert.ok(sys.some((s) => s.includes(`UserPromptSubmit hook additional context: ${CONTEXT_TEXT}`)), JSON.stringify(sys).slice(0, 400));
    assert.ok(events('UserPromptSubmit').length > n);
    await idle();
  });

  await t.test('PermissionRequest: allow runs the tool, deny refuses it with the reason, no answer leaves the dialog', async () => {
    // allow
    decisions.push({ action: 'allow' });
    await type('run DOBASH-a');
    await waitFor(() => existsSync(path.join(f.dir, 'ran-a')), { timeout: 60000, what: 'the allowed tool running' });
    const pr = events('PermissionRequest')[0];
    assert.equal(pr.hook.tool, 'Bash');
    assert.ok(pr.hook.input.includes('ran-a'), pr.hook.input);
    await waitFor(() => model.requests.some((r) => r.toolResults.some((x) => x.name === 'Bash' && !x.isError)), { timeout: 60000, what: 'the tool result at the model' });
    await idle();

    // deny
    decisions.push({ action: 'deny', reason: DENY_REASON });
    await type('run DOBASH-d');
    await waitFor(() => model.requests.some((r) => r.toolResults.some((x) => x.name === 'Bash' && x.isError && x.text.includes(DENY_REASON))), {
      timeout: 60000,
      what: 'the refusal, with its reason, at the model',
    });
    assert.equal(existsSync(path.join(f.dir, 'ran-d')), false, 'the denied tool did not run');
    await idle();

    // no answer: the agent's own dialog stays, and the notification reports it
    await type('run DOBASH-n');
    await tm.waitScreen(pane, /Do you want to proceed\?/, { timeout: 60000, what: "Claude Code's own permission dialog" });
    await waitFor(() => events('Notification', (c) => c.hook.notificationType === 'permission_prompt').length >= 1, {
      timeout: 60000,
      what: 'the permission_prompt notification',
    });
    assert.equal(existsSync(path.join(f.dir, 'ran-n')), false);
    await tm.run('send-keys', '-t', pane, 'Escape');
  });
});

// 4. With fleetd: a worker spawned from the printed profile reports its
//    activity through its hooks, and fleet_list and fleetctl roster show it,
//    and its briefs go in through the hooks, not typed:
//    - idle once started; a brief to the idle worker goes to the waiter of
//      its SessionStart and reaches the model once, as a system reminder,
//      opening with fleet's provenance line;
//      nothing is typed (no prompt of it at the model, the trace says
//      via: hook, fleetd typed nothing for it);
//    - busy while a turn runs; a brief sent meanwhile waits, and goes in
//      once, with the next turn (the waiter of the Stop that ends it);
//    - blocked at a permission dialog (the tool as the reason); a brief sent
//      while blocked waits, and goes in once, after the dialog;
//    - a turn interrupted with Esc runs no Stop, so the hooks still say busy
//      while the screen shows the idle prompt: the screen decides (the
//      brief is typed), and fleetd logs and counts the disagreement.
fleetTest('a spawned Claude Code worker: busy, idle and blocked from its hooks, briefs through them', { timeout: 400000 }, async (f, t) => {
  const holds = new Map();
  // The whole text (system reminders too: a waiter's brief comes as one)
  // of the conversation's newest prompt, and of the request's new prompt
  // (null for a tool result or a side call).
  const newestPrompt = (r) => {
    const prompts = (r.body.messages || []).filter((m) => m.role === 'user' && !(Array.isArray(m.content) && m.content.some((x) => x.type === 'tool_result')));
    return prompts.length ? textsOf({ body: { messages: [prompts[prompts.length - 1]] } }).join('\n') : '';
  };
  const promptOf = (r) => (r.side || r.lastUser == null ? null : newestPrompt(r));
  const model = await startModel(f, (r) => {
    const p = promptOf(r);
    // INTERRUPT-ME: a fleet_list call first, then the turn holds on HOLD-2
    // (a turn already answered in part, so Esc does not give the prompt back).
    if (!r.side && newestPrompt(r).includes('INTERRUPT-ME')) {
      if (p != null) return { toolCalls: [{ name: 'mcp__fleet__fleet_list', input: {} }] };
      const g = holds.get('HOLD-2') || gate();
      holds.set('HOLD-2', g);
      return g.promise.then(() => ({ text: 'finished HOLD-2' }));
    }
    if (p == null) return { text: 'done' };
    const hold = (p.match(/HOLD-\w+/) || [])[0];
    if (hold) {
      const g = holds.get(hold) || gate();
      holds.set(hold, g);
      return g.promise.then(() => ({ text: `finished ${hold}` }));
    }
    const mark = p.match(/DOBASH-(\w+)/);
    if (mark) return { toolCalls: [{ name: 'Bash', input: { command: `touch ${path.join(f.dir, `ran-${mark[1]}`)}`, description: 'touch a marker' } }] };
    return { text: 'noted' };
  });
  const w = await claudeWorker(f, model, { spawnBy: 'fleetctl' });
  const { tm, lead, ctl, activity } = w;
  const until = (state, what) =>
    waitFor(async () => (await activity())?.state === state, { timeout: 60000, interval: 100, what: `w1 ${state}: ${what}` });
  /** A brief from the lead; resolves with the send's result. */
  const send = (content) => callTool(lead, 'fleet_send', { to: 'w1', content, wait_s: 0 }, { timeout: 200000 });
  /** Waits until text reached the model, then checks it did once, through the hooks, not typed. */
  const handedOnce = async (text, msgId, what) => {
    await waitFor(() => carrying(model, text).length >= 1, { timeout: 60000, what: `${what} at the model` });
    await sleep(1000); // a second copy would follow at once
    const got = carrying(model, text);
    assert.equal(got.length, 1, `${what} reached the model once`);
    // It opens with fleet's provenance line, which reached the model once too.
    const prov = `(fleet) from lead@`;
    const tail = `(role lead), verified: local, msgId ${msgId}; answer with fleet_reply to lead@`;
    assert.equal(carrying(model, tail).length, 1, `the provenance line of ${what} reached the model once`);
    const user = got[0].body.messages.filter((m) => m.role === 'user').slice(-1)[0];
    const all = textsOf({ body: { messages: [user] } }).join('\n');
    assert.ok(all.indexOf(prov) >= 0 && all.indexOf(tail) < all.indexOf(text), `the provenance line first: ${all.slice(0, 600)}`);
    assert.ok(!model.prompts().some((p) => p.includes(text)), `${what} was not typed (no prompt holds it)`);
    const trace = JSON.stringify((await ctl(['trace', msgId])).lines);
    assert.match(trace, /\(via: hook\)/, trace);
    assert.doesNotMatch(trace, /typed into/, trace);
    return got[0];
  };

  await t.test('spawned, it is idle by its SessionStart hook', async () => {
    await w.spawn('w1');
    await until('idle', 'after SessionStart');
    const a = await activity();
    assert.equal(a.source, 'hooks');
    assert.ok(!Number.isNaN(Date.parse(a.since)), a.since);
  });

  await t.test('a brief to the idle worker goes to its waiter: at the model once, as a system reminder, nothing typed', async () => {
    await waitFor(async () => (await ctl(['status'])).hookDelivery?.waiters >= 1, { timeout: 60000, what: "the SessionStart waiter parked in fleetd" });
    const st0 = await ctl(['status']);
    const text = 'IDLE-BRIEF: handed over by the hook';
    const r = await send(text);
    assert.equal(r.status, 'injected', JSON.stringify(r));
    const req = await handedOnce(text, r.msgId, 'the brief to the idle worker');
    assert.equal(req.lastUser, '', 'no typed prompt in that turn');
    const user = req.body.messages.filter((m) => m.role === 'user').slice(-1)[0];
    assert.match(textsOf({ body: { messages: [user] } }).join('\n'), /SYSTEM NOTIFICATION - NOT USER INPUT/);
    const st = await ctl(['status']);
    assert.equal(st.hookDelivery.briefs, st0.hookDelivery.briefs + 1, JSON.stringify(st.hookDelivery));
    await until('idle', 'the woken turn ended');
  });

  await t.test('busy while a turn runs; a brief sent meanwhile goes in once, with the next turn', async () => {
    const r = await send('HOLD-1: a long job');
    assert.equal(r.status, 'injected', JSON.stringify(r));
    await until('busy', 'UserPromptSubmit');
    await waitFor(() => holds.has('HOLD-1'), { what: 'the model holding the turn' });
    let answered = null;
    const late = send('BRIEF-WHILE-BUSY: for the next turn').then((x) => (answered = x));
    await sleep(3000);
    assert.equal(answered, null, 'not handed over while the turn runs');
    assert.equal(carrying(model, 'BRIEF-WHILE-BUSY').length, 0, 'not at the model yet');
    const openedAt = Date.now();
    holds.get('HOLD-1').open();
    const b = await late;
    assert.equal(b.status, 'injected', JSON.stringify(b));
    const req = await handedOnce('BRIEF-WHILE-BUSY', b.msgId, 'the brief sent while busy');
    assert.ok(req.at >= openedAt, 'after the busy turn ended');
    await until('idle', 'Stop');
  });

  await t.test('blocked at a permission dialog, with the tool; a brief sent meanwhile goes in once, after the dialog', async () => {
    const r = await send('DOBASH-1 please');
    assert.equal(r.status, 'injected', JSON.stringify(r));
    await until('blocked', 'PermissionRequest');
    const a = await activity();
    assert.equal(a.reason, 'permission: Bash');
    await tm.waitScreen(w.pane, /Do you want to proceed\?/, { what: "Claude Code's permission dialog" });
    const roster = await f.fleetctl(['roster']);
    assert.match(roster.stdout.split('\n').find((l) => l.startsWith('w1 ')) || '', /online \(blocked\)/, roster.stdout);
    // A brief sent while it is blocked waits: nothing goes into the dialog.
    let answered = null;
    const late = send('BRIEF-WHILE-BLOCKED: after the dialog').then((x) => (answered = x));
    await sleep(3000);
    assert.equal(answered, null, 'the brief is not handed over while the worker is blocked');
    assert.equal(carrying(model, 'BRIEF-WHILE-BLOCKED').length, 0, 'not at the model yet');
    assert.match(await tm.capture(w.pane), /Do you want to proceed\?/, 'the dialog is still open');
    // Someone at the pane says yes: the tool runs and the turn ends.
    await tm.run('send-keys', '-t', w.pane, 'Enter');
    await waitFor(() => existsSync(path.join(f.dir, 'ran-1')), { timeout: 60000, what: 'the tool running' });
    // Then the held brief goes in, once, through the hooks.
    const b = await late;
    assert.equal(b.status, 'injected', JSON.stringify(b));
    await handedOnce('BRIEF-WHILE-BLOCKED', b.msgId, 'the held brief');
    await until('idle', 'Stop after the tool and the brief');
    const st = await fleetctlJson(f, ['status']);
    assert.ok(st.hooks?.reports >= 5, JSON.stringify(st.hooks));
    assert.equal(st.hooks.disagreements, 0, `hooks and screen agreed so far: ${f.fleetdLog.split('\n').filter((l) => /hooks say|brief .* waits|injected|typed|via/.test(l)).join('\n')}`);
  });

  await t.test('a turn interrupted with Esc runs no Stop: the screen decides, the disagreement is logged and counted', async () => {
    const r = await send('INTERRUPT-ME: a job to interrupt');
    assert.equal(r.status, 'injected', JSON.stringify(r));
    await until('busy', 'UserPromptSubmit');
    await waitFor(() => holds.has('HOLD-2'), { what: 'the model holding the turn' });
    await tm.run('send-keys', '-t', w.pane, 'Escape');
    await tm.waitScreen(w.pane, /Interrupted/, { what: 'the interrupted turn' });
    await sleep(2500); // longer than a hook state must hold before it disagrees
    assert.equal((await activity()).state, 'busy', 'no Stop came: the hooks still say busy');
    // The screen says idle: the brief is typed, and reaches the model once.
    const b = await send('AFTER-ESC: the screen decides');
    assert.equal(b.status, 'injected', JSON.stringify(b));
    // It goes in with the interrupted turn's tool result, so the fake model reads no new prompt.
    await waitFor(() => carrying(model, 'AFTER-ESC').length >= 1, { timeout: 60000, what: 'the brief at the model' });
    assert.match(JSON.stringify((await ctl(['trace', b.msgId])).lines), /typed into 'w1'/, 'typed: the hooks went silent');
    const st = await fleetctlJson(f, ['status']);
    assert.equal(st.hooks.disagreements, 1, JSON.stringify(st.hooks));
    assert.match(f.fleetdLog, /'w1': its hooks say busy, its screen says idle; going by the screen/);
    holds.get('HOLD-2').open();
    await until('idle', 'the next Stop');
  });
});
