// new_user_cli.test.mjs — what a new user meets at the command line, checked
// against a real fleetd: the ids send prints and that trace takes either of
// them; one-line usage errors; --json errors as a JSON object on stdout; a
// bad --as refused at once; the start hint when fleetd is not running; and
// the hints the MCP layer adds worded for the interface (fleet_list for an
// agent, fleetctl roster and --as for fleetctl).

import assert from 'node:assert/strict';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { fleetTest, callTool, callToolRaw, resultText, bin, BIN_DIR } from './harness.mjs';

function parseJson(r, what) {
  try {
    return JSON.parse(r.stdout);
  } catch {
    assert.fail(`${what}: stdout is not JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
  }
}

const lines = (s) => s.split('\n').filter((l) => l.trim() !== '');

fleetTest('send prints the traceId; trace takes a msgId and prints its flow', async (f) => {
  await f.startFleetd();
  const dave = await f.mcpClient('dave');
  const sent = await f.fleetctl(['--as', 'ops', 'send', 'dave', 'trace me please']);
  assert.equal(sent.code, 0, `send: ${sent.stdout}${sent.stderr}`);
  const m = sent.stdout.match(/^sent msgId=(\S+) traceId=(\S+) to dave \(\S+\)$/m);
  assert.ok(m, `send names msgId and traceId: ${sent.stdout}`);
  const [, msgId, traceId] = m;
  assert.notEqual(msgId, traceId);

  const got = await callTool(dave, 'fleet_poll', {});
  assert.equal(got.messages[0].msgId, msgId);
  assert.equal(got.messages[0].traceId, traceId, 'the printed traceId is the flow of the message');

  // By trace id, as before.
  const byTrace = await f.fleetctl(['trace', traceId]);
  assert.equal(byTrace.code, 0, `trace <traceId>: ${byTrace.stdout}${byTrace.stderr}`);
  assert.match(byTrace.stdout, new RegExp(`SEND ${msgId}`));

  // By msgId: the same flow's lines.
  const byMsg = await f.fleetctl(['trace', msgId]);
  assert.equal(byMsg.code, 0, `trace <msgId>: ${byMsg.stdout}${byMsg.stderr}`);
  assert.match(byMsg.stdout, new RegExp(`\\[trace=${traceId}\\] .*SEND ${msgId}`), byMsg.stdout);
  assert.ok(!byMsg.stdout.includes('trace me please'), 'log lines never carry message bodies');
  const j = parseJson(await f.fleetctl(['--json', 'trace', msgId]), 'trace --json <msgId>');
  assert.equal(j.traceId, traceId, 'the result names the resolved trace id');
  assert.ok(j.lines.length > 0 && j.lines.every((l) => l.includes(`[trace=${traceId}]`)), JSON.stringify(j));

  // A waiting send that runs out prints both ids too.
  const pending = await f.fleetctl(['--as', 'ops', 'send', 'dave', 'anyone?', '--wait', '1']);
  assert.equal(pending.code, 0, pending.stderr);
  assert.match(pending.stdout, /^sent msgId=\S+ traceId=\S+ to dave/m);
  assert.match(pending.stdout, /no reply within 1s/);

  const none = await f.fleetctl(['trace', '00000000-0000-4000-8000-000000000000']);
  assert.equal(none.code, 1, 'an id nothing mentions is still a failure');
  await f.closeClient(dave);
});

fleetTest('the start hint names the fleetd binary and the socket that was tried', async (f) => {
  const fleetd = bin('fleetd');
  assert.ok(existsSync(fleetd), `${fleetd} exists`);
  const sock = path.join(f.dir, 'custom.sock');
  const r = await f.fleetctl(['status'], { socket: sock });
  assert.equal(r.code, 1, `no daemon: exit ${r.code}; ${r.stderr}`);
  assert.ok(
    r.stderr.includes(`start it with: ${fleetd} --socket ${sock} &`),
    `the hint starts ${fleetd} on ${sock}: ${r.stderr}`
  );
  assert.ok(!/start it with: fleetd &/.test(r.stderr), `no bare "fleetd &": ${r.stderr}`);
  assert.ok(!/pkill|killall/.test(r.stderr), `no kill by name: ${r.stderr}`);

  // The default socket needs no --socket: fleetd finds it by itself.
  const def = await f.fleetctl(['status'], { noSocket: true });
  assert.equal(def.code, 1, def.stderr);
  assert.match(def.stderr, new RegExp(`start it with: ${fleetd.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} &`));
  assert.ok(!def.stderr.includes('--socket'), `default socket: no --socket in ${def.stderr}`);

  // fleet-mcp says the same on its stderr (and to the MCP client).
  const mcp = await f.run(bin('fleet-mcp'), ['--socket', sock]);
  assert.equal(mcp.code, 1, mcp.stderr);
  assert.ok(mcp.stderr.includes(`${fleetd} --socket ${sock} &`), `fleet-mcp's hint: ${mcp.stderr}`);
  assert.ok(!/fleetd &\n/.test(mcp.stderr.replace(`${fleetd} --socket ${sock} &`, '')), mcp.stderr);
});

fleetTest('a usage error is one line and a hint, never the whole usage text', async (f) => {
  const cases = [
    [['peer', 'remove'], /^fleetctl: peer remove needs HOST$/m, /^usage: fleetctl peer remove HOST$/m],
    [['send', 'bob'], /^fleetctl: send needs CONTENT$/m, /^usage: fleetctl send TO CONTENT/m],
    [['send'], /^fleetctl: send needs TO and CONTENT$/m, /^usage: fleetctl send TO CONTENT/m],
    [['status', 'extra'], /^fleetctl: status takes no arguments/m, /^usage: fleetctl status$/m],
    [['peer'], /^fleetctl: peer needs a subcommand: add HOST PUBKEY \[URL\], list, or remove HOST$/m, /fleetctl help/],
    [['frobnicate'], /^fleetctl: unknown command 'frobnicate'$/m, /^run 'fleetctl help' for the commands$/m],
    [['--bogus-flag', 'status'], /^fleetctl: unknown option '--bogus-flag'$/m, /fleetctl help/],
    [['mcp-config', 'vim'], /not 'vim'/, /^usage: fleetctl mcp-config claude\|opencode\|codex$/m],
    [['trace'], /^fleetctl: trace needs ID$/m, /^usage: fleetctl trace ID$/m],
    [['send', '', 'hi'], /^fleetctl: TO must not be empty/m, /^usage: fleetctl send/m],
  ];
  for (const [args, what, hint] of cases) {
    const r = await f.fleetctl(args);
    const shown = `fleetctl ${args.join(' ')}: exit ${r.code}\n${r.stderr}`;
    assert.equal(r.code, 2, shown);
    assert.ok(lines(r.stderr).length <= 2, `at most 2 lines on stderr: ${shown}`);
    assert.match(r.stderr, what, shown);
    assert.match(r.stderr, hint, shown);
    assert.equal(r.stdout, '', `nothing on stdout without --json: ${shown}`);
    assert.ok(!/'peer' takes 2 arguments/.test(r.stderr), shown);
  }
  // help still prints the whole text, on stdout, with status 0.
  const help = await f.fleetctl(['help']);
  assert.equal(help.code, 0);
  assert.ok(lines(help.stdout).length > 10, help.stdout);
  assert.match(help.stdout, /trace ID/);
  // poll's --from names a sender, not a TO.
  assert.match(help.stdout, /poll \[--wait S\] \[--max N\] \[--from WHO\]/);
  assert.ok(!/--from TO/.test(help.stdout), help.stdout);
});

fleetTest('--json reports errors as a JSON object on stdout with the same exit status', async (f) => {
  // A usage error, whichever side of the error --json is on.
  for (const args of [['--json', 'peer', 'remove'], ['peer', 'remove', '--json']]) {
    const r = await f.fleetctl(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    const j = parseJson(r, args.join(' '));
    assert.equal(j.error.exitCode, 2);
    assert.equal(j.error.message, 'peer remove needs HOST');
    assert.equal(j.error.usage, 'fleetctl peer remove HOST');
    assert.match(r.stderr, /^fleetctl: peer remove needs HOST$/m, 'the text stays on stderr');
  }
  const opt = await f.fleetctl(['--wait', 'soon', '--json', 'poll']);
  assert.equal(opt.code, 2);
  assert.equal(parseJson(opt, '--wait soon --json').error.exitCode, 2);

  // fleetd not running: exit 1, the same sentence in both places.
  const down = await f.fleetctl(['--json', 'status']);
  assert.equal(down.code, 1, `${down.stdout}${down.stderr}`);
  const jd = parseJson(down, 'status --json with no fleetd');
  assert.equal(jd.error.exitCode, 1);
  assert.match(jd.error.message, /fleetd is not running/);
  assert.ok(down.stderr.includes(jd.error.message), `stderr says the same: ${down.stderr}`);
  assert.equal(jd.error.code, undefined, 'no fleetd, so no fleetd error code');

  // A JSON-RPC error from fleetd carries its code; a tool error its text.
  await f.startFleetd();
  const longId = 'x'.repeat(80);
  const rpc = await f.fleetctl(['--json', 'trace', longId]);
  assert.equal(rpc.code, 1, `${rpc.stdout}${rpc.stderr}`);
  const jr = parseJson(rpc, 'trace --json <80 chars>');
  assert.equal(jr.error.code, -32602, JSON.stringify(jr));
  assert.equal(jr.error.exitCode, 1);
  const tool = await f.fleetctl(['--json', '--as', 'ops', 'send', 'nobody', 'hi']);
  assert.equal(tool.code, 1, `${tool.stdout}${tool.stderr}`);
  const jt = parseJson(tool, 'send --json to nobody');
  assert.match(jt.error.message, /nobody/);
  assert.equal(jt.error.exitCode, 1);
  // Success output is unchanged: the result itself.
  const ok = parseJson(await f.fleetctl(['--json', 'status']), 'status --json');
  assert.equal(ok.error, undefined);
});

fleetTest('--as with a name that breaks the name rule is refused before anything runs', async (f) => {
  // No fleetd is needed to refuse it, and none is asked: exit 2, not 1.
  for (const args of [
    ['--as', 'bad name', 'mcp-config', 'claude'],
    ['--as', 'bad name', 'mcp-config', 'opencode'],
    ['--as', 'bad name', 'mcp-config', 'codex'],
    ['--as', 'bad name', 'send', 'bob', 'hi'],
    ['--as', 'a.b', 'poll'],
    ['--as', '0b6f3c7e-8d1a-4c2b-9e4f-5a6b7c8d9e0f', 'send', 'bob', 'hi'],
  ]) {
    const r = await f.fleetctl(args);
    const shown = `fleetctl ${args.join(' ')}: exit ${r.code}\n${r.stdout}${r.stderr}`;
    assert.equal(r.code, 2, shown);
    assert.equal(r.stdout, '', `no config printed: ${shown}`);
    assert.match(r.stderr, /--as '[^']*' is not a valid name: use 1-63 letters, digits, '-' or '_'/, shown);
    assert.ok(!/fleetd is not running/.test(r.stderr), `refused before connecting: ${shown}`);
    assert.ok(lines(r.stderr).length <= 2, shown);
  }
  // The same rule for $FLEET_NAME, which send and poll fall back on.
  const env = await f.fleetctl(['poll'], { env: { FLEET_NAME: 'has space' } });
  assert.equal(env.code, 2, env.stderr);
  assert.match(env.stderr, /FLEET_NAME 'has space' is not a valid name/);
  // A good name still works.
  const good = await f.fleetctl(['--as', 'good-name_1', 'mcp-config', 'claude']);
  assert.equal(good.code, 0, good.stderr);
  assert.equal(JSON.parse(good.stdout).mcpServers.fleet.env.FLEET_NAME, 'good-name_1');
});

fleetTest('hints are worded for the interface: fleet_list and FLEET_NAME for agents, fleetctl roster and --as for fleetctl', async (f) => {
  await f.startFleetd();
  const alice = await f.mcpClient('alice');

  // An agent sending to an unknown name is pointed at its tool.
  const res = await callToolRaw(alice, 'fleet_send', { to: 'nobody', content: 'hi' });
  assert.equal(res.isError, true, JSON.stringify(res));
  const agentText = resultText(res);
  assert.match(agentText, /nobody/);
  assert.match(agentText, /fleet_list/, `the agent's hint: ${agentText}`);
  assert.ok(!agentText.includes('fleetctl'), `no CLI words for an agent: ${agentText}`);

  // fleetctl, the same refusal: its own command.
  const cli = await f.fleetctl(['--as', 'ops', 'send', 'nobody', 'hi']);
  assert.equal(cli.code, 1, `${cli.stdout}${cli.stderr}`);
  assert.match(cli.stderr, /nobody/);
  assert.match(cli.stderr, /fleetctl roster/, `the CLI hint: ${cli.stderr}`);
  assert.ok(!cli.stderr.includes('fleet_list'), `no tool names for fleetctl: ${cli.stderr}`);
  assert.ok(lines(cli.stderr).length === 1, `one sentence: ${cli.stderr}`);

  // poll --from an unknown name: about the sender, not a recipient.
  const from = await f.fleetctl(['--as', 'ops', 'poll', '--from', 'nobody']);
  assert.equal(from.code, 1, `${from.stdout}${from.stderr}`);
  assert.match(from.stderr, /nobody/);
  assert.match(from.stderr, /fleetctl roster/);
  assert.ok(!/'to'|\bTO\b|recipient|fleet_list/.test(from.stderr), `poll --from error: ${from.stderr}`);

  // A name held by a live agent: fleetctl is told to pick another --as.
  const taken = await f.fleetctl(['--as', 'alice', 'poll']);
  assert.equal(taken.code, 1, `${taken.stdout}${taken.stderr}`);
  assert.match(taken.stderr, /alice/);
  assert.match(taken.stderr, /--as/, `the fix for fleetctl: ${taken.stderr}`);
  assert.ok(!taken.stderr.includes('FLEET_NAME'), `no MCP env words for fleetctl: ${taken.stderr}`);
  const tj = parseJson(await f.fleetctl(['--json', '--as', 'alice', 'poll']), 'poll --json as a taken name');
  assert.equal(tj.error.code, -32602, JSON.stringify(tj));
  assert.match(tj.error.message, /--as/);

  // ...and an agent taking it is told FLEET_NAME, as before.
  let refused;
  try {
    await f.mcpClient('alice');
  } catch (e) {
    refused = e;
  }
  assert.ok(refused, 'a second agent named alice is refused');
  assert.match(String(refused.message), /FLEET_NAME/, String(refused.message));
  assert.ok(!String(refused.message).includes('--as'), String(refused.message));
  await f.closeClient(alice);
});
