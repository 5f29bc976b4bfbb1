// spawn_links.test.mjs — what follows a spawn: its brief is a real SEND from
// the spawner, so the worker's fleet_reply answers it (inReplyTo = the
// brief's msgId, the same traceId, one flow in `fleetctl trace`), on one host
// and when the spawn was asked from another host over the broker; a stopped
// agent is out of every broadcast, and a broadcast counts exactly the live
// roster; a spawn failure arrives whole, however long its message; and
// fleetctl waits out the bound fleetd applies to a call (spawn without
// --wait, send --wait 0 to a busy worker) instead of giving up first.
//
// The spawned agents are real programs (agents/prompt_agent.mjs --mcp, with
// AGENT_REPLY_TO it answers every input with fleet_reply), in windows of a
// private tmux server.

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BIN_DIR, callTool, callToolRaw, fleetTest, resultText, sleep, waitFor } from './harness.mjs';
import { hostsTest, pinAll, useBroker, waitStatus } from './broker-harness.mjs';
import { promptAgentProfile, spawnedInputs, startPromptAgent, startTmux, stopTmux } from './tmux-harness.mjs';

const brokerRef = useBroker();

/** A profile whose agent answers each input with fleet_reply to replyTo. */
const replyingProfile = (dir, replyTo) =>
  promptAgentProfile(dir, BIN_DIR, { env: { FLEET_BIN_DIR: BIN_DIR, AGENT_REPLY_TO: replyTo } });

/** fleetctl --json trace ID on f: the log lines of that flow. */
async function traceLines(f, id) {
  const r = await f.fleetctl(['--json', 'trace', id]);
  assert.equal(r.code, 0, `fleetctl trace ${id}: ${r.stderr}`);
  return JSON.parse(r.stdout).lines;
}

async function withTmux(f, config, fn) {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    const pane = await startTmux(f, sock, 'exec cat');
    await f.startFleetd({ config });
    await fn(sock, pane);
  } finally {
    await stopTmux(f, sock);
  }
}

