// tmux-harness.mjs — a private tmux server for the tests that need panes
// (nudges, the nudge gate, spawning). Each server has its own socket in the
// test's dir (-S), so no test touches a user's tmux, and fleetd learns the
// server from the TMUX variable a client passes (`${sock},0,0`).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PROMPT_AGENT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'agents', 'prompt_agent.mjs');

/**
 * A spawn profile whose agent is prompt_agent.mjs --mcp (it prompts "> ",
 * registers through fleet-mcp with the environment of its window, and
 * records every input typed into it in <dir>/spawned.txt), for binDir's
 * fleet-mcp; extra keys override.
 */
export function promptAgentProfile(dir, binDir, extra = {}) {
  return {
    backend: 'tmux',
    command: [process.execPath, PROMPT_AGENT, path.join(dir, 'spawned.txt'), path.join(dir, 'spawned-busy'), '--mcp'],
    env: { FLEET_BIN_DIR: binDir },
    role: 'worker',
    readyTimeoutS: 30,
    prompt: '^> ?$',
    quietMs: 100,
    ...extra,
  };
}

/** The inputs typed into the agents of promptAgentProfile(dir), one a line. */
export function spawnedInputs(dir) {
  try {
    return readFileSync(path.join(dir, 'spawned.txt'), 'utf8').split('\n').filter((l) => l !== '');
  } catch {
    return [];
  }
}

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

/**
 * Starts agents/prompt_agent.mjs in a pane of a new private server at
 * <f.dir>/<label>.sock. opts.mcp: also run its MCP client (fleet-mcp with
 * opts.env: FLEET_SOCKET, FLEET_NAME, FLEET_ROLE, ...). Waits for its prompt.
 * Returns { sock, pane, busy, submitted() (exact inputs, in order, without
 * fleet's provenance line), provenance() (each input's line, "" for none),
 * cursorLine(), screen() }.
 */
export async function startPromptAgent(f, { label = 'agent', mcp = false, env = {}, binDir, commands = false } = {}) {
  const { writeFileSync, readFileSync, existsSync } = await import('node:fs');
  const path = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const here = path.dirname(fileURLToPath(import.meta.url));
  const agent = path.join(here, 'agents', 'prompt_agent.mjs');
  const sock = path.join(f.dir, `${label}.sock`);
  const record = path.join(f.dir, `${label}-submitted.txt`);
  const busy = path.join(f.dir, `${label}-busy.flag`);
  writeFileSync(record, '');
  writeFileSync(`${record}.json`, '');
  const vars = Object.entries({ ...env, ...(binDir ? { FLEET_BIN_DIR: binDir } : {}) })
    .map(([k, v]) => `${k}=${JSON.stringify(String(v))}`)
    .join(' ');
  const run = `env ${vars} ${JSON.stringify(process.execPath)} ${JSON.stringify(agent)} ${JSON.stringify(record)} ${JSON.stringify(busy)}${mcp ? ' --mcp' : ''}${commands ? ' --commands' : ''}`;
  // With commands, a shell stays under the agent, as under a real one: keys
  // that reach the pane after the agent quit run there.
  const cmd = commands ? `${run}; exec sh` : `exec ${run}`;
  const pane = await startTmux(f, sock, cmd, { cols: 160, rows: 40 });
  const a = {
    sock,
    pane,
    busy,
    submitted: () =>
      existsSync(`${record}.json`)
        ? readFileSync(`${record}.json`, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l))
        : [],
    provenance: () =>
      existsSync(`${record}.prov.json`)
        ? readFileSync(`${record}.prov.json`, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l))
        : [],
    screen: () => tmux(f, sock, 'capture-pane', '-p', '-t', pane),
    cursorLine: async () => {
      const out = await tmux(f, sock, 'display', '-p', '-t', pane, '#{cursor_y}', ';', 'capture-pane', '-p', '-t', pane);
      const [cy, ...lines] = out.split('\n');
      return lines[Number(cy)] ?? '';
    },
  };
  const t0 = Date.now();
  while ((await a.cursorLine()) !== '>') {
    if (Date.now() - t0 > 15000) throw new Error(`no prompt from the agent: ${await a.screen()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return a;
}
