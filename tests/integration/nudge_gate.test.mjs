// nudge_gate.test.mjs — nudges pass the same gate as injection: fleetd types
// the nudge line into a pane only when the agent there sits at an empty
// prompt and its screen is quiet. A draft a human is typing is never merged
// with the nudge, and a busy agent is not typed at; in both cases the line
// comes once the pane is idle again.
//
// The pane belongs to a private tmux server (its own socket in the test dir)
// and runs agents/prompt_agent.mjs: it prompts "> " (which the default
// nudge.prompt takes for an empty input), echoes typed keys, records every
// submitted line to a file, and is busy while a flag file exists.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fleetTest, callTool, sleep, waitFor } from './harness.mjs';
import { startTmux, stopTmux, tmux } from './tmux-harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const AGENT = path.join(HERE, 'agents', 'prompt_agent.mjs');
const TEXT = 'fleet: you have messages - call fleet_poll';

/** Short timings; the default nudge.prompt. */
function gateConfig(backoffMs) {
  return {
    nudge: { enabled: true, firstDelayMs: 200, backoffMs, maxBackoffMs: backoffMs, text: TEXT, quietMs: 200 },
  };
}

/** A private tmux server on sock with one pane running the prompt agent. */
async function startAgent(f) {
  const sock = path.join(f.dir, 'tmux.sock');
  const record = path.join(f.dir, 'submitted.txt');
  const busy = path.join(f.dir, 'busy.flag');
  writeFileSync(record, '');
  const cmd = `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(AGENT)} ${JSON.stringify(record)} ${JSON.stringify(busy)}`;
  const pane = await startTmux(f, sock, cmd, { cols: 120, rows: 30 });
  const a = {
    sock,
    pane,
    busy,
    submitted: () => readFileSync(record, 'utf8').split('\n').filter((l) => l !== ''),
    cursorLine: async () => {
      const out = await tmux(f, sock, 'display', '-p', '-t', pane, '#{cursor_y}', ';', 'capture-pane', '-p', '-t', pane);
      const [cy, ...lines] = out.split('\n');
      return lines[Number(cy)] ?? '';
    },
  };
  await waitFor(async () => (await a.cursorLine()) === '>', { what: 'the agent prompt "> " in the pane' });
  return a;
}

/** Starts fleetd, carol (in the agent's pane) and dave; dave sends carol a message. */
async function sendToPane(f, a, backoffMs) {
  await f.startFleetd({ config: gateConfig(backoffMs) });
  const carol = await f.mcpClient('carol', { role: 'lead', env: { TMUX_PANE: a.pane, TMUX: `${a.sock},0,0` } });
  const dave = await f.mcpClient('dave', { role: 'lead' });
  const sent = await callTool(dave, 'fleet_send', { to: 'carol', content: 'task for carol' });
  assert.equal(sent.status, 'sent');
  return carol;
}

fleetTest('an idle pane with an empty input gets the nudge line once', async (f) => {
  const a = await startAgent(f);
  try {
    const carol = await sendToPane(f, a, 20000); // no reminder within the test
    await waitFor(() => a.submitted().length >= 1, { what: 'the nudge line submitted' });
    await sleep(1500);
    assert.deepEqual(a.submitted(), [TEXT], 'the nudge line, submitted once and whole');
    const got = await callTool(carol, 'fleet_poll', {});
    assert.equal(got.messages.length, 1);
  } finally {
    await stopTmux(f, a.sock);
  }
});

fleetTest('a typed draft is left alone; the nudge comes once it is cleared', async (f, t) => {
  const a = await startAgent(f);
  try {
    await tmux(f, a.sock, 'send-keys', '-t', a.pane, '-l', 'half typed idea');
    await waitFor(async () => (await a.cursorLine()) === '> half typed idea', { what: 'the draft in the pane' });
    const carol = await sendToPane(f, a, 300);
    await sleep(3000); // the first nudge and several reminders come due meanwhile
    assert.deepEqual(a.submitted(), [], 'nothing submitted while a draft is there');
    assert.equal(await a.cursorLine(), '> half typed idea', 'the draft is intact');

    await tmux(f, a.sock, 'send-keys', '-t', a.pane, 'C-u');
    await waitFor(() => a.submitted().length >= 1, { what: 'the nudge after the draft was cleared' });
    assert.equal(a.submitted()[0], TEXT, 'the nudge line alone, not merged with the draft');
    t.diagnostic(`lines submitted after clearing: ${a.submitted().length}`);
    await callTool(carol, 'fleet_poll', {});
    await sleep(800); // a line already on its way may still land
    assert.ok(a.submitted().every((l) => l === TEXT), JSON.stringify(a.submitted()));
  } finally {
    await stopTmux(f, a.sock);
  }
});

fleetTest('a busy agent gets no nudge until it is idle', async (f) => {
  const a = await startAgent(f);
  try {
    writeFileSync(a.busy, '');
    await waitFor(async () => (await a.cursorLine()).startsWith('working'), { what: 'the agent at work' });
    await sendToPane(f, a, 300);
    await sleep(3000);
    assert.deepEqual(a.submitted(), [], 'nothing typed into a busy agent');

    rmSync(a.busy);
    assert.ok(!existsSync(a.busy));
    await waitFor(() => a.submitted().length >= 1, { what: 'the nudge once the agent is idle' });
    assert.equal(a.submitted()[0], TEXT);
  } finally {
    await stopTmux(f, a.sock);
  }
});
