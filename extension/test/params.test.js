import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateParams } from '../lib/params.js';
import { COMMANDS, runCommand } from '../lib/commands.js';
import { ErrorCode, RpcError } from '../lib/rpc.js';

const invalid = pattern => err => err instanceof RpcError && err.code === ErrorCode.INVALID_PARAMS && pattern.test(err.message);

test('absent params count as an empty object', () => {
  assert.deepEqual(validateParams({ tabId: { type: 'integer' } }, undefined), {});
  assert.deepEqual(validateParams({ tabId: { type: 'integer' } }, null), {});
});

test('params that are not an object are rejected', () => {
  assert.throws(() => validateParams({}, [1]), invalid(/params must be an object/));
  assert.throws(() => validateParams({}, 'x'), invalid(/params must be an object/));
});

test('missing required parameter is named', () => {
  assert.throws(() => validateParams({ url: { type: 'string', required: true } }, {}), invalid(/"url"/));
});

test('wrong types are named', () => {
  assert.throws(() => validateParams({ tabId: { type: 'integer' } }, { tabId: '12' }), invalid(/"tabId" must be an integer/));
  assert.throws(() => validateParams({ tabId: { type: 'integer' } }, { tabId: 1.5 }), invalid(/"tabId"/));
  assert.throws(() => validateParams({ x: { type: 'number' } }, { x: Infinity }), invalid(/"x" must be a finite number/));
  assert.throws(() => validateParams({ active: { type: 'boolean' } }, { active: 'yes' }), invalid(/"active" must be true or false/));
  assert.throws(() => validateParams({ params: { type: 'object' } }, { params: [] }), invalid(/"params" must be an object/));
  assert.throws(() => validateParams({ url: { type: 'string' } }, { url: 3 }), invalid(/"url" must be a string/));
});

test('enums, ranges and emptiness are checked', () => {
  const schema = { format: { type: 'string', oneOf: ['png', 'jpeg'] }, quality: { type: 'integer', min: 0, max: 100 }, s: { type: 'string', nonEmpty: true } };
  assert.throws(() => validateParams(schema, { format: 'gif' }), invalid(/"format" must be one of "png", "jpeg"/));
  assert.throws(() => validateParams(schema, { quality: 101 }), invalid(/"quality" must be at most 100/));
  assert.throws(() => validateParams(schema, { quality: -1 }), invalid(/"quality" must be at least 0/));
  assert.throws(() => validateParams(schema, { s: '  ' }), invalid(/"s" must not be empty/));
});

test('valid params come back without undeclared members', () => {
  const schema = { url: { type: 'string', required: true }, active: { type: 'boolean' } };
  assert.deepEqual(validateParams(schema, { url: 'https://a', active: false, stealth: true }), { url: 'https://a', active: false });
});

test('every required command is in the table', () => {
  for (const method of ['getTabs', 'createTab', 'selectTab', 'activateTab', 'closeTab', 'browser_navigate', 'goBack',
    'goForward', 'click', 'type', 'hover', 'screenshot', 'evaluate', 'snapshot', 'forwardCDPCommand'])
    assert.equal(typeof COMMANDS[method]?.run, 'function', method);
});

// runCommand validates before any handler runs, so these never reach chrome.* (absent in Node).
const ctx = { connectionId: 'conn-a', tabs: null, debuggers: null };

test('unknown methods are -32601, including Object.prototype names', async () => {
  for (const method of ['noSuchMethod', 'toString', '__proto__', 'constructor']) {
    await assert.rejects(runCommand(ctx, method, {}), err => err.code === ErrorCode.METHOD_NOT_FOUND && err.message.includes(method));
  }
});

test('command params are validated with the parameter named', async () => {
  await assert.rejects(runCommand(ctx, 'selectTab', {}), invalid(/"tabId"/));
  await assert.rejects(runCommand(ctx, 'selectTab', { tabId: 'x' }), invalid(/"tabId"/));
  await assert.rejects(runCommand(ctx, 'browser_navigate', {}), invalid(/"url"/));
  await assert.rejects(runCommand(ctx, 'browser_navigate', { url: 'not a url' }), invalid(/"url" must be an absolute URL/));
  await assert.rejects(runCommand(ctx, 'createTab', { url: 'nope' }), invalid(/"url"/));
  await assert.rejects(runCommand(ctx, 'createTab', { active: 1 }), invalid(/"active"/));
  await assert.rejects(runCommand(ctx, 'type', { selector: '#a' }), invalid(/"text"/));
  await assert.rejects(runCommand(ctx, 'type', { text: 'x' }), invalid(/"selector"/));
  await assert.rejects(runCommand(ctx, 'hover', {}), invalid(/"selector"/));
  await assert.rejects(runCommand(ctx, 'evaluate', { expression: '' }), invalid(/"expression"/));
  await assert.rejects(runCommand(ctx, 'forwardCDPCommand', { params: {} }), invalid(/"method"/));
  await assert.rejects(runCommand(ctx, 'forwardCDPCommand', { method: 'Page.enable', params: 'x' }), invalid(/"params"/));
  await assert.rejects(runCommand(ctx, 'screenshot', { format: 'gif' }), invalid(/"format"/));
  await assert.rejects(runCommand(ctx, 'screenshot', { quality: 50 }), invalid(/"quality" applies only/));
  await assert.rejects(runCommand(ctx, 'closeTab', { tabId: -1 }), invalid(/"tabId"/));
});

test('click needs a selector or both coordinates', async () => {
  await assert.rejects(runCommand(ctx, 'click', {}), invalid(/"selector", or both "x" and "y"/));
  await assert.rejects(runCommand(ctx, 'click', { x: 10 }), invalid(/"selector", or both "x" and "y"/));
  await assert.rejects(runCommand(ctx, 'click', { x: 'a', y: 1 }), invalid(/"x"/));
});

test('string arrays are checked item by item, for emptiness and size', () => {
  const spec = { values: { type: 'string[]', required: true, nonEmpty: true, maxItems: 2 } };
  assert.deepEqual(validateParams(spec, { values: ['a', 'b'] }), { values: ['a', 'b'] });
  assert.throws(() => validateParams(spec, { values: 'a' }), invalid(/"values" must be an array of strings/));
  assert.throws(() => validateParams(spec, { values: ['a', 1] }), invalid(/"values" must be an array of strings/));
  assert.throws(() => validateParams(spec, { values: [] }), invalid(/at least one/));
  assert.throws(() => validateParams(spec, { values: ['a', 'b', 'c'] }), invalid(/at most 2/));
});
