// codex.test.mjs — the real Codex CLI (pinned in package.json) with fleet,
// its model the fake one on loopback (the OpenAI Responses API through a
// custom model provider, model_responses.mjs).
//
// Codex's own config (the provider and model a user would have) is a
// config.toml in a private CODEX_HOME per test, under a private HOME. It
// also switches off what would leave the machine: the update check, the
// analytics (OpenTelemetry metrics to ab.chatgpt.com), the plugin and app
// catalogs (GitHub, chatgpt.com), the web search tool; and the background
// daemon. Where strace is installed, the `codex exec` test also checks that
// every connection it made went to loopback or a Unix socket.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cliPath, fleetTest, quietEnv, runTraced, startModel } from './cli_harness.mjs';
import { resultOf, toolName, workerFlow } from './worker_flow.mjs';

/**
 * A private HOME and CODEX_HOME under f.dir whose config.toml points Codex
 * at the fake model. Returns the environment to run Codex in.
 */
function codexHome(f, model) {
  const home = path.join(f.dir, 'home');
  const codexHomeDir = path.join(home, '.codex');
  mkdirSync(codexHomeDir, { recursive: true });
  writeFileSync(
    path.join(codexHomeDir, 'config.toml'),
    `model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.fake]
name = "Fake"
base_url = "${model.url}/v1"
wire_api = "responses"

[analytics]
enabled = false

[features]
daemon_auto_start = false
plugins = false
remote_plugin = false
apps = false
`
  );
  return { ...quietEnv, HOME: home, CODEX_HOME: codexHomeDir };
}

/** The JSON in a Codex MCP tool result ("Wall time: … Output:\n{json}"). */
function resultJson(text) {
  const i = text.indexOf('{');
  assert.ok(i >= 0, `a JSON object in the tool result: ${text}`);
  return JSON.parse(text.slice(i));
}

fleetTest('codex: mcp list shows the printed config; codex exec calls fleet_list and fleet_send', { timeout: 180000 }, async (f) => {
  await f.startFleetd();
  const bob = await f.mcpClient('bob');
  const model = await startModel(f, (r) => {
    if (r.toolResults.length === 0) return { toolCalls: [{ name: toolName(r, 'fleet_list'), input: {} }] };
    if (r.toolResults.length === 1) {
      return { toolCalls: [{ name: toolName(r, 'fleet_send'), input: { to: 'bob', content: 'hello bob, from codex' } }] };
    }
    return { text: 'done' };
  });
  const env = codexHome(f, model);
  // The [mcp_servers.fleet] table, exactly as fleetctl prints it, added to
  // the user's config.toml.
  const cfg = await f.fleetctl(['--as', 'alice', 'mcp-config', 'codex']);
  assert.equal(cfg.code, 0, cfg.stderr);
  assert.match(cfg.stdout, /^\[mcp_servers\.fleet\]$/m);
  appendFileSync(path.join(env.CODEX_HOME, 'config.toml'), `\n${cfg.stdout}`);
  const work = path.join(f.dir, 'work');
  mkdirSync(work, { recursive: true });

  const codex = (args, timeout) => runTraced(f, cliPath('codex'), ['-C', work, ...args], { env, timeout });

  const list = await codex(['mcp', 'list', '--json'], 60000);
  assert.equal(list.code, 0, list.stderr);
  const servers = JSON.parse(list.stdout);
  const fleet = servers.find((s) => s.name === 'fleet');
  assert.ok(fleet, `codex mcp list shows fleet: ${list.stdout}`);
  assert.equal(fleet.enabled, true, list.stdout);
  if (list.outside) assert.deepEqual(list.outside, [], 'codex mcp list connected only to loopback and Unix sockets');

  const run = await codex(['exec', '--skip-git-repo-check', 'List the fleet, then say hello to bob.'], 120000);
  assert.equal(run.code, 0, `codex exec: ${run.stderr}`);
  assert.deepEqual(model.prompts('responses'), ['List the fleet, then say hello to bob.']);

  const listed = model.requests.map((r) => resultOf(r, 'fleet_list')).find(Boolean);
  assert.ok(listed, 'the model got a fleet_list result');
  const roster = resultJson(listed.text);
  assert.deepEqual(roster.entities.map((e) => e.name).sort(), ['alice', 'bob'], listed.text);
  const sent = model.requests.map((r) => resultOf(r, 'fleet_send')).find(Boolean);
  assert.ok(sent, 'the model got a fleet_send result');
  const { msgId, status } = resultJson(sent.text);
  assert.equal(status, 'sent');
  const polled = await bob.callTool({ name: 'fleet_poll', arguments: {} });
  const got = polled.structuredContent.messages;
  assert.equal(got.length, 1, JSON.stringify(got));
  assert.equal(got[0].msgId, msgId);
  assert.equal(got[0].content, 'hello bob, from codex');
  assert.equal(got[0].from.name, 'alice');

  if (run.outside) assert.deepEqual(run.outside, [], 'codex exec connected only to loopback and Unix sockets');
});

fleetTest('codex as a spawned worker: briefs, busy, hostile text, nudge, restart, stop', { timeout: 300000 }, async (f, t) => {
  await workerFlow(f, t, {
    name: 'codex',
    env: (model) => {
      const env = codexHome(f, model);
      // The working directory is a git repository, so Codex would ask
      // whether to trust it: the profile answers that.
      const work = path.join(f.dir, 'work');
      mkdirSync(work, { recursive: true });
      execFileSync('git', ['init', '-q', work]);
      return env;
    },
  });
});
