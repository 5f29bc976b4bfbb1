// trust-helpers.mjs — an envelope encoder and signer written from
// docs/wire-format.md (not from gateway/proto/sign.c), an AMQP client that is not
// fleet's (amqplib), and small helpers for the trust and TLS tests: reading a
// gateway's node identity, pinning gateways to each other with fleetctl, and
// reading fleetctl status counters.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import amqp from 'amqplib';
import sodium from 'libsodium-wrappers';
import { waitFor } from './harness.mjs';

// The signed header subset, in the order docs/wire-format.md gives.
export const FIELD_ORDER = [
  'v', 'kind', 'msgId', 'traceId', 'from', 'to', 'inReplyTo', 'turnId', 'spawnId',
  'fromName', 'host', 'ts', 'expiresAt',
];

// Signed too, but written after FIELD_ORDER only when present.
export const WHEN_PRESENT = ['sealedTo'];

/** The canonical byte string for envelope (name -> value) and body (string or Buffer). */
export function canonical(envelope, body) {
  const parts = [Buffer.from('fleet-envelope/1\n', 'ascii')];
  const line = (name, v) => {
    const value = Buffer.from(v, 'utf8');
    parts.push(Buffer.from(`${name}:${value.length}:`, 'ascii'), value, Buffer.from('\n', 'ascii'));
  };
  for (const name of FIELD_ORDER) line(name, envelope[name] ?? '');
  for (const name of WHEN_PRESENT) if (envelope[name]) line(name, envelope[name]);
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  parts.push(Buffer.from(`body:${b.length}:`, 'ascii'), b);
  return Buffer.concat(parts);
}

/** The private key for a 32-byte Ed25519 seed (RFC 8410 PKCS#8 wrapping). */
export function privateKeyFromSeed(seed) {
  assert.equal(seed.length, 32, 'an Ed25519 seed is 32 bytes');
  const header = Buffer.from('302e020100300506032b657004220420', 'hex');
  return crypto.createPrivateKey({ key: Buffer.concat([header, seed]), format: 'der', type: 'pkcs8' });
}

/** The raw 32-byte public key of a private KeyObject, base64. */
export function publicKeyB64(privateKey) {
  return Buffer.from(crypto.createPublicKey(privateKey).export({ format: 'jwk' }).x, 'base64url').toString('base64');
}

/** A fresh Ed25519 key pair: { privateKey, publicKey (base64 raw) }. */
export function freshKey() {
  const { privateKey } = crypto.generateKeyPairSync('ed25519');
  return { privateKey, publicKey: publicKeyB64(privateKey) };
}

/**
 * Reads <stateDir>/node-identity.json. The secret key is libsodium's 64-byte
 * form (seed || public key): its first 32 bytes are the seed.
 * Returns { json, privateKey, publicKey }.
 */
export function readIdentity(stateDir) {
  const file = path.join(stateDir, 'node-identity.json');
  const json = JSON.parse(readFileSync(file, 'utf8'));
  const sk = Buffer.from(json.secretKey, 'base64');
  assert.equal(sk.length, 64, `${file}: secretKey is 64 bytes (libsodium form)`);
  const privateKey = privateKeyFromSeed(sk.subarray(0, 32));
  return { json, privateKey, publicKey: publicKeyB64(privateKey) };
}

/**
 * Seals body (string or Buffer) from the gateway whose libsodium secret key
 * (64 bytes, base64: node-identity.json's secretKey) is senderSkB64 to the
 * one whose Ed25519 public key is recipientPkB64, as docs/wire-format.md
 * says: NONCE || crypto_box_easy(body) with both keys converted to X25519.
 */
export async function sealBody(body, recipientPkB64, senderSkB64) {
  await sodium.ready;
  const rx = sodium.crypto_sign_ed25519_pk_to_curve25519(Buffer.from(recipientPkB64, 'base64'));
  const sx = sodium.crypto_sign_ed25519_sk_to_curve25519(Buffer.from(senderSkB64, 'base64'));
  const nonce = sodium.randombytes_buf(sodium.crypto_box_NONCEBYTES);
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  return Buffer.concat([Buffer.from(nonce), Buffer.from(sodium.crypto_box_easy(b, nonce, rx, sx))]);
}

/** The canonical head of envelope: the canonical form without its body part. */
export function canonicalHead(envelope) {
  const c = canonical(envelope, Buffer.alloc(0));
  return c.subarray(0, c.length - 'body:0:'.length);
}

/** libsodium's 64-byte secret key (seed || public key) of a private KeyObject. */
export function sodiumSecretKey(privateKey) {
  const jwk = privateKey.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from(jwk.d, 'base64url'), Buffer.from(jwk.x, 'base64url')]);
}

