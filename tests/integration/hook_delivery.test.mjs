// hook_delivery.test.mjs — briefs handed to a worker through its agent's
// hooks instead of typed into its pane (gateway/verbs/hook_deliver.c), with
// a scripted stand-in for the agent: the worker is agents/prompt_agent.mjs in
// a tmux pane (it records every input typed into it), and the test runs
// fleet-hook as Claude Code would (the hook's JSON on stdin, FLEET_GID and
// FLEET_SOCKET in its environment), so no real agent CLI is needed.
//
//   - idle, with a parked waiter: the brief is the waiter's answer (stderr,
//     exit 2), exactly the text typing would have put in; nothing is typed;
//     the sender hears injected; the trace says via: hook
//   - two briefs, one waiter: the second waits for the woken turn's
//     UserPromptSubmit and goes in as its additionalContext; each once
//   - busy (UserPromptSubmit, a busy screen): the brief waits, then goes in
//     with the next UserPromptSubmit, once
//   - blocked (PermissionRequest): the brief waits, and goes to the waiter
//     of the Stop that ends the block
//   - a waiter whose connection closed (killed) is dropped, never handed
//     anything: the brief is typed, once; a waiter whose parent dies exits
//   - at most FL_HOOK_WAKES_PER_WORKER (2) waiters per worker: the oldest is
//     answered with nothing (exit 0)
//   - the nudge line for held messages takes the same door
//   - a waiter that cannot read its answer (its read side shut: the write
//     fails): the brief is reported failed and never typed (at most once)

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { BIN_DIR, PROTOCOL_VERSION, callTool, fleetTest, fleetctlJson, sleep, waitFor } from './harness.mjs';
import { startHook, track } from './hook-harness.mjs';
import { startPromptAgent, stopTmux } from './tmux-harness.mjs';

/** fleetd, worker agents in panes (names), and a lead. */
async function setup(f, names = ['w'], nudge = { enabled: false, quietMs: 200 }) {
  await f.startFleetd({ config: { nudge, inject: { timeoutS: 60 } } });
  const agents = {};
  for (const name of names) {
    agents[name] = await startPromptAgent(f, {
      label: name,
      mcp: true,
      binDir: BIN_DIR,
      env: { FLEET_SOCKET: f.socket, FLEET_NAME: name, FLEET_ROLE: 'worker' },
    });
  }
  const lead = await f.mcpClient('lead', { role: 'lead' });
  const gids = {};
  await waitFor(async () => {
    const l = await callTool(lead, 'fleet_list', {});
    for (const name of names) gids[name] = l.entities.find((e) => e.name === name && e.status === 'online')?.gid;
    return names.every((n) => gids[n]);
  }, { what: 'the workers online' });
  return { agents, gids, lead };
}

/** Runs fleet-hook for gid as an agent's hook would (event, --wake when wake); returns { child, done }. */
const runHook = (f, gid, event, { wake = false, extra = {}, shell = false } = {}) =>
  startHook({ gid, socket: f.socket, args: wake ? ['--wake'] : [], input: { session_id: 's-1', hook_event_name: event, ...extra }, shell });

async function status(f) {
  return fleetctlJson(f, ['status']);
}

async function waiters(f) {
  return (await status(f)).hookDelivery?.waiters ?? 0;
}

async function traceOf(f, msgId) {
  const r = await fleetctlJson(f, ['trace', msgId]);
  return r.lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n');
}

/** fleet's provenance line, which opens every delivered brief (msgId id). */
const provRe = (id) =>
  new RegExp(`^\\(fleet\\) from lead@\\S+ \\(role lead\\), verified: local, msgId ${id}; answer with fleet_reply to lead@\\S+, inReplyTo ${id}$`);

/** A brief as a hook got it: its provenance line (checked), then the text, which is returned. */
function handed(s, id) {
  const nl = s.indexOf('\n');
  assert.ok(nl > 0, `a provenance line first: ${JSON.stringify(s)}`);
  if (id) assert.match(s.slice(0, nl), provRe(id));
  else assert.match(s.slice(0, nl), provRe('\\S+'));
  return s.slice(nl + 1);
}

