// fleetctl.test.mjs — the admin CLI: status, roster, a send/poll round trip
// with an MCP client, mcp-config for Claude Code and opencode, and exit
// statuses (0 ok, 1 failure, 2 usage). Also fleetd's environment settings and
// its socket's mode.

import assert from 'node:assert/strict';
import { statSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fleetTest, callTool, deepFind } from './harness.mjs';

function parseJson(r, what) {
  assert.equal(r.code, 0, `${what} exit ${r.code}: ${r.stdout}${r.stderr}`);
  try {
    return JSON.parse(r.stdout);
  } catch {
    assert.fail(`${what} --json output is not JSON: ${r.stdout}`);
  }
}

fleetTest('status and roster', async (f) => {
  await f.startFleetd();
  const st = await f.fleetctl(['status']);
  assert.equal(st.code, 0, `status: ${st.stdout}${st.stderr}`);
  assert.ok(st.stdout.trim().length > 0, 'status prints something');
  const stj = parseJson(await f.fleetctl(['--json', 'status']), 'status --json');
  assert.equal(typeof stj, 'object');

  const dave = await f.mcpClient('dave', { role: 'orchestrator', groups: ['ops'] });
  const roster = parseJson(await f.fleetctl(['--json', 'roster']), 'roster --json');
  const e = deepFind(roster, (v) => v && typeof v === 'object' && v.name === 'dave');
  assert.ok(e, `dave in the roster: ${JSON.stringify(roster)}`);
  assert.equal(e.status, 'online');
  assert.equal(e.role, 'orchestrator');
  const table = await f.fleetctl(['roster']);
  assert.equal(table.code, 0);
  assert.match(table.stdout, /dave/, 'the human roster names dave');
  await f.closeClient(dave);
});

fleetTest('send and poll round trip with an MCP client', async (f) => {
  await f.startFleetd();
  const dave = await f.mcpClient('dave');

  // ops asks and waits; dave answers.
  const asking = f.fleetctl(['--json', '--as', 'ops', 'send', 'dave', 'status report?', '--wait', '20']);
  const got = await callTool(dave, 'fleet_poll', { wait_s: 20 });
  assert.equal(got.messages.length, 1, JSON.stringify(got));
  const q = got.messages[0];
  assert.equal(q.content, 'status report?');
  assert.equal(q.from.name, 'ops');
  await callTool(dave, 'fleet_reply', { to: q.from.gid, content: 'all green', inReplyTo: q.msgId });
  const ans = parseJson(await asking, 'send --wait');
  assert.equal(ans.status, 'replied', JSON.stringify(ans));
  assert.equal(ans.reply.content, 'all green');

  // Human output carries the reply text too.
  const asking2 = f.fleetctl(['--as', 'ops', 'send', 'dave', 'and now?', '--wait', '20']);
  const got2 = await callTool(dave, 'fleet_poll', { wait_s: 20 });
  assert.equal(got2.messages.length, 1);
  await callTool(dave, 'fleet_reply', { to: 'ops', content: 'still green', inReplyTo: got2.messages[0].msgId });
  const r2 = await asking2;
  assert.equal(r2.code, 0, r2.stderr);
  assert.match(r2.stdout, /still green/);

  // dave writes to ops, which is not connected: held until ops polls.
  const sent = await callTool(dave, 'fleet_send', { to: 'ops', content: 'note for ops' });
  assert.equal(sent.status, 'sent');
  const polled = parseJson(await f.fleetctl(['--json', '--as', 'ops', 'poll', '--wait', '5']), 'poll');
  const m = deepFind(polled, (v) => v && typeof v === 'object' && v.content === 'note for ops');
  assert.ok(m, `ops polled the note: ${JSON.stringify(polled)}`);
  assert.equal(m.from.name, 'dave');
  const empty = parseJson(await f.fleetctl(['--json', '--as', 'ops', 'poll']), 'second poll');
  assert.equal(
    deepFind(empty, (v) => v && typeof v === 'object' && v.content === 'note for ops'),
    undefined,
    'a polled message is not returned again'
  );

  // A one-way send from fleetctl (no wait) is held for dave.
  const one = await f.fleetctl(['--as', 'ops', 'send', 'dave', 'fyi']);
  assert.equal(one.code, 0, one.stderr);
  const fyi = await callTool(dave, 'fleet_poll', { wait_s: 5 });
  assert.deepEqual(fyi.messages.map((x) => x.content), ['fyi']);

  // Sending to an unknown name fails with status 1.
  const bad = await f.fleetctl(['--as', 'ops', 'send', 'nobody-here', 'hello']);
  assert.equal(bad.code, 1, `unknown recipient: exit ${bad.code} ${bad.stdout}${bad.stderr}`);
  assert.ok(bad.stderr.trim().length > 0, 'the failure is explained on stderr');
});

