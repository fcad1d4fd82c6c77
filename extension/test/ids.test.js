import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DIRECT_CONNECTION, connectionIdOf, isRelayControlId } from '../lib/ids.js';

test('a forwarded id yields the connection before the first colon', () => {
  assert.equal(connectionIdOf('conn-70dfcdd7-ff5e-448e-b274-59c1f6a0d7c8:4'), 'conn-70dfcdd7-ff5e-448e-b274-59c1f6a0d7c8');
});

test('the client part may itself contain colons', () => {
  assert.equal(connectionIdOf('conn-abc:550e8400:1'), 'conn-abc');
});

test('a string client id after the prefix is kept out of the connection id', () => {
  assert.equal(connectionIdOf('conn-abc:550e8400-e29b-41d4-a716-446655440000'), 'conn-abc');
});

test('numeric ids belong to the direct pseudo-connection', () => {
  assert.equal(connectionIdOf(1), DIRECT_CONNECTION);
  assert.equal(connectionIdOf(0), DIRECT_CONNECTION);
});

test('strings without the conn- prefix or without a colon are direct', () => {
  assert.equal(connectionIdOf('550e8400-e29b-41d4-a716-446655440000'), DIRECT_CONNECTION);
  assert.equal(connectionIdOf('proxy:1'), DIRECT_CONNECTION);
  assert.equal(connectionIdOf('conn-abc'), DIRECT_CONNECTION);
  assert.equal(connectionIdOf('conn-:1'), DIRECT_CONNECTION);
  assert.equal(connectionIdOf('xconn-abc:1'), DIRECT_CONNECTION);
});

test('non-string, non-number ids are direct', () => {
  assert.equal(connectionIdOf(null), DIRECT_CONNECTION);
  assert.equal(connectionIdOf(undefined), DIRECT_CONNECTION);
  assert.equal(connectionIdOf({ id: 'conn-a:1' }), DIRECT_CONNECTION);
});

test('relay control ids are recognised', () => {
  assert.equal(isRelayControlId('proxy:1'), true);
  assert.equal(isRelayControlId('proxy:auth'), true);
  assert.equal(isRelayControlId('conn-a:1'), false);
  assert.equal(isRelayControlId(1), false);
});
