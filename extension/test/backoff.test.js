import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff } from '../lib/backoff.js';

test('delays double from the initial value when jitter is at its top', () => {
  const backoff = new Backoff({ initialMs: 1000, maxMs: 30_000, random: () => 0.999999 });
  const delays = Array.from({ length: 5 }, () => backoff.next());
  assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16000]);
});

test('jitter keeps every delay between half and all of the ceiling', () => {
  const low = new Backoff({ initialMs: 1000, random: () => 0 });
  assert.deepEqual([low.next(), low.next(), low.next()], [500, 1000, 2000]);
  const mid = new Backoff({ initialMs: 1000, random: () => 0.5 });
  assert.equal(mid.next(), 750);
});

test('delays never exceed the 30 s cap, however many failures', () => {
  const backoff = new Backoff({ initialMs: 1000, maxMs: 30_000, random: () => 0.999999 });
  let last = 0;
  for (let i = 0; i < 100; i++)
    last = backoff.next();
  assert.equal(last, 30_000);
  assert.ok(Number.isFinite(last));
});

test('real randomness stays within bounds', () => {
  const backoff = new Backoff();
  for (let i = 0; i < 200; i++) {
    const ceiling = Math.min(30_000, 1000 * 2 ** Math.min(i, 20));
    const delay = backoff.next();
    assert.ok(delay >= ceiling / 2 && delay <= ceiling, `attempt ${i}: ${delay} outside [${ceiling / 2}, ${ceiling}]`);
  }
});

test('reset starts over after a good connection', () => {
  const backoff = new Backoff({ initialMs: 1000, random: () => 0.999999 });
  backoff.next();
  backoff.next();
  backoff.next();
  backoff.reset();
  assert.equal(backoff.attempt, 0);
  assert.equal(backoff.next(), 1000);
});
