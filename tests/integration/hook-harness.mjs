// hook-harness.mjs — fleet-hook run the way an agent's hook runs it: the
// hook's JSON on stdin, the worker's gid and fleetd's socket in the
// environment (what fleetd puts in a worker's window). Used by the tests of
// hooks, hook delivery and approvals.

import { spawn } from 'node:child_process';
import { bin } from './harness.mjs';

/**
 * Starts fleet-hook with input (an object) on stdin; gid and socket become
 * FLEET_GID and FLEET_SOCKET (socket may be left out), env adds to them.
 * shell: run it under an `sh -c` that stays, so its parent is the shell.
 * Returns { child, done }; done resolves { code, signal, stdout, stderr }.
 */
export function startHook({ gid, socket, input, args = [], env = {}, shell = false }) {
  const e = { PATH: process.env.PATH, FLEET_GID: gid, ...(socket ? { FLEET_SOCKET: socket } : {}), ...env };
  const child = shell
    ? spawn('/bin/sh', ['-c', `"${bin('fleet-hook')}" ${args.join(' ')}; echo done >/dev/null`], { env: e, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(bin('fleet-hook'), args, { env: e, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.on('error', () => {}); // checked by the result: fleet-hook reads all of it
  child.stdin.end(JSON.stringify(input));
  const done = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

/** startHook, waited for: resolves { code, stdout, stderr }, or rejects (killing it) after timeout ms. */
export function runHook(opts, timeout = 60000) {
  const { child, done } = startHook(opts);
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fleet-hook ${(opts.args ?? []).join(' ')} did not finish in ${timeout} ms`));
    }, timeout);
  });
  return Promise.race([done, late])
    .then(({ code, stdout, stderr }) => ({ code, stdout, stderr }))
    .finally(() => clearTimeout(timer));
}

/** Tracks whether a promise has settled: { done, value, p }. */
export function track(p) {
  const t = { done: false, value: undefined, p };
  p.then((v) => ((t.done = true), (t.value = v)), () => (t.done = true));
  return t;
}
