// cli_harness.mjs — what the tests with the real agent CLIs share.
//
// Each test (cliTest) gets the integration harness's world (a temp dir, a
// real fleetd on its own socket, clean-up of everything started; see
// tests/integration/harness.mjs) plus, on request:
//
//   cliPath(name)           the pinned CLI in tests/clis/node_modules/.bin
//                           ('claude', 'opencode', 'codex'). Throws, never
//                           skips, when it is not installed: run npm install here.
//   startModel(f, script)   the fake model API on loopback (fake_model.mjs),
//                           closed when the test ends.
//   new TmuxServer(f)       a private tmux server (-S <dir>/<label>.sock):
//                           start(command) a pane, capture(pane),
//                           cursorLine(pane), waitScreen(pane, test),
//                           tmuxEnv() (the TMUX value fleetctl passes on so
//                           fleetd opens spawned windows there). Killed when
//                           the test ends, before fleetd stops.
//   fleetctlJson(f, args)   runs `fleetctl --json ARGS` against the test's
//                           fleetd, asserts exit 0, returns the JSON.
//   profileFor(f, agent)    runs `fleetctl profile AGENT --json --dir D
//                           --cwd C`, writes every file it prints, returns
//                           { profile, files, notes, dir, cwd }.
//   onCleanup(f, fn)        fn runs when the test ends (before fleetd stops).
//   quietEnv                variables that keep every CLI from reaching
//                           anything but loopback (telemetry, updates).
//   claudeEnv(f, model, extra)  Claude Code's environment against the fake
//                           model (HOME in the test's dir, the test API key
//                           CLAUDE_API_KEY, the pinned CLI first on PATH).
//   claudeProfile(f, model) that environment plus the profile (and its hooks
//                           settings) `fleetctl profile claude` writes.
//   claudeWorker(f, model, opts)  a Claude Code worker's set-up: the
//                           profile, a private tmux server, fleetd with the
//                           profile, a lead; spawn(name) starts the worker
//                           (by the lead's fleet_spawn, or by fleetctl).
//   runTraced(f, cmd, args, opts)  runs a program (f.run) under
//                           `strace -e trace=connect` when strace is
//                           installed; resolves f.run's result plus
//                           outside: the connect() calls to anything but
//                           loopback or a Unix socket (null without strace).
//
// Re-exported from the integration harness: fleetTest, waitFor, sleep,
// BIN_DIR, bin, callTool, resultText.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN_DIR, bin, callTool, fleetctlJson, fleetTest, resultText, sleep, waitFor } from '../integration/harness.mjs';
import { startFakeModel } from './fake_model.mjs';

export { BIN_DIR, bin, callTool, fleetctlJson, fleetTest, resultText, sleep, waitFor };

export const CLIS_DIR = path.dirname(fileURLToPath(import.meta.url));

/** The absolute path of a pinned CLI; throws (the test fails) when it is not installed. */
export function cliPath(name) {
  const p = path.join(CLIS_DIR, 'node_modules', '.bin', name);
  if (!existsSync(p)) {
    throw new Error(
      `${name} is not installed for the tests: run \`npm install\` in tests/clis (${p} is missing); ` +
        'scripts/test.sh does it when the lock file changes'
    );
  }
  return p;
}

/** Switches every CLI honours so nothing leaves the machine but loopback calls. */
export const quietEnv = {
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_BUG_COMMAND: '1',
  OPENCODE_DISABLE_AUTOUPDATE: 'true',
  OPENCODE_DISABLE_SHARE: 'true',
  OPENCODE_DISABLE_MODELS_FETCH: 'true',
  OPENCODE_DISABLE_LSP_DOWNLOAD: 'true',
  NO_UPDATE_NOTIFIER: '1',
  CODEX_DISABLE_UPDATE_CHECK: '1',
};

/** Runs fn (may be async) when the test ends, before the harness stops fleetd. */
export function onCleanup(f, fn) {
  if (!f._cliCleanups) {
    f._cliCleanups = [];
    const orig = f.cleanup.bind(f);
    f.cleanup = async () => {
      for (const g of f._cliCleanups.splice(0).reverse()) {
        try {
          await g();
        } catch (e) {
          f.notes.push(`clean-up step failed: ${e.message}`);
        }
      }
      await orig();
    };
  }
  f._cliCleanups.push(fn);
}

/**
 * The fake model on loopback, answering with script(request) (see
 * fake_model.mjs); closed when the test ends. On failure the test's
 * diagnostics list what it received.
 */
export async function startModel(f, script) {
  const m = await startFakeModel({ script });
  onCleanup(f, async () => {
    f.notes.push(`model requests (${m.requests.length}):\n${describeRequests(m.requests)}`);
    await m.close();
  });
  return m;
}

