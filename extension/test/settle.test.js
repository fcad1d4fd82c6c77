import { test } from 'node:test';
import assert from 'node:assert/strict';

import { NetworkLog } from '../lib/network.js';
import { ACTION_GRACE_MS, ANIMATION_WAIT_MAX_MS, DOM_QUIET_LOADED_MS, DOM_QUIET_MS, DOM_WAIT_MAX_MS, LOAD_STRAGGLERS_MS, QUIET_MS, isSettled, settling } from '../lib/settle.js';

test('after an action, settled means nothing in flight or loading, quiet, and the action\'s grace passed', () => {
  assert.equal(isSettled({ inFlight: 0, quietForMs: Infinity }, ACTION_GRACE_MS), true);
  assert.equal(isSettled({ inFlight: 0, quietForMs: Infinity }, ACTION_GRACE_MS - 1), false);
  assert.equal(isSettled({ inFlight: 1, quietForMs: 10_000 }, 10_000), false);
  assert.equal(isSettled({ inFlight: 0, quietForMs: QUIET_MS - 1 }, 10_000), false);
  assert.equal(isSettled({ inFlight: 0, quietForMs: 10_000, loading: true }, 10_000), false, 'a frame still loading');
});

test('after a navigation whose load event fired, nothing started for QUIET_MS is enough, at once', () => {
  // A request that ended a moment ago (just before load) does not hold the answer.
  assert.equal(isSettled({ inFlight: 0, quietForMs: 1, sinceStartMs: QUIET_MS }, 0, { loaded: true }), true);
  assert.equal(isSettled({ inFlight: 0, quietForMs: 1, sinceStartMs: QUIET_MS - 1 }, 0, { loaded: true }), false);
  assert.equal(isSettled({ inFlight: 1, quietForMs: 1_000, sinceStartMs: 1_000 }, 0, { loaded: true }), false);
});

test('frames loading count from their start to their stop, and a detach forgets them', () => {
  const network = new NetworkLog();
  network.handle({ tabId: 1 }, 'Page.frameStartedLoading', { frameId: 'main' }, 1_000);
  assert.deepEqual(network.quiet(1, 1_010), { inFlight: 0, quietForMs: 10, sinceStartMs: 1_010, loading: true });
  network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'r', request: { url: 'https://a.test/' } }, 1_020);
  network.handle({ tabId: 1 }, 'Network.loadingFinished', { requestId: 'r' }, 1_030);
  network.handle({ tabId: 1 }, 'Page.frameStoppedLoading', { frameId: 'main' }, 1_040);
  assert.deepEqual(network.quiet(1, 1_100), { inFlight: 0, quietForMs: 60, sinceStartMs: 80, loading: false });
  network.handle({ tabId: 1 }, 'Page.frameStartedLoading', { frameId: 'child' }, 1_200);
  network.detached(1);
  assert.equal(network.quiet(1, 1_300).loading, false);
});

test('a navigation answers within a few milliseconds of its load event when nothing else is going on', async () => {
  const network = new NetworkLog();
  network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'doc', request: { url: 'https://a.test/' } }, Date.now() - 500);
  network.handle({ tabId: 1 }, 'Network.loadingFinished', { requestId: 'doc' }, Date.now() - 5);
  const ctx = { debuggers: { network, events: { dialog: () => undefined } } };
  const started = Date.now();
  const result = await settling({ params: {}, run: async () => ({ tabId: 1 }) }, { loaded: true }).run(ctx, {});
  assert.ok(Date.now() - started < 40, `answered after ${Date.now() - started} ms`);
  assert.equal(result.settled.quiet, true);
});

test('the DOM must be quiet too, but a page that never stops changing is not waited for long', async () => {
  let quietFor = 0;
  const send = async () => ({ result: { value: { quietMs: quietFor, movingMs: 0 } } });
  const ctx = { debuggers: { network: new NetworkLog(), events: { dialog: () => undefined }, send } };
  // Quiet after a while: answered once it is.
  setTimeout(() => { quietFor = DOM_QUIET_MS; }, 80);
  assert.ok(DOM_QUIET_LOADED_MS < DOM_QUIET_MS);
  let started = Date.now();
  let result = await settling({ params: {}, run: async () => ({ tabId: 1 }) }, { loaded: true }).run(ctx, {});
  assert.ok(Date.now() - started >= 70 && result.settled.quiet, `answered after ${Date.now() - started} ms`);
  // Never quiet: answered after DOM_WAIT_MAX_MS.
  quietFor = 0;
  started = Date.now();
  result = await settling({ params: {}, run: async () => ({ tabId: 1 }) }, { loaded: true }).run(ctx, {});
  const waited = Date.now() - started;
  assert.ok(waited >= DOM_WAIT_MAX_MS - 20 && waited < DOM_WAIT_MAX_MS + 200, `answered after ${waited} ms`);
});

