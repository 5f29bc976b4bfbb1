// vectors.test.mjs — checks schema/signing-vectors.json with a second,
// independent implementation: Node's own crypto and a canonical-form builder
// written here from docs/wire-format.md, not from gateway/sign.c. If the C
// code and this file ever disagree, one of them no longer follows the
// documented wire format. Needs no fleetd and no broker.
//
// For every vector: the canonical bytes rebuilt from its envelope and body
// equal canonicalHex; the seed yields publicKey; signing the canonical bytes
// with the seed yields signature (Ed25519 is deterministic); signature
// verifies under publicKey; and a canonical string with any one byte changed,
// or the signature under another vector's key, does not verify.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const schemaDir = path.join(here, '..', '..', 'schema');
const vectorsDoc = JSON.parse(readFileSync(path.join(schemaDir, 'signing-vectors.json'), 'utf8'));
const envelopeDoc = JSON.parse(readFileSync(path.join(schemaDir, 'envelope.json'), 'utf8'));

// The signed header subset, in the order docs/wire-format.md gives.
const FIELD_ORDER = [
  'v', 'kind', 'msgId', 'traceId', 'from', 'to', 'inReplyTo', 'turnId', 'spawnId',
  'fromName', 'host', 'ts', 'expiresAt',
];

// Builds the canonical byte string: a prefix line, one NAME:LEN:VALUE line
// per field (absent = length 0), then body:LEN:BODY. Lengths count bytes.
function canonical(envelope, body) {
  const parts = [Buffer.from('fleet-envelope/1\n', 'ascii')];
  for (const name of FIELD_ORDER) {
    const value = Buffer.from(envelope[name] ?? '', 'utf8');
    parts.push(Buffer.from(`${name}:${value.length}:`, 'ascii'), value, Buffer.from('\n', 'ascii'));
  }
  const b = Buffer.from(body, 'utf8');
  parts.push(Buffer.from(`body:${b.length}:`, 'ascii'), b);
  return Buffer.concat(parts);
}

// A raw 32-byte Ed25519 public key as a KeyObject, through JWK.
function publicKeyFromRaw(raw) {
  assert.equal(raw.length, 32, 'an Ed25519 public key is 32 bytes');
  return crypto.createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
    format: 'jwk',
  });
}

// The private key for a 32-byte seed: the seed wrapped in its fixed PKCS#8
// header (RFC 8410), so the key pair is derived by Node, not by libsodium.
function privateKeyFromSeed(seed) {
  const header = Buffer.from('302e020100300506032b657004220420', 'hex');
  return crypto.createPrivateKey({ key: Buffer.concat([header, seed]), format: 'der', type: 'pkcs8' });
}

test('envelope.json lists the same canonical field order', () => {
  assert.deepEqual(envelopeDoc.canonical.fieldOrder, FIELD_ORDER);
  assert.equal(envelopeDoc.canonical.prefix, 'fleet-envelope/1\n');
  const sig = envelopeDoc.fields.find((f) => f.name === 'sig');
  assert.equal(sig.signed, false);
  for (const name of FIELD_ORDER) {
    const f = envelopeDoc.fields.find((x) => x.name === name);
    assert.ok(f, `envelope.json describes ${name}`);
    assert.equal(f.signed, true, `${name} is signed`);
  }
});

test('the vectors cover the required cases', () => {
  const vs = vectorsDoc.vectors;
  assert.ok(vs.length >= 4, 'at least 4 vectors');
  assert.ok(vs.some((v) => v.body === ''), 'one with an empty body');
  assert.ok(vs.some((v) => /[^\x00-\x7f]/.test(v.body)), 'one with a non-ASCII body');
  assert.ok(vs.some((v) => v.body.includes('\n')), 'one with newlines in the body');
  assert.equal(new Set(vs.map((v) => v.name)).size, vs.length, 'names are unique');
});

for (const [i, vec] of vectorsDoc.vectors.entries()) {
  test(`vector ${vec.name}`, () => {
    for (const k of Object.keys(vec.envelope))
      assert.ok(FIELD_ORDER.includes(k), `${k} is a signed envelope field`);

    const canon = canonical(vec.envelope, vec.body);
    assert.equal(canon.toString('hex'), vec.canonicalHex, 'canonical bytes');

    const seed = Buffer.from(vec.seed, 'hex');
    assert.equal(seed.length, 32);
    const priv = privateKeyFromSeed(seed);
    const rawPub = Buffer.from(crypto.createPublicKey(priv).export({ format: 'jwk' }).x, 'base64url');
    assert.equal(rawPub.toString('base64'), vec.publicKey, 'the seed yields publicKey');

    const sig = Buffer.from(vec.signature, 'base64');
    assert.equal(sig.length, 64);
    assert.equal(sig.toString('base64'), vec.signature, 'signature is canonical padded base64');
    assert.equal(crypto.sign(null, canon, priv).toString('base64'), vec.signature,
      'signing is deterministic and gives signature');

    const pub = publicKeyFromRaw(Buffer.from(vec.publicKey, 'base64'));
    assert.equal(crypto.verify(null, canon, pub, sig), true, 'signature verifies');

    // Tampering anywhere in the canonical string breaks it: the first byte,
    // the last one, and each length or value byte in between (step keeps
    // the test fast).
    for (let at = 0; at < canon.length; at += Math.max(1, Math.floor(canon.length / 64))) {
      const bad = Buffer.from(canon);
      bad[at] ^= 0x01;
      assert.equal(crypto.verify(null, bad, pub, sig), false, `byte ${at} changed`);
    }
    const last = Buffer.from(canon);
    last[last.length - 1] ^= 0x01;
    assert.equal(crypto.verify(null, last, pub, sig), false, 'last byte changed');
    assert.equal(crypto.verify(null, Buffer.concat([canon, Buffer.from('\n')]), pub, sig), false,
      'a byte appended');

    // A changed field, rebuilt through the canonical form, breaks it too.
    for (const name of FIELD_ORDER) {
      const env = { ...vec.envelope, [name]: (vec.envelope[name] ?? '') + 'x' };
      assert.equal(crypto.verify(null, canonical(env, vec.body), pub, sig), false, `${name} changed`);
    }

    // Another key does not verify it.
    const other = vectorsDoc.vectors[(i + 1) % vectorsDoc.vectors.length];
    const otherPub = publicKeyFromRaw(Buffer.from(other.publicKey, 'base64'));
    assert.equal(crypto.verify(null, canon, otherPub, sig), false, 'another key');
  });
}
