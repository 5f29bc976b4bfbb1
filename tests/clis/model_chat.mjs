// model_chat.mjs — OpenAI Chat Completions, as opencode uses it through a
// custom OpenAI-compatible provider, for fake_model.mjs.
//
// opencode (provider `npm: "@ai-sdk/openai-compatible"`, options.baseURL
// http://127.0.0.1:PORT/v1) posts to /v1/chat/completions with stream true
// and reads server-sent events: `data: {chunk}` lines whose
// choices[0].delta carries the role, then `content` pieces, or
// `tool_calls` pieces (the first piece of a call has its index, id, type
// and function.name, later ones only more of function.arguments), then a
// chunk with finish_reason ("stop" or "tool_calls") and usage, then
// `data: [DONE]`. A request with stream false gets one chat.completion
// object. (GET /v1/models is not this module's: fake_model.mjs answers
// every unknown GET with an empty list, and opencode does not ask.)
//
// A request's messages are role system / user / assistant (with
// tool_calls) / tool (tool_call_id, content). read() names each tool result
// by the assistant tool call it answers. opencode also asks the same
// endpoint for a session title (a request with no tools offered whose
// system prompt asks for a title): read() marks it `side: true`, so a
// script can answer it apart and a test can leave it out of what it counts.

import { randomUUID } from 'node:crypto';

export const NAME = 'chat';

let callSeq = 0;

export function matches(method, url) {
  const p = url.split('?')[0];
  if (method === 'POST') return /\/chat\/completions$/.test(p);
  return false;
}

/** The text of a message's content: a string, or the text parts of a list. */
function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => p && (p.type === 'text' || p.type === 'input_text') && typeof p.text === 'string')
    .map((p) => p.text)
    .join('\n');
}

export function read(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const toolNames = new Map(); // tool call id -> function name
  const userTexts = [];
  const toolResults = [];
  const system = messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) => textOf(m.content))
    .join('\n');
  for (const m of messages) {
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls) toolNames.set(c.id, c.function && c.function.name);
    }
    if (m.role === 'tool') {
      toolResults.push({ name: toolNames.get(m.tool_call_id) || m.name || null, text: textOf(m.content) });
    }
    if (m.role === 'user') userTexts.push(textOf(m.content));
  }
  const convo = messages.filter((m) => m.role === 'user' || m.role === 'assistant' || m.role === 'tool');
  const last = convo[convo.length - 1];
  let lastUser = last && last.role === 'user' ? textOf(last.content) : null;
  const tools = Array.isArray(body.tools)
    ? body.tools.map((t) => t && ((t.function && t.function.name) || t.name)).filter(Boolean)
    : [];
  // opencode's own bookkeeping (the session title) offers no tools.
  const side = tools.length === 0;
  if (side) lastUser = null;
  return { model: body.model ?? null, userTexts, lastUser, toolResults, tools, side, system, stream: body.stream === true };
}

/** The assistant message of a scripted turn, tool calls with fresh ids. */
function messageOf(turn) {
  const calls = (turn.toolCalls || []).map((c) => ({
    id: `call_${++callSeq}_${randomUUID().slice(0, 8)}`,
    type: 'function',
    function: { name: c.name, arguments: JSON.stringify(c.input || {}) },
  }));
  let text = turn.text != null ? String(turn.text) : '';
  if (text === '' && calls.length === 0) text = 'ok';
  return { text, calls };
}

function usage() {
  return { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
}

/** Splits s into two pieces (the second may be empty), so a client that joins them is exercised. */
function halves(s) {
  const mid = Math.ceil(s.length / 2);
  return [s.slice(0, mid), s.slice(mid)].filter((p, i) => i === 0 || p !== '');
}

export function answer(req, res, body, turn) {
  const { text, calls } = messageOf(turn);
  const finish = calls.length ? 'tool_calls' : 'stop';
  const id = `chatcmpl-${randomUUID().replace(/-/g, '')}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model || 'fake-model';
  if (body.stream !== true) {
    const message = { role: 'assistant', content: text || null };
    if (calls.length) message.tool_calls = calls;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, finish_reason: finish }],
        usage: usage(),
      })
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (delta, finishReason = null, extra = {}) =>
    res.write(
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
        ...extra,
      })}\n\n`
    );
  chunk({ role: 'assistant', content: '' });
  if (text) for (const part of halves(text)) chunk({ content: part });
  calls.forEach((c, index) => {
    chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] });
    for (const part of halves(c.function.arguments)) chunk({ tool_calls: [{ index, function: { arguments: part } }] });
  });
  chunk({}, finish, { usage: usage() });
  res.write('data: [DONE]\n\n');
  res.end();
}