test('after an action, a transition that is about to end is waited for, within a bound; a navigation does not wait for one', async () => {
  let movingUntil = 0;
  const send = async () => ({ result: { value: { quietMs: 1_000, movingMs: Math.max(0, movingUntil - Date.now()) } } });
  const ctx = { debuggers: { network: new NetworkLog(), events: { dialog: () => undefined }, send } };
  const click = () => settling({ params: {}, run: async () => ({ tabId: 1, clicked: true }) }).run(ctx, {});
  // A backdrop fading in for 250 ms: the answer comes once it is done.
  movingUntil = Date.now() + 250;
  let started = Date.now();
  let result = await click();
  let waited = Date.now() - started;
  assert.ok(waited >= 240 && waited < 250 + 150, `answered after ${waited} ms`);
  assert.equal(result.settled.quiet, true);
  // Motion that keeps being renewed (a carousel): answered at the bound.
  const renew = setInterval(() => { movingUntil = Date.now() + 500; }, 20);
  started = Date.now();
  result = await click();
  waited = Date.now() - started;
  clearInterval(renew);
  assert.ok(waited >= ANIMATION_WAIT_MAX_MS && waited < ACTION_GRACE_MS + ANIMATION_WAIT_MAX_MS + 200, `answered after ${waited} ms`);
  // A page that animates as it loads: its navigation answers at once.
  movingUntil = Date.now() + 500;
  started = Date.now();
  await settling({ params: {}, run: async () => ({ tabId: 1 }) }, { loaded: true }).run(ctx, {});
  waited = Date.now() - started;
  assert.ok(waited < 100, `answered after ${waited} ms`);
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

test('an action waits for what it set off, not for a long poll the page had open before it', async () => {
  const network = new NetworkLog();
  network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'poll', type: 'Fetch', request: { url: 'https://a.test/poll' } }, Date.now() - 5_000);
  const ctx = { debuggers: { network, events: { dialog: () => undefined } } };
  const started = Date.now();
  const result = await settling({ params: {}, run: async () => ({ tabId: 1, clicked: true }) }).run(ctx, {});
  const waited = Date.now() - started;
  assert.ok(waited < 1_000, `answered after ${waited} ms`);
  assert.equal(result.settled.quiet, true);
  // The same poll counts when asked without a start (everything the tab has open).
  assert.equal(network.quiet(1).inFlight, 1);
});

test('an event source stops counting once answered, and its messages are not activity', () => {
  const network = new NetworkLog();
  network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'es', type: 'EventSource', request: { url: 'https://a.test/live' } }, 1_000);
  assert.equal(network.quiet(1, 1_010).inFlight, 1);
  network.handle({ tabId: 1 }, 'Network.responseReceived', { requestId: 'es', type: 'EventSource', response: { status: 200 } }, 1_020);
  network.handle({ tabId: 1 }, 'Network.eventSourceMessageReceived', { requestId: 'es', data: 'tick' }, 1_500);
  network.handle({ tabId: 1 }, 'Network.dataReceived', { requestId: 'es', dataLength: 10 }, 1_600);
  assert.deepEqual(network.quiet(1, 1_700), { inFlight: 0, quietForMs: 680, sinceStartMs: 700, loading: false });
});

test('a fetch answered as a stream holds no navigation, but the action that opened it waits for it', async () => {
  const network = new NetworkLog();
  const start = Date.now();
  // Gradio's heartbeat: a fetch the page opens once loaded, answered as text/event-stream.
  network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'hb', type: 'Fetch', request: { url: 'https://a.test/heartbeat' } }, start);
  network.handle({ tabId: 1 }, 'Network.responseReceived', { requestId: 'hb', type: 'Fetch', response: { status: 200, mimeType: 'text/event-stream' } }, start + 5);
  assert.equal(network.quiet(1, start + 10).inFlight, 1);
  assert.equal(network.quiet(1, start + 10, { streams: false }).inFlight, 0);
  assert.equal(network.quiet(1, start + 10, { since: start - 1, streams: false }).inFlight, 0);
  // Not yet answered, it is a request like any other.
  network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'late', type: 'Fetch', request: { url: 'https://a.test/stream' } }, start + 20);
  assert.equal(network.quiet(1, start + 30, { streams: false }).inFlight, 1);
  network.handle({ tabId: 1 }, 'Network.responseReceived', { requestId: 'late', type: 'Fetch', response: { status: 200, mimeType: 'multipart/x-mixed-replace' } }, start + 40);
  assert.equal(network.quiet(1, start + 50, { streams: false }).inFlight, 0);

  const ctx = { debuggers: { network, events: { dialog: () => undefined } } };
  let started = Date.now();
  const navigated = await settling({ params: {}, run: async () => ({ tabId: 1 }) }, { loaded: true }).run(ctx, {});
  assert.ok(Date.now() - started < LOAD_STRAGGLERS_MS + 500, `navigation answered after ${Date.now() - started} ms`);
  assert.equal(navigated.settled.quiet, true);

  // A chat's streamed reply, opened by the action: the action waits for it to end.
  const chat = settling({
    params: {},
    run: async () => {
      const at = Date.now();
      network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'reply', type: 'Fetch', request: { url: 'https://a.test/chat' } }, at);
      network.handle({ tabId: 1 }, 'Network.responseReceived', { requestId: 'reply', type: 'Fetch', response: { status: 200, mimeType: 'text/event-stream; charset=utf-8' } }, at + 1);
      setTimeout(() => network.handle({ tabId: 1 }, 'Network.loadingFinished', { requestId: 'reply' }, Date.now()), 400);
      return { tabId: 1, clicked: true };
    },
  });
  started = Date.now();
  const clicked = await chat.run(ctx, {});
  const waited = Date.now() - started;
  assert.ok(waited >= 400, `the click answered after ${waited} ms, before its reply ended`);
  assert.equal(clicked.settled.quiet, true);
});

test('after a load, a request the page had open counts for LOAD_STRAGGLERS_MS only', async () => {
  const network = new NetworkLog();
  network.handle({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'poll', type: 'Fetch', request: { url: 'https://a.test/poll' } }, Date.now() - 200);
  const ctx = { debuggers: { network, events: { dialog: () => undefined } } };
  const started = Date.now();
  const result = await settling({ params: {}, run: async () => ({ tabId: 1 }) }, { loaded: true }).run(ctx, {});
  const waited = Date.now() - started;
  assert.ok(waited >= LOAD_STRAGGLERS_MS && waited < LOAD_STRAGGLERS_MS + 500, `answered after ${waited} ms`);
  assert.equal(result.settled.quiet, true);
});