/**
 * The pair key of messages from host `from` to host `to`, as
 * docs/wire-format.md gives it, computed at one end: ownSk is that end's
 * libsodium secret key (Buffer, 64 bytes), peerPkB64 the other end's
 * Ed25519 public key, sending true when this end is `from`.
 */
export async function pairKey(ownSk, peerPkB64, from, to, sending) {
  await sodium.ready;
  const ownX = sodium.crypto_sign_ed25519_sk_to_curve25519(ownSk);
  const ownXPk = sodium.crypto_scalarmult_base(ownX);
  const peerX = sodium.crypto_sign_ed25519_pk_to_curve25519(Buffer.from(peerPkB64, 'base64'));
  const q = sodium.crypto_scalarmult(ownX, peerX);
  const line = (name, h) => Buffer.from(`${name}:${Buffer.byteLength(h)}:${h}\n`, 'utf8');
  const input = Buffer.concat([
    Buffer.from('fleet-pairkey/1\n', 'ascii'), line('from', from), line('to', to), Buffer.from(q),
    Buffer.from(sending ? ownXPk : peerX), Buffer.from(sending ? peerX : ownXPk),
  ]);
  return Buffer.from(sodium.crypto_generichash(32, input, null));
}

/** The pair-sealed body of envelope (no sig; sealedTo set) and body under key. */
export async function pairSeal(envelope, body, key) {
  await sodium.ready;
  const nonce = Buffer.from(sodium.randombytes_buf(24));
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const ct = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(b, canonicalHead(envelope), null, nonce, key);
  return Buffer.concat([nonce, Buffer.from(ct)]);
}

/** Opens a pair-sealed body; null when it does not open. */
export async function pairOpen(envelope, sealed, key) {
  await sodium.ready;
  try {
    return Buffer.from(sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null, sealed.subarray(24), canonicalHead(envelope), sealed.subarray(0, 24), key));
  } catch {
    return null;
  }
}

/** The `sig` for envelope and body under privateKey (standard padded base64). */
export function signEnvelope(envelope, body, privateKey) {
  return crypto.sign(null, canonical(envelope, body), privateKey).toString('base64');
}

/** RFC 3339 UTC with milliseconds, as the envelope wants. */
export const rfc3339 = (ms) => new Date(ms).toISOString();

export const uuid = () => crypto.randomUUID();

/**
 * A SEND envelope (present fields only) from one gid to another, as a
 * gateway on `host` would publish it. over: fields to add or replace (a
 * value of undefined or '' drops the field).
 */
export function sendEnvelope({ from, to, host, fromName, over = {} }) {
  const now = Date.now();
  const env = {
    v: '1.0',
    kind: 'SEND',
    msgId: uuid(),
    traceId: uuid(),
    from,
    to,
    fromName,
    host,
    ts: rfc3339(now),
    expiresAt: rfc3339(now + 3600 * 1000),
    ...over,
  };
  for (const k of Object.keys(env)) if (env[k] === undefined || env[k] === '') delete env[k];
  return env;
}

/** A signed presence beat for gid on host: { env, body }. */
export function presenceBeat({ gid, host, name, role = 'worker', groups = [], ttlMs = 60000 }) {
  const now = Date.now();
  const env = {
    v: '1.0',
    kind: 'PRESENCE',
    msgId: uuid(),
    from: gid,
    fromName: name,
    host,
    ts: rfc3339(now),
    expiresAt: rfc3339(now + ttlMs),
  };
  const body = JSON.stringify({ name, role, groups, status: 'online' });
  return { env, body };
}

/** The AMQP headers for a signed envelope: the present fields plus sig. */
export function headersFor(envelope, sig) {
  const h = {};
  for (const [k, v] of Object.entries(envelope)) if (v !== undefined && v !== '') h[k] = String(v);
  if (sig !== undefined) h.sig = sig;
  return h;
}

/** The wire order of the envelope's fields: the signed ones, sealedTo, sig. */
const WIRE_ORDER = [...FIELD_ORDER, ...WHEN_PRESENT, 'sig'];

/**
 * The AMQP headers for a signed envelope packed into the one `env` header
 * (envelope 1.1, docs/wire-format.md): every present field as
 * key:len:value and a newline, len in bytes.
 */
export function packedHeadersFor(envelope, sig) {
  const h = headersFor(envelope, sig);
  const lines = WIRE_ORDER.filter((k) => h[k] !== undefined).map(
    (k) => `${k}:${Buffer.byteLength(h[k])}:${h[k]}\n`
  );
  return { env: lines.join(''), [MSG_ID]: h.msgId };
}

/**
 * The envelope of a message taken off the broker, read the way a gateway
 * reads it, written here apart from fleetd's C: the packed `env` header
 * when there is one (envelope 1.1), else one header per field.
 */
