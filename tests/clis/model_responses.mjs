// model_responses.mjs — the OpenAI Responses API, as Codex uses it through
// a custom model provider (`wire_api = "responses"`), for fake_model.mjs.
//
// Codex (base_url http://127.0.0.1:PORT/v1) posts to /v1/responses with
// stream true and reads server-sent events, each `event: TYPE` plus a JSON
// `data` whose `type` repeats it: response.created, then per output item
// response.output_item.added, its pieces (response.output_text.delta for a
// message, response.function_call_arguments.delta for a function call),
// their .done events and response.output_item.done with the whole item,
// then response.completed with the response and its usage. A request with
// stream false gets the response object as one JSON document.
//
// A request's `input` is a list of items: messages (role user, developer
// or assistant; content parts input_text / output_text), function_call
// (name, arguments, call_id) and function_call_output (call_id, output).
// read() names each tool result by the call it answers. Codex adds context
// of its own as user messages (an <environment_context> block, the
// project's AGENTS.md): read() leaves those out of userTexts, so what is
// left is what was typed in.

import { randomUUID } from 'node:crypto';

export const NAME = 'responses';

export function matches(method, url) {
  return method === 'POST' && /\/responses$/.test(url.split('?')[0]);
}

// User messages that Codex writes itself, not the user: its environment,
// the instructions files it read, the turn's permission notes.
const CONTEXT_RE = /^\s*(<environment_context>|<user_instructions>|<permissions instructions>|# AGENTS\.md instructions|<INSTRUCTIONS>)/;

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => p && typeof p.text === 'string' && /^(input_text|output_text|text)$/.test(p.type))
    .map((p) => p.text)
    .join('\n');
}

/** A function_call_output's text: a string, a list of content parts, or { content }. */
function outputText(output) {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return textOf(output);
  if (output && typeof output === 'object') {
    if (typeof output.content === 'string') return output.content;
    if (Array.isArray(output.content)) return textOf(output.content);
  }
  return output == null ? '' : JSON.stringify(output);
}

const isUserMessage = (it) => it && (it.type === 'message' || it.type === undefined) && it.role === 'user';

export function read(body) {
  const input = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input || [];
  const callNames = new Map(); // call_id -> name
  const userTexts = [];
  const toolResults = [];
  for (const it of input) {
    if (!it || typeof it !== 'object') continue;
    if (it.type === 'function_call' || it.type === 'custom_tool_call') callNames.set(it.call_id, it.namespace ? `${it.namespace}__${it.name}` : it.name);
    if (it.type === 'function_call_output' || it.type === 'custom_tool_call_output') {
      toolResults.push({ name: callNames.get(it.call_id) || null, text: outputText(it.output) });
    }
    if (isUserMessage(it)) {
      const t = textOf(it.content);
      if (!CONTEXT_RE.test(t)) userTexts.push(t);
    }
  }
  // The turn is decided by the newest item that is not Codex's own context.
  const convo = input.filter(
    (it) => it && (it.type === 'function_call_output' || it.type === 'custom_tool_call_output' ||
      (it.type === 'message' || it.type === undefined) && (it.role === 'user' || it.role === 'assistant') &&
      !(it.role === 'user' && CONTEXT_RE.test(textOf(it.content))))
  );
  const last = convo[convo.length - 1];
  const lastUser = isUserMessage(last) ? textOf(last.content) : null;
  const tools = toolNames(body);
  return {
    model: body.model ?? null,
    userTexts,
    lastUser,
    toolResults,
    tools,
    side: false,
    system: typeof body.instructions === 'string' ? body.instructions : '',
    stream: body.stream === true,
  };
}

// Codex offers an MCP server's tools grouped: { type: "namespace", name:
// "mcp__fleet", tools: [{ type: "function", name: "fleet_list" }, …] }. A
// tool in a namespace is named here NAMESPACE__NAME (mcp__fleet__fleet_list),
// and a scripted call by that name is answered as a function_call with
// `namespace` and the bare `name`, as the Responses API does.
function toolNames(body) {
  const out = [];
  for (const t of Array.isArray(body.tools) ? body.tools : []) {
    if (!t) continue;
    if (t.type === 'namespace' && Array.isArray(t.tools)) {
      for (const u of t.tools) if (u && u.name) out.push(`${t.name}__${u.name}`);
    } else if (t.name || (t.function && t.function.name)) {
      out.push(t.name || t.function.name);
    }
  }
  return out;
}

/** { namespace?, name } of a scripted call's name, given the tools the request offered. */
function callTarget(body, name) {
  for (const t of Array.isArray(body.tools) ? body.tools : []) {
    if (!t || t.type !== 'namespace' || !Array.isArray(t.tools)) continue;
    for (const u of t.tools) if (u && `${t.name}__${u.name}` === name) return { namespace: t.name, name: u.name };
  }
  return { name };
}

const hex = () => randomUUID().replace(/-/g, '');

/** The output items of a scripted turn. */
function itemsOf(body, turn) {
  const items = [];
  if (turn.text != null && turn.text !== '') {
    items.push({
      type: 'message',
      id: `msg_${hex()}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: String(turn.text), annotations: [] }],
    });
  }
  for (const c of turn.toolCalls || []) {
    items.push({
      type: 'function_call',
      id: `fc_${hex()}`,
      call_id: `call_${hex().slice(0, 24)}`,
      ...callTarget(body, c.name),
      arguments: JSON.stringify(c.input || {}),
      status: 'completed',
    });
  }
  if (items.length === 0) return itemsOf(body, { text: 'ok' });
  return items;
}

function usage() {
  return {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 15,
  };
}

function halves(s) {
  const mid = Math.ceil(s.length / 2);
  return [s.slice(0, mid), s.slice(mid)].filter((p, i) => i === 0 || p !== '');
}

export function answer(req, res, body, turn) {
  const items = itemsOf(body, turn);
  const response = {
    id: `resp_${hex()}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    model: body.model || 'fake-model',
    output: items,
    parallel_tool_calls: false,
    usage: usage(),
  };
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(response));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  const ev = (type, data) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  ev('response.created', { response: { ...response, status: 'in_progress', output: [], usage: null } });
  ev('response.in_progress', { response: { ...response, status: 'in_progress', output: [], usage: null } });
  items.forEach((item, output_index) => {
    if (item.type === 'message') {
      const text = item.content[0].text;
      ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      const part = { type: 'output_text', text: '', annotations: [] };
      ev('response.content_part.added', { item_id: item.id, output_index, content_index: 0, part });
      for (const delta of halves(text)) {
        ev('response.output_text.delta', { item_id: item.id, output_index, content_index: 0, delta });
      }
      ev('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text });
      ev('response.content_part.done', { item_id: item.id, output_index, content_index: 0, part: { ...part, text } });
    } else {
      ev('response.output_item.added', { output_index, item: { ...item, arguments: '', status: 'in_progress' } });
      for (const delta of halves(item.arguments)) {
        ev('response.function_call_arguments.delta', { item_id: item.id, output_index, delta });
      }
      ev('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments });
    }
    ev('response.output_item.done', { output_index, item });
  });
  ev('response.completed', { response });
  res.end();
}
