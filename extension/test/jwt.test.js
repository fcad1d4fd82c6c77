import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectionUrlClaim, decodeJwtClaims } from '../lib/jwt.js';

const b64url = value => Buffer.from(JSON.stringify(value)).toString('base64url');
const jwt = claims => `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(claims)}.c2lnbmF0dXJl`;

test('decodes the payload of a compact JWT without checking the signature', () => {
  const claims = { sub: 'u1', user_id: '83898119', connection_url: 'wss://relay.example.com', exp: 2000000000 };
  assert.deepEqual(decodeJwtClaims(jwt(claims)), claims);
});

test('handles base64url characters and missing padding', () => {
  // "??>" encodes to "Pz8-" in base64url: exercises the - and _ alphabet.
  const claims = { q: '??>', s: '~~~' };
  const token = jwt(claims);
  assert.match(token.split('.')[1], /[-_]/);
  assert.deepEqual(decodeJwtClaims(token), claims);
});

test('decodes UTF-8 claims', () => {
  assert.equal(decodeJwtClaims(jwt({ name: 'Zoë 東京' })).name, 'Zoë 東京');
});

test('returns null for anything that is not a readable JWT', () => {
  assert.equal(decodeJwtClaims(''), null);
  assert.equal(decodeJwtClaims('abc'), null);
  assert.equal(decodeJwtClaims('a.b'), null);
  assert.equal(decodeJwtClaims('a..c'), null);
  assert.equal(decodeJwtClaims('a.!!!.c'), null);
  assert.equal(decodeJwtClaims(`a.${Buffer.from('not json').toString('base64url')}.c`), null);
  assert.equal(decodeJwtClaims(`a.${b64url([1, 2])}.c`), null);
  assert.equal(decodeJwtClaims(undefined), null);
});

test('connectionUrlClaim reads a non-empty string claim only', () => {
  assert.equal(connectionUrlClaim(jwt({ connection_url: ' ws://127.0.0.1:8080 ' })), 'ws://127.0.0.1:8080');
  assert.equal(connectionUrlClaim(jwt({ connection_url: '' })), null);
  assert.equal(connectionUrlClaim(jwt({ connection_url: 42 })), null);
  assert.equal(connectionUrlClaim(jwt({ sub: 'x' })), null);
  assert.equal(connectionUrlClaim('garbage'), null);
});
