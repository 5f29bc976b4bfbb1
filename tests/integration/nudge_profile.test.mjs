// nudge_profile.test.mjs — a spawned worker is nudged by its own profile's
// prompt, through the same checked typing path as a brief.
//
// nudge.prompt is set to a pattern no pane shows, so only the profile's
// prompt ("^> ?$", prompt_agent.mjs's idle line) can let a nudge through:
// a broadcast held for the spawned worker must still get its nudge line
// typed and submitted, once per nudge, as one whole input.

import assert from 'node:assert/strict';
import path from 'node:path';
import { BIN_DIR, callTool, fleetTest, nudgeConfig, waitFor } from './harness.mjs';
import { promptAgentProfile, spawnedInputs, startTmux, stopTmux } from './tmux-harness.mjs';

fleetTest('a spawned worker is nudged by its profile prompt, not nudge.prompt, with whole submitted lines', async (f) => {
  const sock = path.join(f.dir, 'tmux.sock');
  try {
    const pane = await startTmux(f, sock, 'exec cat');
    const base = nudgeConfig(true);
    const text = base.nudge.text;
    await f.startFleetd({
      config: {
        nudge: { ...base.nudge, prompt: '^NO PANE LOOKS LIKE THIS$', backoffMs: 5000, maxBackoffMs: 5000 },
        profiles: { agent: promptAgentProfile(f.dir, BIN_DIR, { groups: ['crew'] }) },
      },
    });
    const boss = await f.mcpClient('boss', { role: 'lead', env: { TMUX_PANE: pane, TMUX: `${sock},0,0` } });
    const res = await callTool(boss, 'fleet_spawn', { profile: 'agent' });
    assert.equal(res.status, 'ready', JSON.stringify(res));

    const b = await callTool(boss, 'fleet_broadcast', { group: 'crew', content: 'all hands' });
    assert.equal(b.recipients ?? 1, 1, JSON.stringify(b));
    await waitFor(() => spawnedInputs(f.dir).includes(text), { what: 'the nudge line submitted in the worker' });
    const inputs = spawnedInputs(f.dir);
    assert.deepEqual(inputs.filter((l) => l !== text), [], `only whole nudge lines were submitted: ${JSON.stringify(inputs)}`);
  } finally {
    await stopTmux(f, sock);
  }
});
