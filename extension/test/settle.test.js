import { test } from 'node:test';
import assert from 'node:assert/strict';

import { NetworkLog } from '../lib/network.js';
import { QUIET_MS, isSettled, settling } from '../lib/settle.js';

test('settled means nothing in flight and quiet since both the last request and the action', () => {
  assert.equal(isSettled({ inFlight: 0, quietForMs: Infinity }, QUIET_MS), true);
  assert.equal(isSettled({ inFlight: 0, quietForMs: Infinity }, QUIET_MS - 1), false);
  assert.equal(isSettled({ inFlight: 1, quietForMs: 10_000 }, 10_000), false);
  assert.equal(isSettled({ inFlight: 0, quietForMs: 50 }, 10_000), false);
});

test('a settling command answers after the request it caused has finished', async () => {
  const network = new NetworkLog();
  const ctx = { debuggers: { network, events: { dialog: () => undefined } } };
  const command = settling({
    params: {},
    run: async () => {
      network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'r', request: { url: 'https://a.test/' } });
      setTimeout(() => network.handle({ tabId: 1 }, 'Network.loadingFinished', { requestId: 'r' }), 300);
      return { tabId: 1, clicked: true };
    },
  });
  const started = Date.now();
  const result = await command.run(ctx, {});
  assert.ok(Date.now() - started >= 300 + QUIET_MS - 20, `answered after ${Date.now() - started} ms`);
  assert.equal(result.clicked, true);
  assert.equal(result.settled.quiet, true);
});

test('an answer that reports a dialog is not held back', async () => {
  const ctx = { debuggers: { network: new NetworkLog() } };
  const dialog = { tabId: 1, dialog: { type: 'confirm', message: '?' } };
  const result = await settling({ params: {}, run: async () => dialog }).run(ctx, {});
  assert.equal(result, dialog);
});
