// systemd_unit.test.mjs — the systemd user unit: clients/fleetd.service as
// shipped, and what `fleetctl systemd` prints, both pass
// `systemd-analyze verify` (which checks the unit's syntax and that its
// ExecStart names an executable); and fleetctl says how to enable it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, bin } from './harness.mjs';

const verify = (unit, env = process.env) =>
  spawnSync('systemd-analyze', ['verify', unit], { env, encoding: 'utf8' });

test('the systemd user unit verifies, as shipped and as fleetctl prints it', (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fleet-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));

  // As shipped: ExecStart=%h/.local/bin/fleetd. With no fleetd there the
  // check fails (so it does look), and with one installed it passes.
  const home = path.join(dir, 'home');
  const env = { ...process.env, HOME: home };
  const shipped = path.join(REPO, 'clients', 'fleetd.service');
  const missing = verify(shipped, env);
  assert.notEqual(missing.status, 0, 'verify fails while fleetd is not installed');
  assert.match(missing.stderr, /fleetd/, missing.stderr);
  mkdirSync(path.join(home, '.local', 'bin'), { recursive: true });
  copyFileSync(bin('fleetd'), path.join(home, '.local', 'bin', 'fleetd'));
  execFileSync('chmod', ['755', path.join(home, '.local', 'bin', 'fleetd')]);
  const ok = verify(shipped, env);
  assert.equal(ok.status, 0, `verify of the shipped unit: ${ok.stdout}${ok.stderr}`);

  // fleetctl systemd: the same unit, naming the fleetd beside fleetctl.
  const r = spawnSync(bin('fleetctl'), ['systemd'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^ExecStart=${bin('fleetd').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  const rest = (s) => s.split('\n').filter((l) => !l.startsWith('ExecStart='));
  assert.deepEqual(rest(r.stdout), rest(readFileSync(shipped, 'utf8')), 'the rest is the shipped unit');
  assert.match(r.stderr, /systemctl --user enable --now fleetd/);
  assert.match(r.stderr, /fleetctl systemd > ~\/\.config\/systemd\/user\/fleetd\.service/);
  const printed = path.join(dir, 'fleetd.service');
  writeFileSync(printed, r.stdout);
  const v = verify(printed);
  assert.equal(v.status, 0, `verify of fleetctl's unit: ${v.stdout}${v.stderr}`);
});