fleetTest('the reply to a spawn brief answers it: inReplyTo is the brief\'s msgId, one trace', async (f) => {
  const config = { profiles: { agent: replyingProfile(f.dir, 'boss') } };
  await withTmux(f, config, async (sock, pane) => {
    const boss = await f.mcpClient('boss', { role: 'lead', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const res = await callTool(boss, 'fleet_spawn', { profile: 'agent', brief: 'first task' });
    assert.equal(res.status, 'ready', JSON.stringify(res));

    const got = await callTool(boss, 'fleet_poll', { wait_s: 20 });
    assert.equal(got.messages.length, 1, JSON.stringify(got));
    const reply = got.messages[0];
    assert.equal(reply.kind, 'REPLY');
    assert.equal(reply.content, 'done: first task');
    assert.match(reply.inReplyTo || '', /^[0-9a-f-]{36}$/i, `the reply answers a message: ${JSON.stringify(reply)}`);
    assert.equal(reply.inReplyTo, res.briefMsgId, `the spawner learned the brief's msgId: ${JSON.stringify(res)}`);
    assert.equal(reply.traceId, res.traceId, 'the reply joins the brief\'s trace');

    // One flow: the spawn, the brief typed in and the reply, under one trace.
    const lines = (await traceLines(f, res.traceId)).join('\n');
    assert.match(lines, /spawned 'agent-1'.*is ready/, lines);
    assert.match(lines, new RegExp(`brief ${res.briefMsgId} from 'boss' queued`), lines);
    assert.match(lines, new RegExp(`REPLY ${reply.msgId}`), lines);
    const byReply = await traceLines(f, reply.msgId);
    assert.ok(byReply.every((l) => l.includes(`[trace=${res.traceId}]`)), byReply.join('\n'));
    // Without a brief there is no briefMsgId.
    const bare = await callTool(boss, 'fleet_spawn', { profile: 'agent', name: 'bare' });
    assert.equal(bare.status, 'ready');
    assert.equal(bare.briefMsgId, undefined);
  });
});

fleetTest('a stopped agent gets no broadcast; recipients count the live roster', async (f) => {
  const config = { profiles: { agent: promptAgentProfile(f.dir, BIN_DIR, { groups: ['crew'] }) } };
  await withTmux(f, config, async (sock, pane) => {
    const boss = await f.mcpClient('boss', { role: 'lead', groups: ['crew'], env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const peer = await f.mcpClient('peer', { groups: ['crew'] });
    const env = { TMUX: `${sock},0,0` };
    for (const name of ['w1', 'w2']) {
      const sp = await f.fleetctl(['--as', 'ops', 'spawn', 'agent', '--name', name, '--wait', '30'], { env });
      assert.equal(sp.code, 0, sp.stderr);
    }
    const stopped = await f.fleetctl(['--as', 'ops', 'stop', 'w1'], { env });
    assert.equal(stopped.code, 0, stopped.stderr);

    const roster = JSON.parse((await f.fleetctl(['--json', 'roster'])).stdout).entities;
    assert.equal(roster.find((e) => e.name === 'w1'), undefined, 'w1 left the roster');
    for (const group of [undefined, 'crew']) {
      const b = await callTool(boss, 'fleet_broadcast', { content: `to ${group || 'all'}`, ...(group ? { group } : {}) });
      const members = roster.filter((e) => e.name !== 'boss' && (!group || (e.groups || []).includes(group)));
      assert.equal(b.recipients, members.length, `recipients ${b.recipients} vs the live roster ${JSON.stringify(members.map((e) => e.name))}`);
      const lines = (await traceLines(f, b.traceId)).join('\n');
      assert.ok(!lines.includes("for 'w1'"), `nothing held for the stopped agent:\n${lines}`);
      assert.match(lines, /held for 'w2'/, lines);
    }
    const held = await callTool(peer, 'fleet_poll', {});
    assert.equal(held.messages.length, 2, 'the live members got both');
  });
});

fleetTest('a spawn failure with a long reason arrives whole', async (f) => {
  const config = { profiles: { mute: { backend: 'tmux', command: ['sleep', '600'], role: 'worker', readyTimeoutS: 2 } } };
  await withTmux(f, config, async (sock, pane) => {
    const boss = await f.mcpClient('boss', { role: 'lead', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const res = await callToolRaw(boss, 'fleet_spawn', { profile: 'mute' });
    assert.equal(res.isError, true);
    assert.match(
      resultText(res),
      /not ready within 2 s: the agent's MCP client never registered \(check the profile's command, and that it runs fleet-mcp with the FLEET_\* environment it is given\)$/,
      resultText(res)
    );
    // fleetctl prints it whole too.
    const r = await f.fleetctl(['--as', 'ops', 'spawn', 'mute'], { env: { TMUX: `${sock},0,0` } });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /FLEET_\* environment it is given\)/, r.stderr);
  });
});

fleetTest('fleetctl spawn without --wait waits out fleetd\'s bound (past 40 s) and prints its answer', async (f) => {
  // A profile that never registers, with a readyTimeoutS past what fleetctl
  // used to wait without --wait: fleetd's own answer must come through.
  const config = { profiles: { slow: { backend: 'tmux', command: ['sleep', '600'], role: 'worker', readyTimeoutS: 43 } } };
  await withTmux(f, config, async (sock) => {
    const r = await f.fleetctl(['--as', 'ops', 'spawn', 'slow'], { env: { TMUX: `${sock},0,0` }, timeout: 120000 });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /not ready within 43 s/, r.stderr);
    assert.doesNotMatch(r.stderr, /no answer from fleetd/, r.stderr);
  });
});

fleetTest('fleetctl send --wait 0 to a busy worker waits for the typing fleetd allows (inject.timeoutS)', async (f) => {
  let a;
  try {
    await f.startFleetd({ config: { nudge: { enabled: false, quietMs: 200 }, inject: { timeoutS: 40 } } });
    a = await startPromptAgent(f, {
      mcp: true,
      binDir: BIN_DIR,
      env: { FLEET_SOCKET: f.socket, FLEET_NAME: 'w', FLEET_ROLE: 'worker' },
    });
    const lead = await f.mcpClient('lead', { role: 'lead' });
    await waitFor(async () => (await callTool(lead, 'fleet_list', {})).entities.some((e) => e.name === 'w' && e.status === 'online'), {
      what: 'the worker online',
    });
    // Busy past the 10 s fleetctl used to allow a send --wait 0; then idle.
    writeFileSync(a.busy, '');
    const sending = f.fleetctl(['--json', '--as', 'ops', 'send', 'w', 'after the busy spell', '--wait', '0'], { timeout: 120000 });
    await sleep(13000);
    rmSync(a.busy, { force: true });
    const r = await sending;
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.equal(JSON.parse(r.stdout).status, 'injected', r.stdout);
    await waitFor(() => a.submitted().includes('after the busy spell'), { what: 'the brief typed in' });
  } finally {
    if (a) await stopTmux(f, a.sock);
  }
});

hostsTest('the reply to a brief of a spawn asked from another host answers it, across the broker', brokerRef, { start: false }, async ({ hostA, hostB }) => {
  const sock = path.join(hostB.dir, 'tmux.sock');
  await startTmux(hostB, sock, 'exec cat');
  try {
    await Promise.all([
      hostA.startFleetd(),
      hostB.startFleetd({ config: { profiles: { agent: replyingProfile(hostB.dir, 'lead') } }, env: { TMUX: `${sock},0,0` } }),
    ]);
    await pinAll([hostA, hostB]);
    const lead = await hostA.mcpClient('lead', { role: 'lead' });
    const watcher = await hostB.mcpClient('watcher', { role: 'worker' });
    await waitStatus(watcher, 'lead', 'hostA', 'online');
    await waitFor(async () => ((await callTool(lead, 'fleet_list', {})).hosts || []).some((h) => h.host === 'hostB' && h.profiles.length > 0), {
      what: 'hostB with its profiles',
    });

    const res = await callTool(lead, 'fleet_spawn', { profile: 'agent', host: 'hostB', name: 'w1', brief: 'task from A', wait_s: 30 });
    assert.equal(res.status, 'ready', JSON.stringify(res));
    await waitFor(() => spawnedInputs(hostB.dir).includes('task from A'), { what: 'the brief typed in on B' });

    const got = await callTool(lead, 'fleet_poll', { wait_s: 20 });
    assert.equal(got.messages.length, 1, JSON.stringify(got));
    const reply = got.messages[0];
    assert.equal(reply.content, 'done: task from A');
    assert.match(reply.inReplyTo || '', /^[0-9a-f-]{36}$/i, `the reply answers a message: ${JSON.stringify(reply)}`);
    assert.equal(reply.inReplyTo, res.briefMsgId, `the reply names the brief: ${JSON.stringify(res)}`);
    assert.equal(reply.traceId, res.traceId, 'one trace from the SPAWN to the reply');
    const onB = (await traceLines(hostB, res.traceId)).join('\n');
    assert.match(onB, new RegExp(`brief ${res.briefMsgId} from 'lead' queued`), onB);
    assert.match(onB, new RegExp(`REPLY ${reply.msgId}`), onB);

    // Stopped on B: B's broadcasts (the broker on) count only its live agents.
    assert.equal((await callTool(lead, 'fleet_stop', { to: 'w1@hostB' })).status, 'stopped');
    const other = await hostB.mcpClient('other', { role: 'worker' });
    const b = await callTool(watcher, 'fleet_broadcast', { content: 'all hands' });
    assert.equal(b.recipients, 1, `only 'other' on B: ${JSON.stringify(b)}`);
    assert.equal((await callTool(other, 'fleet_poll', {})).messages.length, 1);
  } finally {
    await stopTmux(hostB, sock);
  }
});
