// nudge.test.mjs — a message held for an idle client with a tmux pane makes
// fleetd type the nudge line into that pane, with backoff reminders until the
// client drains; then it stops. With the nudge disabled nothing is typed.
//
// The pane belongs to a private tmux server (its own socket in the test dir)
// and runs `cat`: the terminal echoes the nudge line as it is typed (fleetd
// checks that it shows before it presses Enter), and cat prints each
// submitted line once more, so each nudge shows up as two lines.

import assert from 'node:assert/strict';
import path from 'node:path';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { fleetTest, callTool, nudgeConfig, sleep, waitFor } from './harness.mjs';
import { startTmux as startServer, stopTmux, tmux } from './tmux-harness.mjs';

/** A server on sock with one pane running cat; returns the pane id. */
const startTmux = (f, sock) => startServer(f, sock, 'exec cat');

const NUDGE_TEXT = nudgeConfig().nudge.text;

/** How many lines of the pane (history included) are the nudge text. */
async function nudgeCount(f, sock, pane) {
  const out = await tmux(f, sock, 'capture-pane', '-p', '-J', '-S', '-', '-t', pane);
  return out.split('\n').filter((l) => l.includes(NUDGE_TEXT)).length;
}

fleetTest('nudge types into the pane with backoff until drained', async (f, t) => {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    const pane = await startTmux(f, sock);
    await f.startFleetd({ config: nudgeConfig(true) });
    // A lead: its messages are held and it is nudged (a worker in a pane
    // would get them typed in instead, see inject.test.mjs).
    const carol = await f.mcpClient('carol', {
      role: 'lead',
      env: { TMUX_PANE: pane, TMUX: `${sock},0,0` },
    });
    const notes = [];
    carol.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      notes.push(n.params);
    });
    const dave = await f.mcpClient('dave', { role: 'lead' });

    assert.equal(await nudgeCount(f, sock, pane), 0, 'nothing typed before a message is held');
    const sent = await callTool(dave, 'fleet_send', { to: 'carol', content: 'task for carol' });
    assert.equal(sent.status, 'sent');

    // The first nudge, then reminders (200 ms, then 400, 800, … ms apart).
    // Each nudge is two lines: the echo as it is typed, then cat's copy once
    // Enter submitted it.
    await waitFor(async () => (await nudgeCount(f, sock, pane)) >= 2, { what: 'the first nudge line, submitted' });
    await sleep(1500);
    const grown = await waitFor(
      async () => {
        const n = await nudgeCount(f, sock, pane);
        return n >= 4 ? n : 0;
      },
      { what: 'a reminder nudge line' }
    );
    t.diagnostic(`nudge lines before draining: ${grown}`);

    // The MCP side of the nudge: a notifications/message to carol.
    await waitFor(() => notes.length >= 1, { what: 'a notifications/message to carol' });

    // Drain; after that the count stops growing.
    const got = await callTool(carol, 'fleet_poll', {});
    assert.equal(got.messages.length, 1);
    assert.equal(got.messages[0].content, 'task for carol');
    await sleep(500); // a line already on its way may still land
    const settled = await nudgeCount(f, sock, pane);
    await sleep(2500);
    assert.equal(await nudgeCount(f, sock, pane), settled, 'no more nudges once drained');

    // Only whole nudge lines were typed: nothing else appeared in the pane.
    const out = await tmux(f, sock, 'capture-pane', '-p', '-J', '-S', '-', '-t', pane);
    const other = out.split('\n').filter((l) => l.trim() !== '' && !l.includes(NUDGE_TEXT));
    assert.deepEqual(other, [], 'the pane holds nudge lines only');
  } finally {
    await stopTmux(f, sock);
  }
});

fleetTest('nothing is typed when the nudge is disabled', async (f) => {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    const pane = await startTmux(f, sock);
    await f.startFleetd({ config: nudgeConfig(false) });
    // A lead: its messages are held and it is nudged (a worker in a pane
    // would get them typed in instead, see inject.test.mjs).
    const carol = await f.mcpClient('carol', {
      role: 'lead',
      env: { TMUX_PANE: pane, TMUX: `${sock},0,0` },
    });
    const dave = await f.mcpClient('dave', { role: 'lead' });
    const sent = await callTool(dave, 'fleet_send', { to: 'carol', content: 'quiet task' });
    assert.equal(sent.status, 'sent');
    await sleep(2500);
    assert.equal(await nudgeCount(f, sock, pane), 0, 'no nudge with enabled: false');
    const out = await tmux(f, sock, 'capture-pane', '-p', '-J', '-S', '-', '-t', pane);
    assert.equal(out.trim(), '', `the pane is untouched: ${JSON.stringify(out)}`);
    const got = await callTool(carol, 'fleet_poll', {});
    assert.equal(got.messages.length, 1, 'the message is held all the same');
  } finally {
    await stopTmux(f, sock);
  }
});
