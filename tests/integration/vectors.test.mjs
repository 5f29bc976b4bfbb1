// vectors.test.mjs — checks schema/signing-vectors.json with a second,
// independent implementation: Node's own crypto and a canonical-form builder
// written here from docs/wire-format.md, not from gateway/proto/sign.c. If the C
// code and this file ever disagree, one of them no longer follows the
// documented wire format. Needs no fleetd and no broker.
//
// For every vector: the canonical bytes rebuilt from its envelope and body
// equal canonicalHex; the seed yields publicKey; signing the canonical bytes
// with the seed yields signature (Ed25519 is deterministic); signature
// verifies under publicKey; and a canonical string with any one byte changed,
// or the signature under another vector's key, does not verify.
//
// The "sealed" vectors are checked with Node's crypto for Ed25519 and an
// independent libsodium build (the libsodium-wrappers npm package, compiled
// to WebAssembly) for the X25519 conversion and crypto_box: the keys
// converted from the Ed25519 pairs, the sealed bytes for the given nonce,
// opening them back, a flipped byte or another recipient failing, and the
// canonical form with sealedTo over the sealed bytes and its signature.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import sodium from 'libsodium-wrappers';

const here = path.dirname(fileURLToPath(import.meta.url));
const schemaDir = path.join(here, '..', '..', 'schema');
const vectorsDoc = JSON.parse(readFileSync(path.join(schemaDir, 'signing-vectors.json'), 'utf8'));
const envelopeDoc = JSON.parse(readFileSync(path.join(schemaDir, 'envelope.json'), 'utf8'));

// The signed header subset, in the order docs/wire-format.md gives.
const FIELD_ORDER = [
  'v', 'kind', 'msgId', 'traceId', 'from', 'to', 'inReplyTo', 'turnId', 'spawnId',
  'fromName', 'host', 'ts', 'expiresAt',
];

// Fields written after those only when present (a sealed body's sealedTo).
const WHEN_PRESENT = ['sealedTo'];

// Builds the canonical head: a prefix line, one NAME:LEN:VALUE line per
// field (absent = length 0), then a line for each present WHEN_PRESENT field.
// Lengths count bytes. It is the associated data of the pair-sealed form.
function canonicalHead(envelope) {
  const parts = [Buffer.from('fleet-envelope/1\n', 'ascii')];
  const line = (name, v) => {
    const value = Buffer.from(v, 'utf8');
    parts.push(Buffer.from(`${name}:${value.length}:`, 'ascii'), value, Buffer.from('\n', 'ascii'));
  };
  for (const name of FIELD_ORDER) line(name, envelope[name] ?? '');
  for (const name of WHEN_PRESENT) if (envelope[name]) line(name, envelope[name]);
  return Buffer.concat(parts);
}

