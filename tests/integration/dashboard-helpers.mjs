// dashboard-helpers.mjs — what the dashboard tests share: the URL fleetctl
// prints, authenticated GETs, and a strict reader of the Prometheus text
// exposition format (0.0.4).

import assert from 'node:assert/strict';

/** fleetctl --json dashboard → { url, base, token, listen, tokenRequired }. */
export async function dashboardUrl(f) {
  const r = await f.fleetctl(['--json', 'dashboard']);
  assert.equal(r.code, 0, `fleetctl dashboard: ${r.stderr}`);
  const d = JSON.parse(r.stdout);
  const u = new URL(d.url);
  return { ...d, base: `${u.protocol}//${u.host}`, token: u.searchParams.get('token') };
}

/** GET base+path with the token as a Bearer header (when there is one). */
export async function get(d, path, { token = d.token } = {}) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  return fetch(d.base + path, { headers });
}

export async function getJson(d, path) {
  const r = await get(d, path);
  assert.equal(r.status, 200, `${path}: ${r.status} ${await r.clone().text()}`);
  return r.json();
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const VALUE = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|NaN)$/;
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"/;

/**
 * Parses the exposition; throws on the first line that does not follow the
 * format. Returns { families: Map(name → {type, help, samples: [{name,
 * labels, value}]}) }.
 */
export function parseProm(text) {
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  const families = new Map();
  const family = (n) => {
    if (!families.has(n)) families.set(n, { type: 'untyped', help: null, samples: [] });
    return families.get(n);
  };
  const owner = (sample) => {
    for (const suf of ['_bucket', '_sum', '_count']) {
      const base = sample.endsWith(suf) ? sample.slice(0, -suf.length) : null;
      if (base && families.get(base)?.type === 'histogram') return base;
    }
    return sample;
  };
  const lines = text.slice(0, -1).split('\n');
  lines.forEach((line, i) => {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) return; // a plain comment
      assert.match(m[2], NAME, where);
      const fam = family(m[2]);
      if (m[1] === 'TYPE') {
        assert.ok(['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3]), where);
        assert.equal(fam.samples.length, 0, `TYPE after samples: ${where}`);
        fam.type = m[3];
      } else {
        assert.equal(fam.help, null, `a second HELP: ${where}`);
        fam.help = m[3];
      }
      return;
    }
    assert.notEqual(line.trim(), '', `an empty line inside: ${where}`);
    const nm = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
    assert.ok(nm, where);
    let rest = line.slice(nm[1].length);
    const labels = {};
    if (rest.startsWith('{')) {
      rest = rest.slice(1);
      while (!rest.startsWith('}')) {
        const lm = LABEL.exec(rest);
        assert.ok(lm, `bad label: ${where}`);
        labels[lm[1]] = lm[2].replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
        rest = rest.slice(lm[0].length);
        if (rest.startsWith(',')) rest = rest.slice(1);
      }
      rest = rest.slice(1);
    }
    const parts = rest.split(' ');
    assert.equal(parts[0], '', `no space before the value: ${where}`);
    assert.ok(parts.length === 2 || parts.length === 3, where);
    assert.match(parts[1], VALUE, where);
    if (parts[2] !== undefined) assert.match(parts[2], /^-?\d+$/, where);
    const value = Number(parts[1].replace(/Inf$/, 'Infinity'));
    family(owner(nm[1])).samples.push({ name: nm[1], labels, value });
  });
  for (const [n, fam] of families) {
    if (fam.type === 'counter') assert.match(n, /_total$/, `counter ${n} ends in _total`);
    if (fam.type === 'histogram') {
      const buckets = fam.samples.filter((s) => s.name === `${n}_bucket`);
      assert.ok(buckets.length > 0, `${n} has buckets`);
      assert.equal(buckets.at(-1).labels.le, '+Inf', `${n}'s last bucket is +Inf`);
      for (let k = 1; k < buckets.length; k++)
        assert.ok(buckets[k].value >= buckets[k - 1].value, `${n}'s buckets are cumulative`);
      const count = fam.samples.find((s) => s.name === `${n}_count`);
      assert.equal(count?.value, buckets.at(-1).value, `${n}_count equals its +Inf bucket`);
      assert.ok(fam.samples.some((s) => s.name === `${n}_sum`), `${n} has a _sum`);
    }
  }
  return { families };
}

/** The value of the unlabelled sample name (or one with the given labels). */
export function sample(prom, name, labels = {}) {
  for (const fam of prom.families.values())
    for (const s of fam.samples)
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
  return undefined;
}