/** One line per model request, for diagnostics. */
export function describeRequests(requests) {
  return requests
    .map((r, i) => {
      const bits = [`#${i} ${r.api} ${r.path}`];
      if (r.side) bits.push('side');
      if (r.lastUser != null) bits.push(`user=${JSON.stringify(r.lastUser.slice(0, 160))}`);
      if (r.toolResults && r.toolResults.length) {
        const t = r.toolResults[r.toolResults.length - 1];
        bits.push(`lastResult=${t.name}:${JSON.stringify((t.text || '').slice(0, 160))}`);
      }
      return bits.join(' ');
    })
    .join('\n');
}

/** A private tmux server on <f.dir>/<label>.sock. */
export class TmuxServer {
  constructor(f, label = 'tmux') {
    this.f = f;
    this.sock = path.join(f.dir, `${label}.sock`);
    this.started = false;
    onCleanup(f, () => this.kill());
  }

  /** Runs tmux ARGS on this server; asserts it succeeded; returns stdout. */
  async run(...args) {
    const r = await this.f.run('tmux', ['-S', this.sock, ...args], { timeout: 20000 });
    assert.equal(r.code, 0, `tmux ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }

  /**
   * Starts the server with one session running command (a shell command
   * line; default an idle `cat`), cols x rows; returns its pane id. opts.env:
   * variables for the server and so for every window it opens.
   */
  async start(command = 'exec cat', { cols = 160, rows = 50, env = {} } = {}) {
    const r = await this.f.run(
      'tmux',
      ['-S', this.sock, '-f', '/dev/null', 'new-session', '-d', '-s', 't', '-x', String(cols), '-y', String(rows), command],
      { timeout: 20000, env }
    );
    assert.equal(r.code, 0, `tmux new-session: ${r.stderr}`);
    this.started = true;
    const pane = (await this.run('display', '-p', '-t', 't', '#{pane_id}')).trim();
    assert.match(pane, /^%\d+$/);
    return pane;
  }

  /** The TMUX value for a client of this server (fleetctl passes the socket on to fleetd). */
  tmuxEnv() {
    return `${this.sock},0,0`;
  }

  async panes() {
    const out = await this.run('list-panes', '-a', '-F', '#{pane_id}');
    return out.split('\n').filter(Boolean);
  }

  /** The visible screen of pane, lines joined by '\n'. */
  capture(pane) {
    return this.run('capture-pane', '-p', '-t', pane);
  }

  /** The line the cursor is on. */
  async cursorLine(pane) {
    const out = await this.run('display', '-p', '-t', pane, '#{cursor_y}', ';', 'capture-pane', '-p', '-t', pane);
    const [cy, ...lines] = out.split('\n');
    return lines[Number(cy)] ?? '';
  }

  /**
   * Waits until test(screen) is truthy (test: a RegExp or a function of the
   * screen text); returns the screen. The error shows the last screen.
   */
  async waitScreen(pane, test, { timeout = 30000, what = 'the screen' } = {}) {
    const ok = typeof test === 'function' ? test : (s) => test.test(s);
    let last = '';
    try {
      return await waitFor(
        async () => {
          last = await this.capture(pane).catch((e) => `(capture failed: ${e.message})`);
          return ok(last) ? last : null;
        },
        { timeout, interval: 200, what }
      );
    } catch (e) {
      e.message += `\n--- last screen of ${pane}:\n${last}`;
      throw e;
    }
  }

  async kill() {
    if (!this.started) return;
    this.started = false;
    await this.f.run('tmux', ['-S', this.sock, 'kill-server'], { timeout: 20000 }).catch(() => {});
  }
}

/**
 * Runs `fleetctl profile AGENT --json --dir DIR --cwd CWD` (DIR default
 * <f.dir>/profile-AGENT, CWD default <f.dir>/work, both made here), writes
 * every file it prints exactly as printed, and returns its output plus
 * { dir, cwd }. opts.env: fleetctl's environment (e.g. the API key whose
 * approval the profile records).
 */
export async function profileFor(f, agent, { dir, cwd, env = {} } = {}) {
  dir = dir || path.join(f.dir, `profile-${agent}`);
  cwd = cwd || path.join(f.dir, 'work');
  mkdirSync(cwd, { recursive: true });
  const out = await fleetctlJson(f, ['profile', agent, '--dir', dir, '--cwd', cwd], { noSocket: true, env });
  assert.ok(out.profile && Array.isArray(out.files) && Array.isArray(out.notes), `profile output: ${JSON.stringify(out)}`);
  for (const file of out.files) {
    assert.ok(path.isAbsolute(file.path), `profile file path is absolute: ${file.path}`);
    mkdirSync(path.dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.content);
  }
  return { ...out, dir, cwd };
}

/**
 * fleetd's config with one spawn profile `name` (extra config keys merged
 * in at the top level).
 */
export function configWithProfile(name, profile, extra = {}) {
  return { ...extra, profiles: { ...(extra.profiles || {}), [name]: profile } };
}

/** The API key the Claude Code tests give the CLI (the profile records its approval). */
export const CLAUDE_API_KEY = 'sk-ant-fleet-test-0123456789abcdefghij';

/**
 * Claude Code's environment against model: nothing but loopback, a private
 * HOME in f.dir (made here), the pinned CLI first on PATH; extra merged in.
 */
export function claudeEnv(f, model, extra = {}) {
  const home = path.join(f.dir, 'home');
  mkdirSync(home, { recursive: true });
  return {
    ...quietEnv,
    HOME: home,
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: CLAUDE_API_KEY,
    PATH: `${path.dirname(cliPath('claude'))}:${process.env.PATH}`,
    ...extra,
  };
}

/**
 * claudeEnv(f, model) and the profile `fleetctl profile claude` writes for
 * it (profileFor: the hooks settings included): { env, prof }.
 */
export async function claudeProfile(f, model) {
  const env = claudeEnv(f, model);
  const prof = await profileFor(f, 'claude', { env: { PATH: env.PATH, ANTHROPIC_API_KEY: CLAUDE_API_KEY } });
  return { env, prof };
}

/**
 * A Claude Code worker's set-up with its hooks: claudeProfile, a private
 * tmux server (its first pane an idle cat, in that environment), fleetd
 * with the profile `claude` (opts.config: other config keys), and a lead.
 * opts.spawnBy: 'lead' (the lead spawns through fleet_spawn, so it is the
 * worker's spawner; the lead runs in that first pane) or 'fleetctl'
 * (`fleetctl spawn`). Returns { env, prof, tm, lead, ctl, activity, spawn,
 * pane }: ctl(args) runs fleetctl --json with the tmux server's TMUX;
 * activity(name) is the entity's activity in the lead's fleet_list;
 * spawn(name) spawns the worker, asserts it is ready, sets pane to its
 * pane and resolves with the spawn's result. The worker's screen goes to the
 * diagnostics when the test ends.
 */
export async function claudeWorker(f, model, { config = {}, spawnBy = 'lead' } = {}) {
  const { env, prof } = await claudeProfile(f, model);
  const tm = new TmuxServer(f);
  const leadPane = await tm.start('exec cat', { env });
  await f.startFleetd({ config: configWithProfile('claude', prof.profile, config) });
  const lead = await f.mcpClient('lead', {
    role: 'lead',
    ...(spawnBy === 'lead' ? { env: { TMUX: tm.tmuxEnv(), TMUX_PANE: leadPane } } : {}),
  });
  const ctl = (args) => fleetctlJson(f, args, { env: { TMUX: tm.tmuxEnv() }, timeout: 90000 });
  const w = {
    env,
    prof,
    tm,
    lead,
    ctl,
    pane: null,
    activity: async (name = 'w1') => (await callTool(lead, 'fleet_list', {})).entities.find((e) => e.name === name)?.activity,
    spawn: async (name) => {
      const before = await tm.panes();
      const sp =
        spawnBy === 'lead'
          ? await callTool(lead, 'fleet_spawn', { profile: 'claude', name, wait_s: 55 }, { timeout: 90000 })
          : await ctl(['spawn', 'claude', '--name', name, '--wait', '55']);
      assert.equal(sp.status, 'ready', JSON.stringify(sp));
      w.pane = (await tm.panes()).find((p) => !before.includes(p));
      return sp;
    },
  };
  onCleanup(f, async () => {
    if (w.pane) f.notes.push(`worker screen:\n${await tm.capture(w.pane).catch((e) => e.message)}`);
  });
  return w;
}

/** Counts how many entries of list equal (or satisfy) x. */
export function count(list, x) {
  return list.filter((v) => (typeof x === 'function' ? x(v) : v === x)).length;
}

/** A promise with its resolve exposed (a gate a script can wait on). */
export function gate() {
  let open;
  const p = new Promise((r) => (open = r));
  return { promise: p, open };
}

let straceOk = null;
/** Whether strace can run here (checked once). */
function haveStrace() {
  if (straceOk === null) {
    try {
      execFileSync('strace', ['-V'], { stdio: 'ignore' });
      straceOk = true;
    } catch {
      straceOk = false;
    }
  }
  return straceOk;
}

/**
 * f.run(cmd, args, opts) under `strace -f -e trace=connect` when strace is
 * installed. The result's `outside` lists the connect() calls to anything
 * but 127.0.0.1, ::1 or a Unix socket; null when strace is missing (a note
 * in the test's diagnostics says the check was not made).
 */
export async function runTraced(f, cmd, args, opts = {}) {
  if (!haveStrace()) {
    f.notes.push('strace is not installed: the loopback-only check was not made');
    return { ...(await f.run(cmd, args, opts)), outside: null };
  }
  const log = path.join(f.dir, `strace-${path.basename(cmd)}-${Date.now()}.log`);
  const r = await f.run('strace', ['-f', '-qq', '-e', 'trace=connect', '-o', log, '--', cmd, ...args], opts);
  const outside = readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => /connect\(/.test(l) && !/AF_UNIX|AF_NETLINK/.test(l))
    .filter((l) => !/inet_addr\("127\.0\.0\.1"\)|inet_pton\(AF_INET6, "::1"/.test(l));
  return { ...r, outside };
}