// Builds the canonical byte string: the head, then body:LEN:BODY. body: a
// string (its UTF-8 bytes) or a Buffer.
function canonical(envelope, body) {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  return Buffer.concat([canonicalHead(envelope), Buffer.from(`body:${b.length}:`, 'ascii'), b]);
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
  assert.deepEqual(envelopeDoc.canonical.whenPresent, WHEN_PRESENT);
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

await sodium.ready;

test('the sealed vectors cover the required cases', () => {
  const vs = vectorsDoc.sealed;
  assert.ok(Array.isArray(vs) && vs.length >= 2, 'at least 2 sealed vectors');
  assert.ok(vs.some((v) => v.body === ''), 'one with an empty body');
  assert.ok(vs.some((v) => /[^\x00-\x7f]/.test(v.body)), 'one with a non-ASCII body');
  assert.equal(envelopeDoc.sealing.nonceBytes, sodium.crypto_box_NONCEBYTES);
  assert.equal(envelopeDoc.sealing.macBytes, sodium.crypto_box_MACBYTES);
});

/** The Ed25519 pair of a seed, derived by Node: { priv, pk (raw 32), sk (libsodium's 64: seed || pk) }. */
function pairOf(seedHex) {
  const seed = Buffer.from(seedHex, 'hex');
  const priv = privateKeyFromSeed(seed);
  const pk = Buffer.from(crypto.createPublicKey(priv).export({ format: 'jwk' }).x, 'base64url');
  return { priv, pk, sk: Buffer.concat([seed, pk]) };
}

for (const vec of vectorsDoc.sealed ?? []) {
  test(`sealed vector ${vec.name}`, () => {
    const s = pairOf(vec.senderSeed);
    const r = pairOf(vec.recipientSeed);
    assert.equal(s.pk.toString('base64'), vec.senderPublicKey);
    assert.equal(r.pk.toString('base64'), vec.recipientPublicKey);
    const sx = sodium.crypto_sign_ed25519_pk_to_curve25519(s.pk);
    const rx = sodium.crypto_sign_ed25519_pk_to_curve25519(r.pk);
    assert.equal(Buffer.from(sx).toString('hex'), vec.senderX25519, 'sender X25519 key');
    assert.equal(Buffer.from(rx).toString('hex'), vec.recipientX25519, 'recipient X25519 key');
    const ssx = sodium.crypto_sign_ed25519_sk_to_curve25519(s.sk);
    const rsx = sodium.crypto_sign_ed25519_sk_to_curve25519(r.sk);
    // The converted secret keys belong to the converted public keys.
    assert.equal(Buffer.from(sodium.crypto_scalarmult_base(rsx)).toString('hex'), vec.recipientX25519);

    const nonce = Buffer.from(vec.nonce, 'hex');
    const body = Buffer.from(vec.body, 'utf8');
    const boxed = sodium.crypto_box_easy(body, nonce, rx, ssx);
    const sealed = Buffer.concat([nonce, Buffer.from(boxed)]);
    assert.equal(sealed.toString('hex'), vec.sealedHex, 'sealed bytes: nonce || crypto_box_easy');
    assert.equal(sealed.length, body.length + 40);

    const open = (bytes, pk, sk) => {
      try {
        return Buffer.from(sodium.crypto_box_open_easy(bytes.subarray(24), bytes.subarray(0, 24), pk, sk));
      } catch {
        return null;
      }
    };
    assert.equal(open(sealed, sx, rsx)?.toString('utf8'), vec.body, 'the recipient opens it');
    for (let at = 0; at < sealed.length; at += Math.max(1, Math.floor(sealed.length / 16))) {
      const bad = Buffer.from(sealed);
      bad[at] ^= 0x01;
      assert.equal(open(bad, sx, rsx), null, `byte ${at} flipped: does not open`);
    }
    const other = sodium.crypto_box_keypair();
    assert.equal(open(sealed, sx, other.privateKey), null, 'another recipient cannot open it');
    assert.equal(open(sealed, other.publicKey, rsx), null, 'it was not sealed by another sender');

    assert.ok(vec.envelope.sealedTo, 'the envelope names the host it is sealed to');
    const canon = canonical(vec.envelope, sealed);
    assert.equal(canon.toString('hex'), vec.canonicalHex, 'canonical bytes with sealedTo, over the sealed body');
    assert.equal(crypto.sign(null, canon, s.priv).toString('base64'), vec.signature, 'signature');
    const pub = publicKeyFromRaw(s.pk);
    const sig = Buffer.from(vec.signature, 'base64');
    assert.equal(crypto.verify(null, canon, pub, sig), true);
    const { sealedTo, ...stripped } = vec.envelope;
    assert.equal(crypto.verify(null, canonical(stripped, sealed), pub, sig), false, 'sealedTo stripped');
    assert.equal(crypto.verify(null, canonical({ ...vec.envelope, sealedTo: sealedTo + 'x' }, sealed), pub, sig), false,
      'sealedTo changed');
  });
}

// The pair-sealed form (envelope 1.2): no signature; the body sealed with
// XChaCha20-Poly1305 under the key of the ordered pair of hosts, with the
// canonical head as associated data. Checked here with libsodium-wrappers
// for X25519, BLAKE2b and the AEAD, and Node for the Ed25519 key pairs.
test('the pair-sealed vectors cover the required cases', () => {
  const vs = vectorsDoc.pairSealed;
  assert.ok(Array.isArray(vs) && vs.length >= 2, 'at least 2 pair-sealed vectors');
  assert.ok(vs.some((v) => v.body === ''), 'one with an empty body');
  assert.ok(vs.some((v) => /[^\x00-\x7f]/.test(v.body)), 'one with a non-ASCII body');
  assert.equal(envelopeDoc.pairSealing.nonceBytes, sodium.crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
  assert.equal(envelopeDoc.pairSealing.tagBytes, sodium.crypto_aead_xchacha20poly1305_ietf_ABYTES);
});

/** The key of messages from host `from` to host `to`: own (sk, x pk) is one
 *  end, peerX the other end's X25519 public key; sending: own is `from`. */
function pairKey(ownSk, peerPk, from, to, sending) {
  const ownX = sodium.crypto_sign_ed25519_sk_to_curve25519(ownSk);
  const ownXPk = sodium.crypto_scalarmult_base(ownX);
  const peerX = sodium.crypto_sign_ed25519_pk_to_curve25519(peerPk);
  const q = sodium.crypto_scalarmult(ownX, peerX);
  const host = (name, h) => {
    const v = Buffer.from(h, 'utf8');
    return Buffer.concat([Buffer.from(`${name}:${v.length}:`, 'ascii'), v, Buffer.from('\n', 'ascii')]);
  };
  const input = Buffer.concat([
    Buffer.from('fleet-pairkey/1\n', 'ascii'), host('from', from), host('to', to), Buffer.from(q),
    Buffer.from(sending ? ownXPk : peerX), Buffer.from(sending ? peerX : ownXPk),
  ]);
  return Buffer.from(sodium.crypto_generichash(32, input, null));
}

for (const vec of vectorsDoc.pairSealed ?? []) {
  test(`pair-sealed vector ${vec.name}`, () => {
    const s = pairOf(vec.senderSeed);
    const r = pairOf(vec.recipientSeed);
    assert.equal(s.pk.toString('base64'), vec.senderPublicKey);
    assert.equal(r.pk.toString('base64'), vec.recipientPublicKey);
    const k = pairKey(s.sk, r.pk, vec.senderHost, vec.recipientHost, true);
    assert.equal(k.toString('hex'), vec.pairKey, "pair key at the sender's end");
    assert.equal(pairKey(r.sk, s.pk, vec.senderHost, vec.recipientHost, false).toString('hex'), vec.pairKey,
      "pair key at the recipient's end");
    const kr = pairKey(r.sk, s.pk, vec.recipientHost, vec.senderHost, true);
    assert.equal(kr.toString('hex'), vec.reverseKey, 'the other direction');
    assert.notEqual(vec.reverseKey, vec.pairKey);

    assert.equal(vec.envelope.sig, undefined, 'the pair-sealed form carries no sig');
    assert.equal(vec.envelope.host, vec.senderHost);
    assert.equal(vec.envelope.sealedTo, vec.recipientHost);
    const head = canonicalHead(vec.envelope);
    assert.equal(head.toString('hex'), vec.headHex, 'canonical head (the associated data)');

    const nonce = Buffer.from(vec.nonce, 'hex');
    const body = Buffer.from(vec.body, 'utf8');
    const ct = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(body, head, null, nonce, k);
    const sealed = Buffer.concat([nonce, Buffer.from(ct)]);
    assert.equal(sealed.toString('hex'), vec.sealedHex, 'sealed bytes: nonce || ciphertext || tag');
    assert.equal(sealed.length, body.length + 40);

    const open = (bytes, ad, key) => {
      try {
        return Buffer.from(sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
          null, bytes.subarray(24), ad, bytes.subarray(0, 24), key));
      } catch {
        return null;
      }
    };
    assert.equal(open(sealed, head, k)?.toString('utf8'), vec.body, 'the recipient opens it');
    assert.equal(open(sealed, head, kr), null, "the other direction's key does not open it");
    for (let at = 0; at < sealed.length; at += Math.max(1, Math.floor(sealed.length / 16))) {
      const bad = Buffer.from(sealed);
      bad[at] ^= 0x01;
      assert.equal(open(bad, head, k), null, `byte ${at} flipped: does not open`);
    }
    for (const name of [...FIELD_ORDER, ...WHEN_PRESENT]) {
      const v = vec.envelope[name];
      const changed = { ...vec.envelope, [name]: v ? v.slice(0, -1) + (v.endsWith('x') ? 'y' : 'x') : 'x' };
      assert.equal(open(sealed, canonicalHead(changed), k), null, `${name} changed: does not open`);
    }
  });
}
