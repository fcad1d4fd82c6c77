// Consent decisions: who counts as the same assistant, and what lets one act.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CONSENT_REQUIRED, ConsentKey, assistantKey, assistantName, consentDeniedError, consentPolicy, consentRequiredError,
  isAllowed, isDenied,
} from '../lib/consent.js';
import { toRpcError } from '../lib/rpc.js';

const claude = { client_id: 'c-123', client_name: 'Claude Desktop' };

test('an assistant is known by user and client_id, else by user and name, else not at all', () => {
  assert.notEqual(assistantKey('alice', claude), assistantKey('bob', claude));
  assert.equal(assistantKey('alice', claude), assistantKey('alice', { client_id: 'c-123', client_name: 'Renamed' }));
  assert.notEqual(assistantKey('alice', { client_name: 'c-123' }), assistantKey('alice', { client_id: 'c-123' }));
  assert.equal(assistantKey('alice', { client_name: '  ' }), null);
  assert.equal(assistantKey('alice', {}), null);
});

test('the name shown is the client name, else a short client id, else "Unnamed assistant"', () => {
  assert.equal(assistantName(claude), 'Claude Desktop');
  assert.equal(assistantName({ client_id: 'abcdef0123456789' }), 'Assistant abcdef01');
  assert.equal(assistantName({}), 'Unnamed assistant');
});

test('a new assistant is not allowed by default', () => {
  const policy = consentPolicy({}, null);
  assert.equal(isAllowed(policy, { key: assistantKey('u', claude), identity: claude, allowedOnce: false }), false);
});

test('"Always allow" covers the same assistant on a later connection, and only it', () => {
  const key = assistantKey('u', claude);
  const policy = consentPolicy({ [ConsentKey.ALWAYS_ALLOWED]: { [key]: { name: 'Claude Desktop' } } }, null);
  assert.equal(isAllowed(policy, { key, identity: claude, allowedOnce: false }), true);
  const other = { client_id: 'other', client_name: 'Claude Desktop' };
  assert.equal(isAllowed(policy, { key: assistantKey('u', other), identity: other, allowedOnce: false }), false);
});

test('"Allow once", the allow-all switch, dev-config autoAllow and allowedClients each allow', () => {
  const base = { key: null, identity: claude, allowedOnce: false };
  assert.equal(isAllowed(consentPolicy({}, null), { ...base, allowedOnce: true }), true);
  assert.equal(isAllowed(consentPolicy({ [ConsentKey.ALLOW_ALL]: true }, null), base), true);
  assert.equal(isAllowed(consentPolicy({}, { autoAllow: true }), base), true);
  assert.equal(isAllowed(consentPolicy({}, { allowedClients: ['c-123'] }), base), true);
  assert.equal(isAllowed(consentPolicy({}, { allowedClients: ['Claude Desktop'] }), base), true);
  assert.equal(isAllowed(consentPolicy({}, { allowedClients: ['someone else'] }), base), false);
});

test('junk in storage or dev-config allows nothing', () => {
  const policy = consentPolicy({ [ConsentKey.ALLOW_ALL]: 'yes', [ConsentKey.ALWAYS_ALLOWED]: ['x'] }, { autoAllow: 1, allowedClients: 'c-123' });
  assert.equal(isAllowed(policy, { key: 'x', identity: claude, allowedOnce: false }), false);
});

test('the refusal carries -32010 and tells the person where to allow', () => {
  const error = consentRequiredError('Claude Desktop');
  assert.equal(error.code, CONSENT_REQUIRED);
  assert.equal(CONSENT_REQUIRED, -32010);
  assert.match(error.message, /browser's owner has not allowed "Claude Desktop".*Allow.*mcp-relay extension/);
});

test('"Deny" is remembered for the same assistant and outranks the allow-all switch and dev-config, not a later "Allow once"', () => {
  const key = assistantKey('u', claude);
  const stored = { [ConsentKey.DENIED]: { [key]: { name: 'Claude Desktop' } }, [ConsentKey.ALLOW_ALL]: true };
  const policy = consentPolicy(stored, { autoAllow: true, allowedClients: ['c-123'] });
  const later = { key, identity: claude, allowedOnce: false };
  assert.equal(isDenied(policy, later), true);
  assert.equal(isAllowed(policy, later), false);
  assert.equal(isDenied(policy, { ...later, allowedOnce: true }), false);
  assert.equal(isAllowed(policy, { ...later, allowedOnce: true }), true);
  const other = { client_id: 'other' };
  assert.equal(isAllowed(policy, { key: assistantKey('u', other), identity: other, allowedOnce: false }), true);
  assert.equal(isDenied(consentPolicy({ [ConsentKey.DENIED]: ['junk'] }, null), later), false);
});

test('a denied assistant is refused with -32010 and data.decision "denied", so its client does not wait for a click', () => {
  const error = toRpcError(consentDeniedError('Claude Desktop'));
  assert.equal(error.code, CONSENT_REQUIRED);
  assert.deepEqual(error.data, { decision: 'denied' });
  assert.match(error.message, /denied "Claude Desktop".*options page/);
  assert.equal(Object.hasOwn(toRpcError(consentRequiredError('x')), 'data'), false);
});
