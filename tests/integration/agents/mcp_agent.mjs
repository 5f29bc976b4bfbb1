// mcp_agent.mjs — a stand-in for a spawned agent, for the spawn test: it
// starts fleet-mcp (from FLEET_BIN_DIR) with the environment it was given
// (FLEET_GID, FLEET_NAME, FLEET_ROLE, FLEET_SOCKET, TMUX_PANE, ...) as an MCP
// client, initializes — which registers it with fleetd, the readiness gate
// of fleet_spawn — and then stays alive, polling now and then, until its
// terminal is closed or fleet-mcp goes away.
//
// usage: node mcp_agent.mjs

import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const binDir = process.env.FLEET_BIN_DIR;
if (!binDir) {
  process.stderr.write('mcp_agent: FLEET_BIN_DIR is not set\n');
  process.exit(2);
}

const transport = new StdioClientTransport({
  command: path.join(binDir, 'fleet-mcp'),
  args: [],
  env: { ...process.env },
  stderr: 'inherit',
});
const client = new Client({ name: 'mcp-agent', version: '0.0.0' }, { capabilities: {} });
transport.onclose = () => process.exit(0);
await client.connect(transport);
process.stdout.write(`mcp_agent: registered as ${process.env.FLEET_NAME}\n`);
setInterval(async () => {
  try {
    const r = await client.callTool({ name: 'fleet_poll', arguments: {} });
    const msgs = r.structuredContent?.messages || [];
    for (const m of msgs) process.stdout.write(`mcp_agent: got ${m.kind}: ${m.content}\n`);
  } catch {
    process.exit(0);
  }
}, 1000);
