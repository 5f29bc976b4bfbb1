// opencode.test.mjs — the real opencode CLI (pinned in package.json) with
// fleet, its model the fake one on loopback (OpenAI Chat Completions through
// a custom provider, model_chat.mjs).
//
// opencode's own config (the provider and model a user would have) lives in
// a private XDG config dir per test; HOME, data, cache and state dirs are
// private too, and the switches below keep it offline: no auto-update, no
// models.dev fetch, no default plugins (they are npm packages), no sharing,
// no LSP downloads, and its plugin package recorded as installed (see
// opencodeHome). Where strace is installed, `opencode mcp list` and
// `opencode run` are checked to connect only to loopback or a Unix socket.

import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cliPath, fleetTest, quietEnv, runTraced, startModel } from './cli_harness.mjs';
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
  // opencode installs its plugin package (@opencode-ai/plugin) from the npm
  // registry into every config directory whose node_modules is missing or
  // whose package-lock.json lacks it. Recorded as installed, nothing is
  // fetched (the package only types custom plugins, which none is here).
  const dir = path.join(config, 'opencode');
  mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ dependencies: { '@opencode-ai/plugin': '*' } }));
  writeFileSync(
    path.join(dir, 'package-lock.json'),
    JSON.stringify({ lockfileVersion: 3, packages: { '': { dependencies: { '@opencode-ai/plugin': '*' } } } })
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

  // In the project directory, so opencode reads its opencode.json.
  const opencode = (args, timeout) =>
    runTraced(f, '/bin/sh', ['-c', 'cd "$0" && exec "$@"', work, cliPath('opencode'), ...args], { env, timeout });

  const list = await opencode(['mcp', 'list'], 120000);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /fleet.*connected/, list.stdout);
  if (list.outside) assert.deepEqual(list.outside, [], 'opencode mcp list connected only to loopback and Unix sockets');

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

  if (run.outside) assert.deepEqual(run.outside, [], 'opencode run connected only to loopback and Unix sockets');
});

fleetTest('opencode as a spawned worker: briefs, busy, hostile text, nudge, restart, stop', { timeout: 300000 }, async (f, t) => {
  await workerFlow(f, t, {
    name: 'opencode',
    env: (model) => opencodeHome(f, model),
  });
});