fleetTest('mcp-config prints configs with an absolute fleet-mcp path', async (f) => {
  for (const which of ['claude', 'opencode']) {
    const r = await f.fleetctl(['mcp-config', which], { noSocket: true });
    assert.equal(r.code, 0, `mcp-config ${which}: ${r.stderr}`);
    let cfg;
    try {
      cfg = JSON.parse(r.stdout);
    } catch {
      assert.fail(`mcp-config ${which} is not JSON: ${r.stdout}`);
    }
    const p = deepFind(cfg, (v) => typeof v === 'string' && path.basename(v) === 'fleet-mcp');
    assert.ok(p, `mcp-config ${which} names fleet-mcp: ${r.stdout}`);
    assert.ok(path.isAbsolute(p), `absolute path: ${p}`);
    assert.ok(existsSync(p), `${p} exists`);
  }
  // Codex: a TOML table for its config.toml. Codex gives a stdio server a
  // clean environment, so env_vars lists what fleet-mcp reads from it.
  const r = await f.fleetctl(['--as', 'carol', '--socket', 'rel/fleetd.sock', 'mcp-config', 'codex'], { noSocket: true });
  assert.equal(r.code, 0, `mcp-config codex: ${r.stderr}`);
  assert.match(r.stdout, /^\[mcp_servers\.fleet\]$/m);
  const cmd = r.stdout.match(/^command = "(.*)"$/m);
  assert.ok(cmd && path.isAbsolute(cmd[1]) && path.basename(cmd[1]) === 'fleet-mcp' && existsSync(cmd[1]), r.stdout);
  assert.match(r.stdout, /^env = \{ FLEET_NAME = "carol", FLEET_ROLE = "lead", FLEET_SOCKET = "\/[^"]*\/rel\/fleetd\.sock" \}$/m);
  assert.match(r.stdout, /^env_vars = \[.*"XDG_RUNTIME_DIR".*"TMUX_PANE".*\]$/m);
});

fleetTest('exit statuses: usage 2, no daemon 1', async (f) => {
  for (const args of [['frobnicate'], [], ['send'], ['send', 'only-to'], ['mcp-config', 'vim'], ['--bogus-flag', 'status']]) {
    const r = await f.fleetctl(args, { noSocket: args.length === 0 });
    assert.equal(r.code, 2, `fleetctl ${args.join(' ')}: exit ${r.code}; ${r.stdout}${r.stderr}`);
    assert.ok(r.stderr.trim().length > 0, `fleetctl ${args.join(' ')} explains the usage error on stderr`);
  }
  // No fleetd on this socket.
  const r = await f.fleetctl(['status']);
  assert.equal(r.code, 1, `status with no daemon: exit ${r.code}; ${r.stdout}${r.stderr}`);
  assert.ok(r.stderr.trim().length > 0, 'the failure is explained');
});

fleetTest('fleetd takes its paths from the environment; the socket is mode 0600', async (f) => {
  await f.startFleetd({ flags: false });
  const mode = statSync(f.socket).mode & 0o777;
  assert.equal(mode, 0o600, `socket mode ${mode.toString(8)}`);
  assert.ok(existsSync(f.stateDir), 'the state dir from FLEET_STATE_DIR was used');
  // fleetctl finds the socket through FLEET_SOCKET as well.
  const st = await f.fleetctl(['status'], { noSocket: true, env: { FLEET_SOCKET: f.socket } });
  assert.equal(st.code, 0, `status via FLEET_SOCKET: ${st.stdout}${st.stderr}`);
  assert.ok(f.fleetdAlive(), 'fleetd is alive');
});

fleetTest('trace shows what fleetd logged for one flow, send and reply alike', async (f) => {
  await f.startFleetd();
  const dave = await f.mcpClient('dave');
  const sent = parseJson(await f.fleetctl(['--json', '--as', 'ops', 'send', 'dave', 'trace me']), 'send');
  const got = await callTool(dave, 'fleet_poll', {});
  assert.equal(got.messages[0].traceId, sent.traceId, 'the poller sees the same trace id');
  const rep = await callTool(dave, 'fleet_reply', { to: 'ops', content: 'traced' });
  assert.equal(rep.traceId, sent.traceId, 'the reply joins the flow');

  const tr = parseJson(await f.fleetctl(['--json', 'trace', sent.traceId]), 'trace --json');
  const lines = tr.lines.join('\n');
  assert.ok(tr.lines.every((l) => l.includes(`[trace=${sent.traceId}]`)), lines);
  assert.match(lines, new RegExp(`SEND ${sent.msgId}`), lines);
  assert.match(lines, new RegExp(`REPLY ${rep.msgId}`), lines);
  assert.ok(!lines.includes('trace me'), 'log lines never carry message bodies');

  const none = await f.fleetctl(['trace', '00000000-0000-4000-8000-000000000000']);
  assert.equal(none.code, 1, 'an unknown trace is a failure');
  await f.closeClient(dave);
});