/** What typing puts in for text (the user guide: control bytes as stand-ins, a leading command character after "(fleet) "). */
function typedForm(text) {
  const t = text
    .replace(/\r\n/g, '\n')
    .replace(/[\x00-\x08\x0b-\x1f]/g, (c) => String.fromCodePoint(0x2400 + c.charCodeAt(0)))
    .replace(/\x7f/g, '\u2421')
    .replace(/[\u0080-\u009f]/g, '\ufffd');
  return /^\s*[!/#]/.test(t) ? `(fleet) ${t}` : t;
}

fleetTest('hooks deliver: an idle worker gets a brief through its waiter, exactly as it would be typed, and nothing is typed', async (f) => {
  const { agents, gids, lead } = await setup(f, ['w', 'plain']);
  try {
    // The waiter of a new, idle session (SessionStart --wake) parks.
    const waiter = runHook(f, gids.w, 'SessionStart', { wake: true, extra: { source: 'startup' } });
    await waitFor(async () => (await waiters(f)) === 1, { what: 'the waiter parked' });
    const st0 = await status(f);

    // A brief with control bytes and a leading "!": the waiter gets what typing would put in.
    const text = '! first line \x03 with a ctrl-c\nsecond line\ttab \x1b[201~ end';
    const r = await callTool(lead, 'fleet_send', { to: 'w', content: text });
    assert.equal(r.status, 'injected', JSON.stringify(r));
    const got = await waiter.done;
    assert.equal(got.code, 2, `the waiter exits 2 (wakes the session): ${JSON.stringify(got)}`);
    assert.equal(handed(got.stderr, r.msgId), typedForm(text), 'the text typing would have put in, after its provenance line');
    assert.match(r.note || '', /stand-in/, 'the sender hears what was changed, as for a typed brief');

    // The same brief typed into a worker without hooks: byte for byte the same text.
    const p = await callTool(lead, 'fleet_send', { to: 'plain', content: text });
    assert.equal(p.status, 'injected', JSON.stringify(p));
    await waitFor(() => agents.plain.submitted().length === 1, { what: 'the typed copy' });
    assert.equal(agents.plain.submitted()[0], handed(got.stderr), 'hook and typing deliver the same text');
    assert.match(agents.plain.provenance()[0], provRe(p.msgId), 'and the typed one opens with its provenance line too');

    await sleep(800);
    assert.deepEqual(agents.w.submitted(), [], 'nothing was typed into the hooked worker');
    const trace = await traceOf(f, r.msgId);
    assert.match(trace, /\(via: hook\)/, trace);
    assert.doesNotMatch(trace, /typed into 'w'/, trace);
    const st = await status(f);
    assert.equal(st.hookDelivery.briefs, (st0.hookDelivery?.briefs ?? 0) + 1);
    assert.equal(st.hookDelivery.waiters, 0, 'the answered waiter is gone');
  } finally {
    for (const a of Object.values(agents)) await stopTmux(f, a.sock);
  }
});

fleetTest('hooks deliver: two briefs for one waiter, busy, blocked: each once, through the hooks, never typed', async (f, t) => {
  const { agents, gids, lead } = await setup(f);
  const a = agents.w;
  try {
    await t.test('two briefs, one waiter: the second goes in with the woken turn (UserPromptSubmit)', async () => {
      const waiter = runHook(f, gids.w, 'SessionStart', { wake: true });
      await waitFor(async () => (await waiters(f)) === 1, { what: 'the waiter parked' });
      const one = track(callTool(lead, 'fleet_send', { to: 'w', content: 'TWO-A first' }));
      const two = track(callTool(lead, 'fleet_send', { to: 'w', content: 'TWO-B second' }));
      const got = await waiter.done;
      assert.equal(got.code, 2);
      assert.equal(handed(got.stderr, (await one.p).msgId), 'TWO-A first');
      assert.equal((await one.p).status, 'injected');
      // The woken turn has not reported yet: the second waits, typed nowhere.
      await sleep(1500);
      assert.equal(two.done, false, 'the second waits for the woken turn');
      assert.deepEqual(a.submitted(), []);
      // The woken turn's UserPromptSubmit takes it as additionalContext.
      const ups = await runHook(f, gids.w, 'UserPromptSubmit', { extra: { prompt: 'reminder' } }).done;
      assert.equal(ups.code, 0);
      const out = JSON.parse(ups.stdout);
      assert.deepEqual(Object.keys(out.hookSpecificOutput).sort(), ['additionalContext', 'hookEventName']);
      assert.equal(out.hookSpecificOutput.hookEventName, 'UserPromptSubmit');
      assert.equal((await two.p).status, 'injected');
      assert.equal(handed(out.hookSpecificOutput.additionalContext, two.value.msgId), 'TWO-B second');
      // Its turn ends: Stop's waiter parks, and nothing more comes.
      const stop = runHook(f, gids.w, 'Stop', { wake: true });
      await waitFor(async () => (await waiters(f)) === 1, { what: "Stop's waiter parked" });
      await sleep(800);
      assert.deepEqual(a.submitted(), [], 'nothing typed');
      stop.child.kill('SIGKILL');
      await stop.done;
      await waitFor(async () => (await waiters(f)) === 0, { what: 'the killed waiter dropped' });
    });

    await t.test('busy: the brief waits, and goes in with the next UserPromptSubmit, once', async () => {
      writeFileSync(a.busy, '');
      await runHook(f, gids.w, 'UserPromptSubmit', { extra: { prompt: 'work' } }).done;
      const sending = track(callTool(lead, 'fleet_send', { to: 'w', content: 'BUSY-BRIEF' }));
      await sleep(2500);
      assert.equal(sending.done, false, 'not handed over while busy');
      const ups = await runHook(f, gids.w, 'UserPromptSubmit', { extra: { prompt: 'next turn' } }).done;
      assert.equal((await sending.p).status, 'injected');
      assert.equal(handed(JSON.parse(ups.stdout).hookSpecificOutput.additionalContext, sending.value.msgId), 'BUSY-BRIEF');
      const again = await runHook(f, gids.w, 'UserPromptSubmit', { extra: { prompt: 'another' } }).done;
      assert.equal(again.stdout, '', 'once: the next turn gets nothing');
      rmSync(a.busy, { force: true });
      assert.deepEqual(a.submitted(), [], 'nothing typed');
    });

    await t.test('blocked: the brief waits, and goes to the waiter of the Stop that ends the block', async () => {
      writeFileSync(a.busy, '');
      await runHook(f, gids.w, 'UserPromptSubmit', { extra: { prompt: 'a tool' } }).done;
      await runHook(f, gids.w, 'PermissionRequest', { extra: { tool_name: 'Bash', tool_input: { command: 'ls' } } }).done;
      const l = await callTool(lead, 'fleet_list', {});
      assert.equal(l.entities.find((e) => e.name === 'w').activity.state, 'blocked');
      const sending = track(callTool(lead, 'fleet_send', { to: 'w', content: 'AFTER-BLOCK' }));
      await sleep(2500);
      assert.equal(sending.done, false, 'not handed over while blocked');
      rmSync(a.busy, { force: true });
      // The dialog is answered, the turn ends: Stop's waiter gets it.
      const stop = await runHook(f, gids.w, 'Stop', { wake: true }).done;
      assert.equal(stop.code, 2);
      assert.equal((await sending.p).status, 'injected');
      assert.equal(handed(stop.stderr, sending.value.msgId), 'AFTER-BLOCK');
      await sleep(800);
      assert.deepEqual(a.submitted(), [], 'nothing typed');
      await runHook(f, gids.w, 'UserPromptSubmit', { extra: { prompt: 'woken' } }).done;
    });
  } finally {
    await stopTmux(f, a.sock);
  }
});

fleetTest('hooks deliver: a closed waiter is never handed anything, a waiter dies with its parent, two waiters per worker', async (f, t) => {
  const { agents, gids, lead } = await setup(f);
  const a = agents.w;
  try {
    await t.test('a waiter killed before the brief: dropped, and the brief is typed, once', async () => {
      const waiter = runHook(f, gids.w, 'Stop', { wake: true });
      await waitFor(async () => (await waiters(f)) === 1, { what: 'the waiter parked' });
      waiter.child.kill('SIGKILL');
      await waiter.done;
      await waitFor(async () => (await waiters(f)) === 0, { what: 'the waiter dropped with its connection' });
      const r = await callTool(lead, 'fleet_send', { to: 'w', content: 'TYPED-AFTER-KILL' });
      assert.equal(r.status, 'injected', JSON.stringify(r));
      await waitFor(() => a.submitted().length === 1, { what: 'the typed brief' });
      await sleep(800);
      assert.deepEqual(a.submitted(), ['TYPED-AFTER-KILL'], 'typed once');
      assert.match(await traceOf(f, r.msgId), /typed into 'w'/);
      assert.equal((await status(f)).hookDelivery.briefs, 0, 'nothing was counted as handed to a hook');
    });

    await t.test('a waiter whose parent dies exits, and fleetd drops it', async () => {
      const waiter = runHook(f, gids.w, 'Stop', { wake: true, shell: true });
      await waitFor(async () => (await waiters(f)) === 1, { what: 'the waiter parked' });
      waiter.child.kill('SIGKILL'); // the shell: fleet-hook is its child
      await waitFor(async () => (await waiters(f)) === 0, { timeout: 15000, what: 'the orphaned waiter gone' });
    });

    await t.test('at most two waiters per worker: the oldest is answered with nothing', async () => {
      const w1 = runHook(f, gids.w, 'SessionStart', { wake: true });
      await waitFor(async () => (await waiters(f)) === 1, { what: 'one' });
      const w2 = runHook(f, gids.w, 'Stop', { wake: true });
      await waitFor(async () => (await waiters(f)) === 2, { what: 'two' });
      const w3 = runHook(f, gids.w, 'Stop', { wake: true });
      const first = await w1.done;
      assert.deepEqual([first.code, first.stdout, first.stderr], [0, '', ''], 'the oldest exits 0 with nothing');
      assert.equal(await waiters(f), 2);
      // The newest gets the next brief; the other stays parked.
      const r = await callTool(lead, 'fleet_send', { to: 'w', content: 'TO-THE-NEWEST' });
      assert.equal(r.status, 'injected');
      const got = await w3.done;
      assert.equal(handed(got.stderr, r.msgId), 'TO-THE-NEWEST');
      assert.equal(await waiters(f), 1);
      w2.child.kill('SIGKILL');
      await w2.done;
      assert.equal((await status(f)).hookDelivery.replaced, 1);
    });
  } finally {
    await stopTmux(f, a.sock);
  }
});

fleetTest('hooks deliver: the nudge for held messages goes to the waiter, nothing typed', async (f) => {
  const text = 'fleet: you have messages - call fleet_poll';
  const { agents, gids, lead } = await setup(f, ['w'], { enabled: true, firstDelayMs: 300, backoffMs: 600000, text, quietMs: 200 });
  try {
    const waiter = runHook(f, gids.w, 'Stop', { wake: true });
    await waitFor(async () => (await waiters(f)) === 1, { what: 'the waiter parked' });
    const b = await callTool(lead, 'fleet_broadcast', { content: 'held for a poll' });
    assert.ok(b.recipients >= 1, JSON.stringify(b));
    const got = await waiter.done;
    assert.equal(got.code, 2, JSON.stringify(got));
    assert.equal(got.stderr, text);
    await sleep(800);
    assert.deepEqual(agents.w.submitted(), [], 'the nudge line was not typed');
    assert.equal((await status(f)).hookDelivery.lines, 1);
  } finally {
    await stopTmux(f, agents.w.sock);
  }
});

// A waiter that parks its call, then shuts the read side of its socket
// (shutdown SHUT_RD: a write to it then fails with EPIPE), and stays
// connected until its stdin closes. Perl, for the one socket call node has not.
const DEAF_WAITER = `
use strict; use Socket; use IO::Socket::UNIX; $| = 1;
my ($sock, $gid, $proto) = @ARGV;
my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $sock) or die "connect: $!";
print $s qq({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"$proto","capabilities":{},"clientInfo":{"name":"deaf-waiter","version":"0"}}}\n);
my $line = <$s>;
print $s qq({"jsonrpc":"2.0","method":"notifications/initialized"}\n);
print $s qq({"jsonrpc":"2.0","id":2,"method":"fleet/hook","params":{"gid":"$gid","agent":"claude","event":"Stop","wake":true,"hook":{}}}\n);
sleep 1;
shutdown($s, 0) or die "shutdown: $!";
print "deaf\n";
while (<STDIN>) {}
`;

fleetTest('hooks deliver: an answer that cannot be written fails the brief, which is never typed', async (f) => {
  const { agents, gids, lead } = await setup(f);
  let deaf;
  try {
    deaf = spawn('perl', ['-e', DEAF_WAITER, f.socket, gids.w, PROTOCOL_VERSION], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    deaf.stdout.on('data', (d) => (out += d));
    await waitFor(() => out.includes('deaf'), { what: 'the waiter parked, its read side shut' });
    assert.equal(await waiters(f), 1);
    const r = await callTool(lead, 'fleet_send', { to: 'w', content: 'NEVER-TYPED' });
    assert.equal(r.status, 'failed', JSON.stringify(r));
    assert.match(r.reason, /hook's connection closed before the brief was handed over; it is not typed again/);
    await sleep(1500);
    assert.deepEqual(agents.w.submitted(), [], 'not typed after the failed hand-over');
    const st = await status(f);
    assert.equal(st.hookDelivery.failed, 1, JSON.stringify(st.hookDelivery));
    assert.match(await traceOf(f, r.msgId), /failed via hook/);
  } finally {
    deaf?.stdin.end();
    deaf?.kill();
    await stopTmux(f, agents.w.sock);
  }
});