export function envelopeOf(m) {
  const h = m.properties.headers || {};
  if (h.env === undefined) return h;
  const b = Buffer.isBuffer(h.env) ? h.env : Buffer.from(String(h.env), 'utf8');
  const env = {};
  let at = 0;
  while (at < b.length) {
    const c1 = b.indexOf(0x3a, at);
    const c2 = c1 < 0 ? -1 : b.indexOf(0x3a, c1 + 1);
    const digits = c2 < 0 ? '' : b.toString('latin1', c1 + 1, c2);
    if (c1 <= at || !/^(0|[1-9][0-9]*)$/.test(digits)) throw new Error(`not a packed envelope: ${b}`);
    const end = c2 + 1 + Number(digits);
    if (b[end] !== 0x0a) throw new Error(`packed envelope: a field runs past its end: ${b}`);
    env[b.toString('utf8', at, c1)] = b.toString('utf8', c2 + 1, end);
    at = end + 1;
  }
  return env;
}

/** msgId of a message off the broker, or undefined when its envelope cannot be read. */
function msgIdOf(m) {
  try {
    return envelopeOf(m).msgId;
  } catch {
    return undefined;
  }
}

/**
 * A key in a headers object that is no AMQP header: publish() sends it as
 * the message id (for packed headers, which have no msgId of their own).
 */
export const MSG_ID = Symbol('msgId');

/**
 * An amqplib connection with a confirm channel for publishing and a plain
 * channel for queue checks. opts go to amqp.connect's socket options (ca for
 * amqps://).
 */
export async function amqpClient(uri, socketOpts = {}) {
  const conn = await amqp.connect(uri, socketOpts);
  conn.on('error', () => {}); // reported through the calls that fail
  const pub = await conn.createConfirmChannel();
  const client = {
    conn,
    pub,
    pubError: null, // why the broker closed the publishing channel, if it did
    /**
     * Publishes body with headers to exchange/key the way a gateway does
     * (persistent, text/plain, message_id = msgId) and waits for the
     * broker's confirm.
     */
    async publish(exchange, key, headers, body) {
      const buf = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
      await new Promise((resolve, reject) => {
        pub.publish(
          exchange,
          key,
          buf,
          {
            headers,
            persistent: true,
            contentType: 'text/plain; charset=utf-8',
            messageId: headers.msgId ?? headers[MSG_ID],
            timestamp: Math.floor(Date.now() / 1000),
          },
          (err) => (err ? reject(err) : resolve())
        );
      });
    },
    /** The message count of a queue (passive declare on a throwaway channel). */
    async count(queue) {
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      try {
        return (await ch.checkQueue(queue)).messageCount;
      } finally {
        await ch.close().catch(() => {});
      }
    },
    /**
     * Takes messages off fleet.dlq until one with the given msgId shows up
     * (others are returned too); resolves that message. Throws after timeout.
     */
    async takeFromDlq(msgId, { timeout = 10000 } = {}) {
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      const seen = [];
      try {
        return await waitFor(
          async () => {
            for (;;) {
              const m = await ch.get('fleet.dlq', { noAck: true });
              if (!m) return null;
              const id = m.properties.messageId ?? msgIdOf(m);
              seen.push(String(id));
              if (String(id) === msgId) return m;
            }
          },
          { timeout, interval: 100, what: `msgId ${msgId} in fleet.dlq (took instead: ${JSON.stringify(seen)})` }
        );
      } finally {
        await ch.close().catch(() => {});
      }
    },
    async close() {
      await conn.close().catch(() => {});
    },
  };
  pub.on('error', (e) => {
    client.pubError = e;
  });
  return client;
}

/** Parses a fleetctl --json output, or fails with the output. */
export function parseJson(r, what) {
  assert.equal(r.code, 0, `${what} exited ${r.code}: ${r.stdout}${r.stderr}`);
  try {
    return JSON.parse(r.stdout);
  } catch {
    assert.fail(`${what} output is not JSON: ${r.stdout}${r.stderr}`);
  }
}

/** `fleetctl identity --json` of a host: { hostId, publicKey }. */
export async function identityOf(host) {
  const id = parseJson(await host.fleetctl(['identity', '--json']), `[${host.hostId}] fleetctl identity --json`);
  assert.equal(id.hostId, host.hostId, `identity of ${host.hostId}: ${JSON.stringify(id)}`);
  assert.equal(typeof id.publicKey, 'string');
  assert.equal(Buffer.from(id.publicKey, 'base64').length, 32, `publicKey is 32 bytes: ${id.publicKey}`);
  return id;
}

/** `fleetctl peer list --json`'s peers array. */
export async function peersOf(host) {
  const l = parseJson(await host.fleetctl(['peer', 'list', '--json']), `[${host.hostId}] fleetctl peer list --json`);
  assert.ok(Array.isArray(l.peers), `peer list --json has peers: ${JSON.stringify(l)}`);
  return l.peers;
}

