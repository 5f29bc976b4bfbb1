// opencode.test.mjs — the real opencode CLI (pinned in package.json) with
// fleet, its model the fake one on loopback (OpenAI Chat Completions through
// a custom provider, model_chat.mjs).
//
// opencode's own config (the provider and model a user would have) lives in
// a private XDG config dir per test; HOME, data, cache and state dirs are
// private too, and the switches below keep it offline: no auto-update, no
// models.dev fetch, no default plugins (they are npm packages), no sharing,
// no LSP downloads. Where strace is installed, the `opencode run` test also
// checks that every connection it made went to loopback or fleetd's socket.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cliPath, fleetTest, quietEnv, startModel } from './cli_harness.mjs';
import { resultOf, toolName, workerFlow } from './worker_flow.mjs';

const OPENCODE_ENV = {
  ...quietEnv,
  OPENCODE_DISABLE_AUTOUPDATE: 'true',
  OPENCODE_DISABLE_MODELS_FETCH: 'true',
  OPENCODE_DISABLE_DEFAULT_PLUGINS: 'true',
  OPENCODE_DISABLE_SHARE: 'true',
  OPENCODE_DISABLE_LSP_DOWNLOAD: 'true',
  OPENCODE_DISABLE_CLAUDE_CODE: 'true',
};

/**
 * A private HOME for opencode under f.dir with the user-level config that
 * points it at the fake model (provider "fake", npm
 * @ai-sdk/openai-compatible, which opencode bundles: nothing is fetched).
 * Returns the environment to run opencode in.
 */
function opencodeHome(f, model) {
  const home = path.join(f.dir, 'home');
  const config = path.join(home, '.config');
  mkdirSync(path.join(config, 'opencode'), { recursive: true });
  writeFileSync(
    path.join(config, 'opencode', 'opencode.json'),
    JSON.stringify(
      {
        $schema: 'https://opencode.ai/config.json',
        provider: {
          fake: {
            npm: '@ai-sdk/openai-compatible',
            name: 'Fake',
            options: { baseURL: `${model.url}/v1`, apiKey: 'sk-fake-key' },
            models: { 'fake-model': { name: 'Fake model', tool_call: true } },
          },
        },
        model: 'fake/fake-model',
        small_model: 'fake/fake-model',
        autoupdate: false,
        share: 'disabled',
      },
      null,
      2
    )
  );
  return {
    ...OPENCODE_ENV,
    HOME: home,
    XDG_CONFIG_HOME: config,
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
  };
}

function hasStrace() {
  try {
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The connect() targets in an strace log that are neither loopback nor a Unix socket. */
function outsideConnects(log) {
  return log
    .split('\n')
    .filter((l) => /connect\(/.test(l) && !/AF_UNIX|AF_NETLINK/.test(l))
    .filter((l) => !/inet_addr\("127\.0\.0\.1"\)|inet_pton\(AF_INET6, "::1"/.test(l));
}

fleetTest('opencode: mcp list connects to the printed config; opencode run calls fleet_list and fleet_send', { timeout: 240000 }, async (f) => {
  await f.startFleetd();
  const bob = await f.mcpClient('bob');
  const model = await startModel(f, (r) => {
    if (r.side) return { text: 'Fleet check' };
    if (r.toolResults.length === 0) return { toolCalls: [{ name: toolName(r, 'fleet_list'), input: {} }] };
    if (r.toolResults.length === 1) {
      return { toolCalls: [{ name: toolName(r, 'fleet_send'), input: { to: 'bob', content: 'hello bob, from opencode' } }] };
    }
    return { text: 'done' };
  });
  const env = opencodeHome(f, model);
  const work = path.join(f.dir, 'work');
  mkdirSync(work, { recursive: true });
  // The project config, exactly as fleetctl prints it.
  const cfg = await f.fleetctl(['--as', 'alice', 'mcp-config', 'opencode']);
  assert.equal(cfg.code, 0, cfg.stderr);
  writeFileSync(path.join(work, 'opencode.json'), cfg.stdout);

  const strace = hasStrace();
  const traceLog = path.join(f.dir, 'strace.log');
  const opencode = (args, timeout) =>
    strace
      ? f.run('strace', ['-f', '-qq', '-e', 'trace=connect', '-o', traceLog, '--', 'sh', '-c', 'cd "$0" && exec "$@"', work, cliPath('opencode'), ...args], { env, timeout })
      : f.run('sh', ['-c', 'cd "$0" && exec "$@"', work, cliPath('opencode'), ...args], { env, timeout });

  const list = await opencode(['mcp', 'list'], 120000);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /fleet.*connected/, list.stdout);

  const run = await opencode(['run', 'List the fleet, then say hello to bob.'], 170000);
  assert.equal(run.code, 0, `opencode run: ${run.stderr}`);
  const prompts = model.prompts('chat');
  assert.equal(prompts.length, 1, `one prompt reached the model: ${JSON.stringify(prompts)}`);
  assert.match(prompts[0], /List the fleet, then say hello to bob\./);

  const listed = model.requests.map((r) => resultOf(r, 'fleet_list')).find(Boolean);
  assert.ok(listed, 'the model got a fleet_list result');
  const roster = JSON.parse(listed.text);
  assert.deepEqual(roster.entities.map((e) => e.name).sort(), ['alice', 'bob'], listed.text);
  const sent = model.requests.map((r) => resultOf(r, 'fleet_send')).find(Boolean);
  assert.ok(sent, 'the model got a fleet_send result');
  const { msgId, status } = JSON.parse(sent.text);
  assert.equal(status, 'sent');
  const polled = await bob.callTool({ name: 'fleet_poll', arguments: {} });
  const got = polled.structuredContent.messages;
  assert.equal(got.length, 1, JSON.stringify(got));
  assert.equal(got[0].msgId, msgId);
  assert.equal(got[0].content, 'hello bob, from opencode');
  assert.equal(got[0].from.name, 'alice');

  if (strace) {
    const outside = outsideConnects(readFileSync(traceLog, 'utf8'));
    assert.deepEqual(outside, [], 'opencode connected only to loopback and Unix sockets');
  } else {
    f.notes.push('strace is not installed: the loopback-only check was not made');
  }
});

fleetTest('opencode as a spawned worker: briefs, busy, hostile text, nudge, stop', { timeout: 300000 }, async (f, t) => {
  await workerFlow(f, t, {
    name: 'opencode',
    env: (model) => opencodeHome(f, model),
  });
});
