// tmux-harness.mjs — a private tmux server for the tests that need panes
// (nudges, the nudge gate, spawning). Each server has its own socket in the
// test's dir (-S), so no test touches a user's tmux, and fleetd learns the
// server from the TMUX variable a client passes (`${sock},0,0`).

import assert from 'node:assert/strict';

/** Runs tmux ARGS on the server at sock; asserts it succeeded; returns stdout. */
export async function tmux(f, sock, ...args) {
  const r = await f.run('tmux', ['-S', sock, ...args], { timeout: 20000 });
  assert.equal(r.code, 0, `tmux ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/**
 * Starts a server on sock with one session 't' whose pane runs command (a
 * shell command line), size cols x rows; returns the pane id (%N).
 */
export async function startTmux(f, sock, command, { cols = 200, rows = 50 } = {}) {
  await tmux(f, sock, '-f', '/dev/null', 'new-session', '-d', '-s', 't', '-x', String(cols), '-y',
    String(rows), command);
  const pane = (await tmux(f, sock, 'display', '-p', '-t', 't', '#{pane_id}')).trim();
  assert.match(pane, /^%\d+$/, `pane id: ${pane}`);
  return pane;
}

/** Ends the server on sock (no error if it is already gone). */
export async function stopTmux(f, sock) {
  await f.run('tmux', ['-S', sock, 'kill-server'], { timeout: 20000 }).catch(() => {});
}

/** Every pane id on the server at sock. */
export async function panes(f, sock) {
  const out = await tmux(f, sock, 'list-panes', '-a', '-F', '#{pane_id}');
  return out.split('\n').filter(Boolean);
}
