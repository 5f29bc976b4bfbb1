// hook_stub.mjs — fleetd's side of fleet/hook, scripted: what the tests of
// fleet-hook use in place of a fleetd (tests/integration/hooks.test.mjs, and
// tests/clis/claude_hooks.test.mjs with the real Claude Code).

import net from 'node:net';
import path from 'node:path';

/**
 * A stub of fleetd's socket in dir: answers initialize, and fleet/hook with
 * script(params, n) (a result object, {error}, or {close: true} to drop
 * the connection unanswered; may be a promise). Records every fleet/hook.
 */
export async function stubFleetd(dir, script) {
  const sock = path.join(dir, `stub-${Math.random().toString(16).slice(2)}.sock`);
  const calls = [];
  const conns = new Set();
  const server = net.createServer((c) => {
    conns.add(c);
    c.on('close', () => conns.delete(c));
    c.on('error', () => {}); // a hook that went away: nothing to answer
    let buf = '';
    c.setEncoding('utf8');
    c.on('data', async (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const msg = JSON.parse(line);
        if (msg.id == null) continue;
        if (msg.method === 'initialize') {
          c.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: {} } })}\n`);
        } else if (msg.method === 'fleet/hook') {
          calls.push(msg.params);
          const r = await script(msg.params, calls.length);
          if (r.close) {
            c.destroy();
            return;
          }
          if (c.destroyed) return;
          const body = r.error ? { error: r.error } : { result: r };
          c.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...body })}\n`);
        } else {
          c.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no such method' } })}\n`);
        }
      }
    });
  });
  await new Promise((r) => server.listen(sock, r));
  return {
    sock,
    calls,
    close: () =>
      new Promise((r) => {
        for (const c of conns) c.destroy();
        server.close(() => r());
      }),
  };
}