/**
 * Makes every host pin every other host's key (fleetctl identity + peer
 * add), skipping pins already in place (hostsTest pins too); checks the
 * result with peer list. Returns { [hostId]: { hostId, publicKey } }.
 */
export async function pinAll(hosts) {
  const ids = [];
  for (const h of hosts) ids.push(await identityOf(h));
  for (const h of hosts) {
    const have = await peersOf(h);
    for (const id of ids) {
      if (id.hostId === h.hostId) continue;
      const pin = have.find((p) => p.host === id.hostId);
      if (pin) {
        assert.equal(pin.publicKey, id.publicKey, `[${h.hostId}] ${id.hostId} is pinned with its own key`);
        continue;
      }
      const r = await h.fleetctl(['peer', 'add', id.hostId, id.publicKey]);
      assert.equal(r.code, 0, `[${h.hostId}] fleetctl peer add ${id.hostId}: ${r.stdout}${r.stderr}`);
    }
    const now = await peersOf(h);
    for (const id of ids) {
      if (id.hostId === h.hostId) continue;
      const pin = now.find((p) => p.host === id.hostId);
      assert.ok(pin && pin.publicKey === id.publicKey, `[${h.hostId}] pins ${id.hostId}: ${JSON.stringify(now)}`);
    }
  }
  return Object.fromEntries(ids.map((id) => [id.hostId, id]));
}

/** fleetctl status --json's counters object. */
export async function counters(host) {
  const st = parseJson(await host.fleetctl(['--json', 'status']), `[${host.hostId}] fleetctl --json status`);
  assert.ok(st.counters && typeof st.counters === 'object', `status has counters: ${JSON.stringify(st)}`);
  return st.counters;
}

/** fleetctl status --json. */
export async function status(host) {
  return parseJson(await host.fleetctl(['--json', 'status']), `[${host.hostId}] fleetctl --json status`);
}

/** Waits until counter name on host is at least min; returns its value. */
export async function waitCounter(host, name, min, { timeout = 10000 } = {}) {
  let last;
  try {
    return await waitFor(
      async () => {
        last = await counters(host);
        return (last[name] ?? 0) >= min ? last[name] : null;
      },
      { timeout, interval: 100, what: `[${host.hostId}] counter ${name} >= ${min}` }
    );
  } catch (e) {
    e.message += `\nlast counters: ${JSON.stringify(last)}`;
    throw e;
  }
}

/**
 * The permissions of a per-gateway broker user for host HOST, exactly as
 * docs/operations.md ("Per-gateway broker users") gives them: configure,
 * write and read regexes, and topic permissions on fleet.roster and
 * fleet.msg. opts.clear: the variant for a fleet that takes bodies in clear
 * (broker.seal false), which also needs the shared broadcast keys.
 */
export function gatewayPermissions(host, { clear = false } = {}) {
  const h = host.replace(/[.]/g, '\\.');
  const inbox = 'agent\\.[0-9a-f-]{36}\\.inbox\\.v2';
  const gid = '[0-9a-f-]{36}';
  const word = '[A-Za-z0-9_-]+';
  const shared = clear ? `|broadcast\\.${word}` : '';
  return {
    configure: `^(fleet\\.(msg|roster|control|claims|dlx|dlq)|control\\.${h}|roster\\.${h}|claims\\.${h}|${inbox})$`,
    write: `^(fleet\\.(msg|roster|control|claims|dlx|dlq)|control\\.${h}|roster\\.${h}|claims\\.${h}|${inbox})$`,
    read: `^(fleet\\.(msg|roster|control|claims|dlx)|control\\.${h}|roster\\.${h}|claims\\.${h}|${inbox})$`,
    // Presence only under its own host's keys; bind only roster.#.
    rosterTopic: { exchange: 'fleet.roster', write: `^roster\\.${h}\\.`, read: '^roster\\.#$' },
    // Publish to a gid or to one host's broadcast key; bind only to a gid
    // or to its own host's broadcast keys (so never '#').
    msgTopic: {
      exchange: 'fleet.msg',
      write: `^(${gid}|broadcast\\.${word}\\.${word}${shared})$`,
      read: `^(${gid}|broadcast\\.${h}\\.${word}${shared})$`,
    },
  };
}

/** Creates broker user `user` with gatewayPermissions(host, opts) on the broker's vhost. */
export async function applyGatewayPermissions(broker, user, pass, host, opts = {}) {
  const p = gatewayPermissions(host, opts);
  await broker.ctl(['add_user', user, pass]);
  await broker.ctl(['set_permissions', '-p', broker.vhost, user, p.configure, p.write, p.read]);
  for (const tp of [p.rosterTopic, p.msgTopic])
    await broker.ctl(['set_topic_permissions', '-p', broker.vhost, user, tp.exchange, tp.write, tp.read]);
  return p;
}
