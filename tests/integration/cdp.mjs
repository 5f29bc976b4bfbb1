// cdp.mjs — headless Chromium (Debian's /usr/bin/chromium) driven through
// its DevTools protocol over --remote-debugging-pipe: JSON messages, each
// ended by a NUL byte, written to the browser's fd 3 and read from its fd 4.
// Enough for the dashboard test: open a page, evaluate, screenshot.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';

export const CHROMIUM = process.env.FLEET_CHROMIUM || '/usr/bin/chromium';

export class Browser {
  static async launch({ width = 1100, height = 900, dark = false } = {}) {
    const profile = mkdtempSync('/tmp/fl-chromium-');
    const args = [
      '--headless=new',
      '--no-sandbox', // the tests run as root
      '--disable-gpu',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-extensions',
      '--disable-background-networking',
      '--remote-debugging-pipe',
      `--user-data-dir=${profile}`,
      `--window-size=${width},${height}`,
      ...(dark ? ['--force-dark-mode', '--blink-settings=preferredColorScheme=0'] : []),
      'about:blank',
    ];
    const proc = spawn(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
    const b = new Browser(proc, profile);
    await b.ready();
    return b;
  }

  constructor(proc, profile) {
    this.proc = proc;
    this.profile = profile;
    this.nextId = 1;
    this.waiting = new Map();
    this.stderr = '';
    this.exited = null;
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (d) => {
      this.stderr = (this.stderr + d).slice(-20000);
    });
    proc.once('exit', (code, signal) => {
      this.exited = { code, signal };
      for (const { reject } of this.waiting.values())
        reject(new Error(`chromium exited (code ${code}, signal ${signal}): ${this.stderr.slice(-2000)}`));
      this.waiting.clear();
    });
    let buf = Buffer.alloc(0);
    proc.stdio[4].on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      let nul;
      while ((nul = buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(buf.subarray(0, nul).toString('utf8'));
        buf = buf.subarray(nul + 1);
        const w = msg.id && this.waiting.get(msg.id);
        if (!w) continue;
        this.waiting.delete(msg.id);
        if (msg.error) w.reject(new Error(`${w.method}: ${msg.error.message}`));
        else w.resolve(msg.result);
      }
    });
  }

  send(method, params = {}, sessionId, { timeout = 15000 } = {}) {
    if (this.exited) return Promise.reject(new Error(`chromium is gone: ${this.stderr.slice(-2000)}`));
    const id = this.nextId++;
    const msg = { id, method, params, ...(sessionId ? { sessionId } : {}) };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`${method}: no answer in ${timeout} ms`));
      }, timeout);
      this.waiting.set(id, {
        method,
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.proc.stdio[3].write(JSON.stringify(msg) + '\0');
    });
  }

  async ready() {
    await this.send('Browser.getVersion', {}, undefined, { timeout: 30000 });
  }

  /** A new page attached in flat mode: { eval(expr), navigate(url), screenshot() }. */
  async newPage(url = 'about:blank') {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    const send = (m, p, o) => this.send(m, p, sessionId, o);
    await send('Page.enable');
    await send('Runtime.enable');
    const page = {
      send,
      async navigate(u) {
        const r = await send('Page.navigate', { url: u });
        if (r.errorText) throw new Error(`cannot open ${u}: ${r.errorText}`);
      },
      async eval(expression) {
        const r = await send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
        if (r.exceptionDetails) throw new Error(`${expression}: ${JSON.stringify(r.exceptionDetails)}`);
        return r.result.value;
      },
      async screenshot() {
        const r = await send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
        return Buffer.from(r.data, 'base64');
      },
    };
    if (url !== 'about:blank') await page.navigate(url);
    return page;
  }

  async close() {
    if (!this.exited) {
      this.send('Browser.close').catch(() => {});
      await new Promise((resolve) => {
        const t = setTimeout(() => {
          this.proc.kill('SIGKILL');
          resolve();
        }, 5000);
        this.proc.once('exit', () => (clearTimeout(t), resolve()));
        if (this.exited) (clearTimeout(t), resolve());
      });
    }
    rmSync(this.profile, { recursive: true, force: true });
  }
}

export const screenshotPath = (dir, name) => path.join(dir, name);
