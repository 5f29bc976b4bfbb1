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
