// What a page function's value reads as (page-scripts.js readableValue): the values CDP's
// by-value answer refuses or reads as `{}`, written as a person would read them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readableValue } from '../lib/page-scripts.js';

test('values JSON cannot carry read as they print', () => {
  assert.equal(readableValue(10n ** 20n), '100000000000000000000n');
  assert.equal(readableValue(NaN), 'NaN');
  assert.equal(readableValue(-Infinity), '-Infinity');
  assert.equal(readableValue(-0), '-0');
  assert.equal(readableValue(function named() {}), '[function named]');
  assert.equal(readableValue(new Date(0)), '1970-01-01T00:00:00.000Z');
  assert.equal(readableValue(/a+/g), '/a+/g');
  assert.equal(readableValue(new TypeError('nope')), 'TypeError: nope');
});

test('plain JSON values are what they were', () => {
  const plain = { a: 1, b: 'two', c: [true, null, { d: 0.5 }] };
  assert.deepEqual(readableValue(plain), plain);
  assert.equal(readableValue('text'), 'text');
  assert.equal(readableValue(undefined), undefined);
  // As JSON.stringify has them: an undefined member is left out, an undefined item is null.
  assert.deepEqual(readableValue({ gone: undefined, list: [1, undefined] }), { list: [1, null] });
});

test('collections read as lists, a cycle as [Circular], a shared object twice', () => {
  assert.deepEqual(readableValue(new Map([['k', 1n]])), [['k', '1n']]);
  assert.deepEqual(readableValue(new Set([1, 2])), [1, 2]);
  assert.deepEqual(readableValue(new Uint8Array([1, 2])), [1, 2]);
  const looped = { name: 'a' };
  looped.self = looped;
  assert.deepEqual(readableValue(looped), { name: 'a', self: '[Circular]' });
  const shared = { x: 1 };
  assert.deepEqual(readableValue([shared, shared]), [{ x: 1 }, { x: 1 }]);
  assert.deepEqual(readableValue({ toJSON: () => 'as JSON' }), 'as JSON');
});
