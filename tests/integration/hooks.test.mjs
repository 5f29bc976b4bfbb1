// hooks.test.mjs — fleet-hook, the client an agent's hooks run, and
// `fleetctl hooks claude [--check FILE]`.
//
// fleet-hook is driven as Claude Code drives it: the hook's JSON on stdin,
// FLEET_GID and FLEET_SOCKET in its environment. Here a stub speaks fleetd's
// side of the socket (initialize, then fleet/hook answered from a script),
// so each answer fleetd can give is checked for what it becomes in Claude
// Code's format (tests/clis/claude_hooks.test.mjs runs the real Claude Code):
//
//   - not a fleet worker (no FLEET_GID), no fleetd, a fleetd that answers
//     fleet/hook with an error: exit 0, nothing written, as if fleet were absent
//   - the request: {gid, agent, event, wake, hook} with a bounded summary of
//     the hook's input (the tool's input cut at 512 bytes)
//   - context → additionalContext for UserPromptSubmit; allow / deny → the
//     PermissionRequest decision; wake → stderr and exit 2 for --wake
//   - the waiter (--wake) asks again when fleetd goes away before answering,
//     marked reconnect, and retries while the new fleetd refuses it (the
//     worker not registered again yet)
//
// fleetctl hooks: prints the hooks; --check passes the settings `fleetctl
// profile claude` writes and names each problem of a wrong file.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { bin } from './harness.mjs';
import { runHook } from './hook-harness.mjs';
import { stubFleetd } from './hook_stub.mjs';

const dir = mkdtempSync('/tmp/fl-hooks-');
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs fleet-hook with input (an object) on stdin; resolves { code, stdout, stderr }. */
const hook = (input, { args = [], env = {}, timeout = 30000 } = {}) => runHook({ gid: 'gid-w1', input, args, env }, timeout);

// What Claude Code 2.1.332 gives a hook on stdin (seen with the real CLI).
const UPS = {
  session_id: 's-1',
  transcript_path: '/tmp/t.jsonl',
  cwd: '/tmp',
  permission_mode: 'default',
  hook_event_name: 'UserPromptSubmit',
  prompt: 'hello',
};
const STOP = { session_id: 's-1', hook_event_name: 'Stop', stop_hook_active: false, last_assistant_message: 'ok' };
const PERM = (input) => ({
  session_id: 's-1',
  hook_event_name: 'PermissionRequest',
  tool_name: 'Bash',
  tool_input: input,
  permission_suggestions: [],
});

test('fleet-hook is silent and exits 0 when fleet is absent: no FLEET_GID, no fleetd, an error from fleetd', async () => {
  const stub = await stubFleetd(dir, () => ({ action: 'context', text: 'never' }));
  try {
    const r1 = await hook(UPS, { env: { FLEET_GID: '', FLEET_SOCKET: stub.sock } });
    assert.deepEqual(r1, { code: 0, stdout: '', stderr: '' }, 'not a fleet worker');
    assert.equal(stub.calls.length, 0, 'no call without FLEET_GID');
    for (const [input, args] of [
      [UPS, []],
      [STOP, ['--wake']],
      [PERM({ command: 'ls' }), []],
    ]) {
      const r = await hook(input, { args, env: { FLEET_SOCKET: path.join(dir, 'nothing-here.sock') } });
      assert.deepEqual(r, { code: 0, stdout: '', stderr: '' }, `no fleetd: ${input.hook_event_name} ${args}`);
    }
    const r3 = await hook({ not: 'a hook' }, { env: { FLEET_SOCKET: stub.sock } });
    assert.deepEqual(r3, { code: 0, stdout: '', stderr: '' }, 'no hook_event_name');
  } finally {
    await stub.close();
  }
  const old = await stubFleetd(dir, () => ({ error: { code: -32601, message: 'unknown method fleet/hook' } }));
  try {
    for (const args of [[], ['--wake']]) {
      const r = await hook(args.length ? STOP : UPS, { args, env: { FLEET_SOCKET: old.sock } });
      assert.deepEqual(r, { code: 0, stdout: '', stderr: '' }, `a fleetd without fleet/hook ${args}`);
    }
  } finally {
    await old.close();
  }
});

