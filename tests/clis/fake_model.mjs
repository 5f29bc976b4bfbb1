// fake_model.mjs — a model API on loopback for the real agent CLIs.
//
// The CLIs under test (Claude Code, opencode, Codex) need a model; none is
// reachable here, so each is pointed at this server. It answers from a
// script and logs every request, so a test can read exactly what reached
// the agent: each user turn it typed in, each tool result it got.
//
// One server speaks every protocol; each protocol is one module in this
// folder (a row of PROTOCOLS) that knows its own paths, how to read a
// request into the common shape below, and how to stream a scripted turn:
//
//   request (what the log holds and the script is given):
//     { api, model, userTexts: [string], lastUser: string|null,
//       toolResults: [{ name, text }], tools: [name], body, at }
//   turn (what the script returns):
//     { text?: string, toolCalls?: [{ name, input }], delayMs?: number }
//
// `lastUser` is the newest user turn's text when the request's last
// message is a user turn (not a tool result): a new prompt the agent got.

import http from 'node:http';

import * as anthropic from './model_anthropic.mjs';
import * as chat from './model_chat.mjs';
import * as responses from './model_responses.mjs';

const PROTOCOLS = [anthropic, chat, responses];

/**
 * Starts the server on 127.0.0.1 (an ephemeral port). script(request)
 * returns the turn to answer with (a default: a short "ok" text turn).
 * Resolves to { url, port, requests, close() }; requests grows as they come.
 */
export async function startFakeModel({ script = () => ({ text: 'ok' }) } = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const proto = PROTOCOLS.find((p) => p.matches(req.method, req.url));
      if (!proto) {
        // Side requests a CLI makes (counting tokens, listing models, telemetry
        // not switched off): an empty success, logged apart.
        requests.push({ api: 'other', method: req.method, path: req.url, at: Date.now() });
        res.writeHead(req.method === 'GET' ? 200 : 404, { 'content-type': 'application/json' });
        res.end(req.method === 'GET' ? '{"data":[],"models":[]}' : '{}');
        return;
      }
      let body = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        res.writeHead(400).end();
        return;
      }
      const request = { ...proto.read(body, req.url), api: proto.NAME, path: req.url, body, at: Date.now() };
      requests.push(request);
      let turn;
      try {
        turn = (await script(request)) || { text: 'ok' };
      } catch (e) {
        turn = { text: `script error: ${e.message}` };
      }
      if (turn.delayMs) await new Promise((r) => setTimeout(r, turn.delayMs));
      proto.answer(req, res, body, turn);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    /** The requests of api whose lastUser is set: the prompts the agent got. */
    prompts(api) {
      return requests.filter((r) => (!api || r.api === api) && r.lastUser != null).map((r) => r.lastUser);
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
