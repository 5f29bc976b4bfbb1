// model_anthropic.mjs — the Anthropic Messages API, as Claude Code uses it,
// for fake_model.mjs.
//
// Claude Code (ANTHROPIC_BASE_URL=http://127.0.0.1:PORT) posts to
// /v1/messages (with ?beta=true) and streams the answer as server-sent
// events: message_start, then per content block content_block_start /
// content_block_delta (text_delta, or input_json_delta for a tool_use) /
// content_block_stop, then message_delta (stop_reason) and message_stop.
// A request with stream false gets the same message as one JSON object.
// /v1/messages/count_tokens gets a rough count.
//
// Besides the turns of the conversation, Claude Code can make side calls on
// the same endpoint (a title for the session, a check that the key works,
// a token count). read() marks them `side: true` (no tools offered,
// or a token count), so a script can answer them apart and a test can leave
// them out of what it counts. With CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1,
// Claude Code 2.1.332 made none in these tests: one request per model turn.
//
// The text of a user turn leaves out the <system-reminder> blocks Claude
// Code adds to it (context it injects, not something the user typed).

import { randomUUID } from 'node:crypto';

export const NAME = 'anthropic';

export function matches(method, url) {
  if (method !== 'POST') return false;
  const p = url.split('?')[0];
  return p === '/v1/messages' || p === '/v1/messages/count_tokens';
}

const REMINDER_RE = /^\s*<system-reminder>[\s\S]*<\/system-reminder>\s*$/;

function blocks(content) {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content : [];
}

function textOf(content) {
  return blocks(content)
    .filter((b) => b && b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text)
    .join('\n');
}

/** The typed text of a user message: its text blocks minus system reminders. */
function userText(msg) {
  return blocks(msg.content)
    .filter((b) => b && b.type === 'text' && typeof b.text === 'string' && !REMINDER_RE.test(b.text))
    .map((b) => b.text)
    .join('\n');
}

function systemText(system) {
  if (typeof system === 'string') return system;
  return Array.isArray(system) ? system.map((b) => (b && b.text) || '').join('\n') : '';
}

export function read(body, url = '') {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const toolNames = new Map(); // tool_use id -> name
  const userTexts = [];
  const toolResults = [];
  for (const m of messages) {
    for (const b of blocks(m.content)) {
      if (m.role === 'assistant' && b.type === 'tool_use') toolNames.set(b.id, b.name);
      if (m.role === 'user' && b.type === 'tool_result') {
        const text = typeof b.content === 'string' ? b.content : textOf(b.content);
        toolResults.push({ name: toolNames.get(b.tool_use_id) || null, text, isError: !!b.is_error });
      }
    }
    if (m.role === 'user') {
      const hasResult = blocks(m.content).some((b) => b.type === 'tool_result');
      const t = userText(m);
      if (!hasResult && t !== '') userTexts.push(t);
    }
  }
  // Claude Code puts a role "system" message (its environment) after the
  // prompt; the turn is decided by the last user or assistant message.
  const convo = messages.filter((m) => m.role === 'user' || m.role === 'assistant');
  const last = convo[convo.length - 1];
  let lastUser = null;
  if (last && last.role === 'user' && !blocks(last.content).some((b) => b.type === 'tool_result')) {
    lastUser = userText(last);
  }
  const tools = Array.isArray(body.tools) ? body.tools.map((t) => t && t.name).filter(Boolean) : [];
  const system = systemText(body.system);
  // A side call: Claude Code's own bookkeeping, not a turn of the
  // conversation. Those offer no tools; a token count is never a turn.
  const side = tools.length === 0 || url.split('?')[0].endsWith('/count_tokens');
  if (side) lastUser = null;
  return {
    model: body.model ?? null,
    userTexts,
    lastUser,
    toolResults,
    tools,
    side,
    system,
    stream: body.stream === true,
  };
}

function usage() {
  return { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

/** The content blocks of a scripted turn. */
function contentOf(turn) {
  const content = [];
  if (turn.text != null && turn.text !== '') content.push({ type: 'text', text: String(turn.text) });
  for (const c of turn.toolCalls || []) {
    content.push({ type: 'tool_use', id: `toolu_${randomUUID().replace(/-/g, '')}`, name: c.name, input: c.input || {} });
  }
  if (content.length === 0) content.push({ type: 'text', text: 'ok' });
  return content;
}

export function answer(req, res, body, turn) {
  if (req.url.split('?')[0] === '/v1/messages/count_tokens') {
    const n = Math.max(1, Math.ceil(JSON.stringify(body.messages || []).length / 4));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ input_tokens: n }));
    return;
  }
  const content = contentOf(turn);
  const stopReason = content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
  const message = {
    id: `msg_${randomUUID().replace(/-/g, '')}`,
    type: 'message',
    role: 'assistant',
    model: body.model || 'claude-fake',
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: usage(),
  };
  const headers = { 'request-id': `req_${randomUUID().replace(/-/g, '')}` };
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(message));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...usage(), output_tokens: 1 } } });
  content.forEach((b, index) => {
    if (b.type === 'text') {
      ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
      // Two deltas, so a client that joins them is exercised.
      const mid = Math.ceil(b.text.length / 2);
      for (const part of [b.text.slice(0, mid), b.text.slice(mid)]) {
        if (part) ev('content_block_delta', { index, delta: { type: 'text_delta', text: part } });
      }
    } else {
      ev('content_block_start', { index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      const json = JSON.stringify(b.input);
      const mid = Math.ceil(json.length / 2);
      for (const part of [json.slice(0, mid), json.slice(mid)]) {
        ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
      }
    }
    ev('content_block_stop', { index });
  });
  ev('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } });
  ev('message_stop', {});
  res.end();
}
