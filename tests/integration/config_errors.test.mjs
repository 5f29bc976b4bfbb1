// config_errors.test.mjs — fleetd refusing a bad configuration before it
// touches the disk: a host id that breaks the name rule (from --host-id,
// FLEET_HOST_ID or the config file) exits 2 with a message naming where the
// value came from, and leaves no state dir and no node-identity.json behind;
// a --config file that does not exist is named plainly, without jansson's
// ":-1" line number.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fleetTest, bin } from './harness.mjs';

const RULE = "is not a valid host id: use 1-63 letters, digits, '-' or '_'";

/** Asserts fleetd left nothing in the test dir but what the test put there. */
function assertNothingCreated(f, keep = []) {
  assert.ok(!existsSync(f.stateDir), `the state dir ${f.stateDir} was not created`);
  assert.ok(!existsSync(path.join(f.stateDir, 'node-identity.json')), 'no node-identity.json');
  assert.deepEqual(readdirSync(f.dir).filter((n) => !keep.includes(n)), [], `nothing new in ${f.dir}`);
}

fleetTest('a bad --host-id exits 2, names --host-id, creates nothing', async (f) => {
  const r = await f.run(bin('fleetd'), ['--host-id', 'ci.box', '--state-dir', f.stateDir, '--socket', f.socket]);
  assert.equal(r.code, 2, `exit status: ${r.stdout}${r.stderr}`);
  assert.equal(r.stderr, `fleetd: --host-id 'ci.box' ${RULE} (it becomes part of broker routing keys)\n`);
  assertNothingCreated(f);
});

fleetTest('a bad FLEET_HOST_ID exits 2, names FLEET_HOST_ID, creates nothing', async (f) => {
  const env = { FLEET_HOST_ID: 'ci.box', FLEET_STATE_DIR: f.stateDir, FLEET_SOCKET: f.socket };
  const r = await f.run(bin('fleetd'), [], { env });
  assert.equal(r.code, 2, `exit status: ${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /^fleetd: FLEET_HOST_ID 'ci\.box' is not a valid host id: /);
  assertNothingCreated(f);
});

fleetTest('a bad hostId in the config file exits 2 and names the file', async (f) => {
  const cfg = path.join(f.dir, 'config.json');
  writeFileSync(cfg, JSON.stringify({ hostId: 'box@home' }));
  const r = await f.run(bin('fleetd'), ['--config', cfg, '--state-dir', f.stateDir, '--socket', f.socket]);
  assert.equal(r.code, 2, `exit status: ${r.stdout}${r.stderr}`);
  assert.ok(r.stderr.startsWith(`fleetd: ${cfg}: "hostId" 'box@home' ${RULE}`), r.stderr);
  assertNothingCreated(f, ['config.json']);
});

fleetTest('a missing --config file is named without ":-1"', async (f) => {
  const cfg = path.join(f.dir, 'nope.json');
  const r = await f.run(bin('fleetd'), ['--config', cfg, '--state-dir', f.stateDir, '--socket', f.socket]);
  assert.equal(r.code, 1, `exit status: ${r.stdout}${r.stderr}`);
  assert.equal(
    r.stderr,
    `fleetd: cannot read config file ${cfg}: No such file or directory (check the path given to --config)\n`
  );
  assert.ok(!r.stderr.includes(':-1'), r.stderr);
  assertNothingCreated(f);
});
