// two_hosts_doc.test.mjs — docs/two-hosts.md works as written.
//
// Every ```sh block of the walkthrough is taken from the doc, in order, and
// run verbatim in one bash (set -euo pipefail) from the top of the checkout,
// so the doc cannot drift from what works. The only inputs the test gives
// are the two variables the doc itself defaults: TRY_BROKER (a private
// broker on loopback, started here) and TRY_DIR (a temp dir). The doc's own
// commands build with scripts/setup.sh, start two fleetds, pin them to each
// other, send a message from host A to bob on host B and stop both.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, canConnect } from './harness.mjs';
import { useBroker } from './broker-harness.mjs';

const brokerRef = useBroker();
const DOC = path.join(REPO, 'docs', 'two-hosts.md');

/** The doc's ```sh blocks, in order. */
function shellBlocks(text) {
  return [...text.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]);
}

function runBash(script, env, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: REPO,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out });
    });
  });
}

/** Stops a fleetd the script left behind (it failed before its last step). */
async function stopLeftover(sock) {
  if (!existsSync(sock) || !(await canConnect(sock))) return;
  const r = await runBash(`build/fleetctl --socket '${sock}' status --json`, {}, 10000);
  const m = /"pid":\s*(\d+)/.exec(r.out);
  if (m) process.kill(Number(m[1]), 'SIGTERM');
}

test('docs/two-hosts.md: its commands, run verbatim, get a message across', { timeout: 600000 }, async () => {
  const blocks = shellBlocks(readFileSync(DOC, 'utf8'));
  assert.ok(blocks.length >= 6, `the walkthrough has its sh blocks (found ${blocks.length})`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fleet-two-hosts-'));
  try {
    const r = await runBash(blocks.join('\n'), { TRY_BROKER: brokerRef.broker.uri, TRY_DIR: dir }, 480000);
    const where = `\n--- output ---\n${r.out.slice(-6000)}`;
    assert.equal(r.code, 0, `the walkthrough ran to its end (exit ${r.code}, signal ${r.signal})${where}`);
    assert.match(r.out, /mode:\s+broker/, `host A runs with the broker${where}`);
    assert.match(r.out, /pinned: true[\s\S]*pinned: true/, `both pins were taken${where}`);
    assert.match(r.out, /bob\s+\S+\s+hostb/, `host A's roster lists bob on hostb${where}`);
    assert.match(r.out, /from alice .*hello from host A/, `bob on host B got alice's message${where}`);
    // Both gateways were stopped by the doc's own last step.
    assert.equal(await canConnect(path.join(dir, 'a.sock')), false, 'host A is stopped');
    assert.equal(await canConnect(path.join(dir, 'b.sock')), false, 'host B is stopped');
  } finally {
    await stopLeftover(path.join(dir, 'a.sock'));
    await stopLeftover(path.join(dir, 'b.sock'));
    rmSync(dir, { recursive: true, force: true });
  }
});