test('fleet-hook: the request it sends, and each answer in Claude Code format', async () => {
  const answers = [];
  const stub = await stubFleetd(dir, (p, n) => answers[n - 1] || { action: 'none' });
  const env = { FLEET_SOCKET: stub.sock };
  try {
    answers.push({ action: 'context', text: 'fleet: a message for you' });
    let r = await hook(UPS, { env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      hookSpecificOutput: { hookEventName: 'UserPromptSubmit', additionalContext: 'fleet: a message for you' },
    });
    assert.deepEqual(stub.calls[0], { gid: 'gid-w1', agent: 'claude', event: 'UserPromptSubmit', wake: false, hook: { sessionId: 's-1' } });

    // A permission request: the tool and a bounded summary of its input.
    const big = { command: `echo ${'é'.repeat(3000)}`, description: 'a long one' };
    answers.push({ action: 'allow' });
    r = await hook(PERM(big), { env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });
    const sent = stub.calls[1].hook;
    assert.equal(sent.tool, 'Bash');
    assert.ok(Buffer.byteLength(sent.input) <= 512 + 3, `input cut at 512 bytes: ${Buffer.byteLength(sent.input)}`);
    assert.ok(sent.input.startsWith('{"command":"echo éé') && sent.input.endsWith('…'), sent.input.slice(0, 40));

    answers.push({ action: 'deny', reason: 'the lead says no' });
    r = await hook(PERM({ command: 'rm -rf build' }), { env });
    assert.deepEqual(JSON.parse(r.stdout), {
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'deny', message: 'the lead says no' } },
    });
    assert.equal(stub.calls[2].hook.input, '{"command":"rm -rf build"}');

    // A notification: its type and message.
    answers.push({ action: 'none' });
    r = await hook({ session_id: 's-1', hook_event_name: 'Notification', message: 'Claude needs your permission', notification_type: 'permission_prompt' }, { env });
    assert.deepEqual(r, { code: 0, stdout: '', stderr: '' });
    assert.deepEqual(stub.calls[3].hook, { sessionId: 's-1', notificationType: 'permission_prompt', message: 'Claude needs your permission' });

    // An answer that does not fit the hook is no answer.
    answers.push({ action: 'wake', text: 'only for the waiter' });
    r = await hook(UPS, { env });
    assert.deepEqual(r, { code: 0, stdout: '', stderr: '' }, 'wake is for --wake only');
    answers.push({ action: 'allow' });
    r = await hook(UPS, { env });
    assert.deepEqual(r, { code: 0, stdout: '', stderr: '' }, 'allow is for PermissionRequest only');

    // The waiter: wake → the text on stderr and exit 2 (Claude Code wakes the session).
    answers.push(new Promise((res) => setTimeout(() => res({ action: 'wake', text: 'fleet: wake up\nsecond line' }), 1500)));
    r = await hook(STOP, { args: ['--wake'], env });
    assert.equal(r.code, 2);
    assert.equal(r.stderr, 'fleet: wake up\nsecond line');
    assert.equal(r.stdout, '');
    assert.equal(stub.calls[6].wake, true);
    assert.equal(stub.calls[6].event, 'Stop');
    answers.push({ action: 'none' });
    r = await hook(STOP, { args: ['--wake'], env });
    assert.deepEqual(r, { code: 0, stdout: '', stderr: '' }, 'a waiter told none ends quietly');
  } finally {
    await stub.close();
  }
});

test('fleet-hook --wake asks again when fleetd goes away before answering', async () => {
  const stub = await stubFleetd(dir, (p, n) => (n === 1 ? { close: true } : { action: 'wake', text: 'after the restart' }));
  try {
    const r = await hook(STOP, { args: ['--wake'], env: { FLEET_SOCKET: stub.sock } });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr, 'after the restart');
    assert.equal(stub.calls.length, 2, 'asked twice');
    assert.equal(stub.calls[0].reconnect, undefined, 'the first ask is news');
    assert.equal(stub.calls[1].reconnect, true, 'the second says it is a reconnect');
    assert.equal(stub.calls[1].event, 'Stop');
  } finally {
    await stub.close();
  }
});

