// prompt_agent.mjs — a stand-in for an agent in a tmux pane, for the nudge
// gate and injection tests. It is its own small line editor on a raw
// terminal: it shows the prompt "> " when idle, echoes typed characters,
// Ctrl-U clears the line, Backspace deletes, Enter submits. It asks the
// terminal for bracketed paste, and takes a paste (newlines and all) as part
// of the one input line, as coding agents do. Every submitted input is
// appended to RECORD (as text and a newline) and to RECORD.json (one JSON
// string per line, byte for byte). While the file BUSY exists it is "at
// work": it stops prompting and prints a changing status line every 100 ms;
// when BUSY goes away it prompts again. A BUSY file that holds "still" is
// work of another kind, as Codex shows it: one status line,
// "• Working (3s • esc to interrupt)" (or, for "still:LINE", LINE, as
// Claude Code's status bar), then its prompt again on a still screen, so
// only that line tells it is at work; when BUSY goes, the screen
// is cleared (the status line goes) and it prompts.
//
// With --mcp it also runs an MCP client (the SDK) that starts fleet-mcp
// from FLEET_BIN_DIR with the environment the agent was given (FLEET_NAME,
// FLEET_ROLE, FLEET_SOCKET, and TMUX_PANE / TMUX from tmux), so fleetd knows
// it sits in this pane; should fleet-mcp ever end, it starts it again
// (fleet-mcp itself stays up and reconnects when fleetd restarts). It never
// polls. With AGENT_REPLY_TO=NAME set, it answers each
// submitted input with fleet_reply to NAME ("done: " and the input).
//
// With --commands it acts on keys and commands as coding agents do:
// Ctrl-C or Ctrl-D (outside a paste) quits it; an input starting with "!"
// runs the rest as a shell command (as Claude Code's bash mode does), and
// so does an input in which a "!" was typed as a key anywhere (opencode's
// shell mode; a "!" inside a paste is text); the input "/exit" quits it. So
// a test can see a brief that would act as keys.
//
// An input that opens with fleet's provenance line ("(fleet) from ...",
// then a newline) is recorded and answered without it; the line itself is
// appended to RECORD.prov.json (one JSON string per line, "" for an input
// without one), so the tests can check it and the text apart.
//
// usage: node prompt_agent.mjs RECORD BUSY [--mcp] [--commands]

import { execSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const [record, busy, ...flags] = process.argv.slice(2);
if (!record || !busy) {
  process.stderr.write('usage: node prompt_agent.mjs RECORD BUSY [--mcp]\n');
  process.exit(2);
}

const out = (s) => process.stdout.write(s);
const commands = flags.includes('--commands');
const PASTE_ON = '\x1b[200~';
const PASTE_OFF = '\x1b[201~';

let input = '';
let shell = false; // a "!" was typed as a key (--commands)
let pasting = false;
let pending = ''; // the start of an escape sequence split across reads
let working = false;
let ticks = 0;
let mcp = null;

function prompt() {
  out('> ');
}

function submit() {
  const raw = input;
  input = '';
  const nl = raw.indexOf('\n');
  const prov = raw.startsWith('(fleet) from ') && nl > 0 ? raw.slice(0, nl) : '';
  const line = prov ? raw.slice(nl + 1) : raw;
  appendFileSync(record, `${line}\n`);
  appendFileSync(`${record}.json`, `${JSON.stringify(line)}\n`);
  appendFileSync(`${record}.prov.json`, `${JSON.stringify(prov)}\n`);
  out('\r\n');
  const run = commands && (raw.startsWith('!') || shell);
  shell = false;
  if (run) {
    try {
      execSync(line.startsWith('!') ? line.slice(1) : line, { stdio: 'ignore' });
    } catch {
      // a failing command is the agent's business
    }
  }
  if (commands && raw.trim() === '/exit') process.exit(0);
  if (!working) prompt();
  if (mcp && process.env.AGENT_REPLY_TO) {
    mcp.callTool({ name: 'fleet_reply', arguments: { to: process.env.AGENT_REPLY_TO, content: `done: ${line}` } })
      .catch(() => {});
  }
}

function take(chunk) {
  let s = pending + chunk;
  pending = '';
  let i = 0;
  while (i < s.length) {
    if (s[i] === '\x1b') {
      const rest = s.slice(i);
      if (rest.startsWith(PASTE_ON)) {
        pasting = true;
        i += PASTE_ON.length;
        continue;
      }
      if (rest.startsWith(PASTE_OFF)) {
        pasting = false;
        i += PASTE_OFF.length;
        continue;
      }
      if (PASTE_ON.startsWith(rest) || PASTE_OFF.startsWith(rest)) {
        pending = rest; // wait for the rest of the sequence
        return;
      }
      i += 1; // another escape: ignored
      continue;
    }
    const c = s[i];
    i += 1;
    if (pasting) {
      input += c;
      out(c === '\n' ? '\r\n' : c);
      continue;
    }
    if (commands && (c === '\x03' || c === '\x04')) process.exit(0);
    if (c === '\r' || c === '\n') submit();
    else if (c === '\x15') {
      input = '';
      out('\r\x1b[K');
      prompt();
    } else if (c === '\x7f' || c === '\b') {
      if (input.length) {
        input = input.slice(0, -1);
        out('\b \b');
      }
    } else if (commands && c === '!') {
      shell = true; // swallowed: the line is a shell command now
    } else if (c === '\t' || c >= ' ') {
      input += c;
      out(c);
    }
    // other control characters (Ctrl-C among them) are not text: dropped
  }
}

process.stdin.setRawMode(true);
process.stdin.setEncoding('utf8');
process.stdin.on('data', take);
out('\x1b[?2004h'); // bracketed paste, please

setInterval(() => {
  const now = existsSync(busy);
  if (now) {
    let still = null;
    try {
      const held = readFileSync(busy, 'utf8');
      if (held.startsWith('still')) still = held.startsWith('still:') ? held.slice(6).trimEnd() : '\u2022 Working (3s \u2022 esc to interrupt)';
    } catch {
      // gone between the two looks: not still
    }
    if (still !== null) {
      if (!working) out(`\r\n${still}\r\n`);
      if (!working) prompt();
      working = 'still';
      return;
    }
    if (!working) out('\r\n');
    working = true;
    out(`\rworking ${++ticks}`);
  } else if (working) {
    // the status line of still work goes when the work ends, as Codex's does
    out(working === 'still' ? '\x1b[2J\x1b[H' : '\r\n');
    working = false;
    prompt();
  }
}, 100);

prompt();

if (flags.includes('--mcp')) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const binDir = process.env.FLEET_BIN_DIR;
  const connect = async () => {
    const transport = new StdioClientTransport({
      command: path.join(binDir, 'fleet-mcp'),
      args: [],
      env: { ...process.env },
      stderr: 'ignore',
    });
    const client = new Client({ name: 'prompt-agent', version: '0.0.0' }, { capabilities: {} });
    transport.onclose = () => {
      mcp = null;
      setTimeout(() => connect().catch(() => {}), 300);
    };
    try {
      await client.connect(transport);
      mcp = client;
    } catch {
      // fleetd not (yet) there: onclose retries
    }
  };
  await connect();
}
