// prompt_agent.mjs — a stand-in for an agent in a tmux pane, for the nudge
// gate test. It reads lines from its terminal with node's readline (so typed
// characters are echoed and Ctrl-U clears the line), shows the prompt "> "
// when idle, and appends every submitted line to RECORD. While the file
// BUSY exists it is "at work": it stops prompting and prints a changing
// status line every 100 ms; when BUSY goes away it prompts again.
//
// usage: node prompt_agent.mjs RECORD BUSY

import { appendFileSync, existsSync } from 'node:fs';
import readline from 'node:readline';

const [record, busy] = process.argv.slice(2);
if (!record || !busy) {
  process.stderr.write('usage: node prompt_agent.mjs RECORD BUSY\n');
  process.exit(2);
}

const rl = readline.createInterface({ input: process.stdin, output: process.stdout, prompt: '> ' });
rl.on('line', (line) => {
  appendFileSync(record, `${line}\n`);
  if (!working) rl.prompt();
});

let working = false;
let ticks = 0;
setInterval(() => {
  const now = existsSync(busy);
  if (now) {
    if (!working) process.stdout.write('\n');
    working = true;
    process.stdout.write(`\rworking ${++ticks}`);
  } else if (working) {
    working = false;
    process.stdout.write('\n');
    rl.prompt();
  }
}, 100);

rl.prompt();