test('fleet-hook --wake, back after a restart, asks again while the new fleetd does not know its worker yet', async () => {
  const stub = await stubFleetd(dir, (p, n) =>
    n === 1 ? { close: true } : n === 2 ? { error: { code: -32602, message: 'fleet/hook: no agent of this host has gid gid-w1' } } : { action: 'wake', text: 'registered again' });
  try {
    const r = await hook(STOP, { args: ['--wake'], env: { FLEET_SOCKET: stub.sock } });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr, 'registered again');
    assert.equal(stub.calls.length, 3);
    assert.deepEqual(stub.calls.map((c) => c.reconnect), [undefined, true, true]);
  } finally {
    await stub.close();
  }
});

/** Runs fleetctl ARGS (no fleetd needed). */
function fleetctl(args) {
  return new Promise((resolve) => {
    const child = spawn(bin('fleetctl'), args, { env: { PATH: process.env.PATH, HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('fleetctl hooks claude prints the hooks; --check passes the profile and names what is wrong', async () => {
  const printed = await fleetctl(['hooks', 'claude']);
  assert.equal(printed.code, 0, printed.stderr);
  const { hooks } = JSON.parse(printed.stdout);
  assert.deepEqual(Object.keys(hooks).sort(), ['Notification', 'PermissionRequest', 'SessionStart', 'Stop', 'UserPromptSubmit']);
  assert.deepEqual(hooks.Stop, [{ hooks: [{ type: 'command', command: `${bin('fleet-hook')} --wake`, timeout: 86400, asyncRewake: true }] }]);
  assert.equal(hooks.Notification[0].matcher, 'permission_prompt|idle_prompt|elicitation_dialog');

  // The profile's settings.json has them, and passes the check.
  const prof = await fleetctl(['--json', 'profile', 'claude', '--dir', path.join(dir, 'prof'), '--cwd', dir]);
  assert.equal(prof.code, 0, prof.stderr);
  const settings = JSON.parse(JSON.parse(prof.stdout).files.find((x) => x.path.endsWith('/settings.json')).content);
  assert.deepEqual(settings.hooks, hooks);
  assert.equal(settings.permissions.defaultMode, 'default');
  const good = path.join(dir, 'good.json');
  writeFileSync(good, JSON.stringify(settings));
  let r = await fleetctl(['hooks', 'claude', '--check', good]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /the fleet hooks are set up right/);

  // Each way of getting it wrong is named.
  const bad = structuredClone(settings);
  delete bad.hooks.UserPromptSubmit;
  delete bad.hooks.Stop[0].hooks[0].asyncRewake;
  bad.hooks.PermissionRequest[0].hooks[0].timeout = 30;
  bad.hooks.Notification[0].matcher = 'permission_prompt';
  bad.disableAllHooks = true;
  const badFile = path.join(dir, 'bad.json');
  writeFileSync(badFile, JSON.stringify(bad));
  r = await fleetctl(['--json', 'hooks', 'claude', '--check', badFile]);
  assert.equal(r.code, 1);
  const out = JSON.parse(r.stdout);
  assert.equal(out.ok, false);
  const p = out.problems.join('\n');
  assert.match(p, /disableAllHooks/);
  assert.match(p, /UserPromptSubmit: no hook runs fleet-hook/);
  assert.match(p, /Stop: the fleet-hook command must be `fleet-hook --wake` with "asyncRewake": true/);
  assert.match(p, /PermissionRequest: "timeout" must be at least 130/);
  assert.match(p, /Notification: the fleet-hook hook's matcher leaves out idle_prompt/);
  assert.match(p, /leaves out elicitation_dialog/);
  assert.equal(out.problems.length, 6, p);

  r = await fleetctl(['hooks', 'claude', '--check', path.join(dir, 'missing.json')]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /missing\.json: not a JSON settings file/);
  r = await fleetctl(['hooks', 'codex']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /hooks takes 'claude'/);
  r = await fleetctl(['roster', '--check', good]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--check is for hooks/);
});
