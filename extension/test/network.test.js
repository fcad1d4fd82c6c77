import { test } from 'node:test';
import assert from 'node:assert/strict';

import { HEADERS_CLIP, NetworkLog, clippedHeaders } from '../lib/network.js';

const tab = { tabId: 4 };
const sent = (id, url, extra = {}) => ['Network.requestWillBeSent', { requestId: id, request: { method: 'GET', url }, type: 'Fetch', timestamp: 10, wallTime: 1_700_000_000, ...extra }];

test('a request is kept with its method, url, status, type and duration', () => {
  const log = new NetworkLog();
  log.handle(tab, ...sent('1', 'https://a.test/x'));
  log.handle(tab, 'Network.responseReceived', { requestId: '1', type: 'Fetch', response: { status: 404, statusText: 'Not Found', mimeType: 'text/plain' } });
  log.handle(tab, 'Network.loadingFinished', { requestId: '1', timestamp: 10.25, encodedDataLength: 9 });
  assert.deepEqual(log.requests(4).requests, [{
    requestId: '1', method: 'GET', url: 'https://a.test/x', type: 'Fetch', startedAt: 1_700_000_000_000,
    status: 404, statusText: 'Not Found', mimeType: 'text/plain', encodedBytes: 9, finished: true, durationMs: 250, index: 1,
  }]);
});

test("a request's headers and body are kept for its details, not listed", () => {
  const log = new NetworkLog();
  log.handle(tab, ...sent('1', 'https://a.test/api', {
    request: { method: 'POST', url: 'https://a.test/api', headers: { 'Content-Type': 'application/json' }, postData: '{"q":1}', hasPostData: true },
  }));
  log.handle(tab, ...sent('2', 'https://a.test/upload', { request: { method: 'POST', url: 'https://a.test/upload', hasPostData: true } }));
  log.handle(tab, 'Network.responseReceived', { requestId: '1', response: { status: 201, statusText: 'Created', headers: { 'x-id': 7 } } });
  assert.deepEqual(log.details(4, '1'), {
    request: { requestId: '1', method: 'POST', url: 'https://a.test/api', type: 'Fetch', startedAt: 1_700_000_000_000, status: 201, statusText: 'Created', mimeType: undefined, index: 1 },
    requestHeaders: { 'Content-Type': 'application/json' },
    responseHeaders: { 'x-id': '7' },
    postData: '{"q":1}',
    hasPostData: false,
  });
  // A body Chrome left out of the event is fetched when asked for (Network.getRequestPostData).
  assert.equal(log.details(4, '2').hasPostData, true);
  assert.equal(log.details(4, '3'), null);
  assert.ok(log.requests(4).requests.every(row => Object.keys(row).every(key => !key.startsWith('_'))));
  // Headers are bounded: a page cannot grow the worker's memory through them.
  const many = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`x-h${i}`, 'v'.repeat(40)]));
  const kept = clippedHeaders(many);
  const size = Object.entries(kept).reduce((n, [k, v]) => n + k.length + v.length, 0);
  assert.ok(size <= HEADERS_CLIP + 40, `${size}`);
  assert.match(kept['…'], /^\d+ more headers not kept$/);
});

test('the ring keeps the newest requests of each tab and counts the dropped ones', () => {
  const log = new NetworkLog({ limit: 2 });
  for (const id of ['1', '2', '3'])
    log.handle(tab, ...sent(id, `https://a.test/${id}`));
  log.handle({ tabId: 5 }, ...sent('9', 'https://b.test/'));
  const { requests, dropped } = log.requests(4);
  assert.deepEqual(requests.map(r => r.requestId), ['2', '3']);
  assert.equal(dropped, 1);
  assert.equal(log.details(4, '1'), null);
  assert.equal(log.requests(5).requests.length, 1);
});

test('requests in flight are counted until they finish, fail or the debugger detaches', () => {
  const log = new NetworkLog();
  log.handle(tab, ...sent('1', 'https://a.test/1'), 1_000);
  log.handle(tab, ...sent('2', 'https://a.test/2'), 1_000);
  assert.equal(log.quiet(4, 1_100).inFlight, 2);
  log.handle(tab, 'Network.loadingFailed', { requestId: '1', errorText: 'net::ERR_FAILED', timestamp: 11 }, 1_200);
  assert.deepEqual(log.quiet(4, 1_500), { inFlight: 1, quietForMs: 300, sinceStartMs: 500, loading: false });
  assert.equal(log.requests(4).requests[0].failure, 'net::ERR_FAILED');
  log.detached(4);
  assert.equal(log.quiet(4).inFlight, 0);
});

test('a redirect ends the hop before it with the redirect status', () => {
  const log = new NetworkLog();
  log.handle(tab, ...sent('1', 'https://a.test/old'));
  log.handle(tab, ...sent('1', 'https://a.test/new', { redirectResponse: { status: 301 }, timestamp: 10.1 }));
  const [hop, final] = log.requests(4).requests;
  assert.equal(hop.status, 301);
  assert.equal(hop.finished, true);
  assert.equal(final.url, 'https://a.test/new');
});

test('events of child sessions and of other domains are ignored', () => {
  const log = new NetworkLog();
  log.handle({ tabId: 4, sessionId: 'iframe' }, ...sent('1', 'https://a.test/'));
  log.handle(tab, 'Page.loadEventFired', { requestId: '2' });
  assert.deepEqual(log.requests(4), { requests: [], dropped: 0, earlier: 0 });
});

test('a new document in the main frame ends the old document\'s requests Chrome never reports finished', () => {
  const log = new NetworkLog();
  log.handle({ tabId: 5 }, 'Network.requestWillBeSent', { requestId: 'old', loaderId: 'L1', request: { url: 'https://a.test/font' } }, 1_000);
  log.handle({ tabId: 5 }, 'Network.requestWillBeSent', { requestId: 'doc', loaderId: 'L2', request: { url: 'https://a.test/next' } }, 1_100);
  log.handle({ tabId: 5 }, 'Page.frameNavigated', { frame: { id: 'main', loaderId: 'L2' } }, 1_150);
  assert.equal(log.quiet(5, 1_200).inFlight, 1, 'the new document\'s own request stays in flight');
  // An iframe navigating does not end anything.
  log.handle({ tabId: 5 }, 'Page.frameNavigated', { frame: { id: 'child', parentId: 'main', loaderId: 'L3' } }, 1_300);
  assert.equal(log.quiet(5, 1_300).inFlight, 1);
  assert.equal(log.requests(5).requests[0]._loader, undefined, 'internal fields stay inside');
  // Frames that were loading when their document went away do not keep the tab loading.
  log.handle({ tabId: 5 }, 'Page.frameStartedLoading', { frameId: 'ad' }, 1_400);
  log.handle({ tabId: 5 }, 'Page.frameStartedLoading', { frameId: 'main' }, 1_410);
  log.handle({ tabId: 5 }, 'Page.frameNavigated', { frame: { id: 'main', loaderId: 'L4' } }, 1_420);
  log.handle({ tabId: 5 }, 'Page.frameStoppedLoading', { frameId: 'main' }, 1_430);
  assert.equal(log.quiet(5, 1_500).loading, false);
  log.handle({ tabId: 5 }, 'Page.frameStartedLoading', { frameId: 'child' }, 1_600);
  log.handle({ tabId: 5 }, 'Page.frameDetached', { frameId: 'child' }, 1_610);
  assert.equal(log.quiet(5, 1_700).loading, false);
});

test('a frame moved to a process of its own (another site) no longer keeps its requests in flight', () => {
  const log = new NetworkLog();
  const at = { tabId: 6 };
  log.handle(at, 'Network.requestWillBeSent', { requestId: 'page', frameId: 'main', loaderId: 'L1', type: 'Document', request: { url: 'https://a.test/' } }, 1_000);
  log.handle(at, 'Network.loadingFinished', { requestId: 'page' }, 1_010);
  // The embed's document: answered here, then its frame swapped to an out-of-process iframe,
  // whose loading this target never hears the end of.
  log.handle(at, 'Network.requestWillBeSent', { requestId: 'embed', frameId: 'ad', loaderId: 'L2', type: 'Document', request: { url: 'https://b.test/embed' } }, 1_020);
  log.handle(at, 'Network.responseReceived', { requestId: 'embed', type: 'Document', response: { status: 200, statusText: 'OK' } }, 1_030);
  log.handle(at, 'Network.requestWillBeSent', { requestId: 'img', frameId: 'main', loaderId: 'L1', type: 'Image', request: { url: 'https://a.test/i.png' } }, 1_040);
  assert.equal(log.quiet(6, 1_050).inFlight, 2);
  log.handle(at, 'Page.frameDetached', { frameId: 'ad', reason: 'swap' }, 1_060);
  assert.equal(log.quiet(6, 1_070).inFlight, 1, 'the page\'s own image is still loading');
  log.handle(at, 'Network.loadingFinished', { requestId: 'img' }, 1_080);
  assert.equal(log.quiet(6, 1_200).inFlight, 0);
  // It is still listed, as it was answered.
  assert.equal(log.requests(6).requests.find(entry => entry.requestId === 'embed').status, 200);
});

test("a worker's own script, whose end only the worker hears, is never in flight", () => {
  const log = new NetworkLog();
  const at = { tabId: 7 };
  log.handle(at, 'Network.requestWillBeSent', { requestId: '3F2A9C', frameId: 'main', loaderId: 'L1', type: 'Script',
    initiator: { type: 'other', url: 'http://a.test/' }, request: { url: 'http://a.test/editor.worker.js' } }, 1_000);
  // The page's own script, by its parser: in flight until it ends.
  log.handle(at, 'Network.requestWillBeSent', { requestId: '812.4', frameId: 'main', loaderId: 'L1', type: 'Script',
    initiator: { type: 'parser' }, request: { url: 'http://a.test/app.js' } }, 1_000);
  assert.equal(log.quiet(7, 1_010).inFlight, 1);
  log.handle(at, 'Network.loadingFinished', { requestId: '812.4' }, 1_020);
  assert.equal(log.quiet(7, 1_030).inFlight, 0);
  const listed = log.requests(7).requests;
  assert.equal(listed[0].worker, true);
  assert.equal(listed[1].worker, undefined);
});

test('sincePage keeps only the page now shown, from its document request, and counts the earlier ones', () => {
  const log = new NetworkLog();
  const sent = (requestId, url, type, loaderId, extra = {}) =>
    log.handle({ tabId: 9 }, 'Network.requestWillBeSent', { requestId, loaderId, type, request: { url, method: 'GET' }, timestamp: 1, ...extra });
  sent('L1', 'https://a.test/', 'Document', 'L1');
  sent('1.2', 'https://a.test/app.js', 'Script', 'L1');
  log.handle({ tabId: 9 }, 'Page.frameNavigated', { frame: { id: 'F', loaderId: 'L1' } });
  sent('L2', 'https://b.test/', 'Document', 'L2');
  sent('P', 'https://api.test/x', 'Other', 'L2', { initiator: { type: 'preflight' } });
  log.handle({ tabId: 9 }, 'Page.frameNavigated', { frame: { id: 'F', loaderId: 'L2' } });
  sent('2.3', 'https://b.test/data', 'Fetch', 'L2');
  const page = log.requests(9, { sincePage: true });
  assert.deepEqual(page.requests.map(r => r.url), ['https://b.test/', 'https://api.test/x', 'https://b.test/data']);
  assert.equal(page.earlier, 2);
  assert.equal(page.requests[1].preflight, true);
  // Without it, everything kept, as direct clients of the relay read it.
  assert.equal(log.requests(9).requests.length, 5);
  assert.equal(log.requests(9).earlier, 0);
});

test("requests are numbered from 1 on each page, as Playwright MCP numbers them, and a number stays its request's", () => {
  const log = new NetworkLog({ limit: 5 });
  const sent = (requestId, url, type, loaderId, extra = {}) =>
    log.handle({ tabId: 9 }, 'Network.requestWillBeSent', { requestId, loaderId, type, request: { url, method: 'GET' }, timestamp: 1, ...extra });
  sent('L1', 'https://a.test/', 'Document', 'L1');
  log.handle({ tabId: 9 }, 'Page.frameNavigated', { frame: { id: 'F', loaderId: 'L1' } });
  sent('1.1', 'https://a.test/data', 'Fetch', 'L1');
  assert.deepEqual(log.requests(9, { sincePage: true }).requests.map(r => r.index), [1, 2]);
  assert.equal(log.byIndex(9, 2).requestId, '1.1');
  // The next page counts from 1 again; the earlier page's requests have no number.
  sent('L2', 'https://b.test/', 'Document', 'L2');
  log.handle({ tabId: 9 }, 'Page.frameNavigated', { frame: { id: 'F', loaderId: 'L2' } });
  sent('2.1', 'https://b.test/old', 'Fetch', 'L2');
  sent('2.1', 'https://b.test/new', 'Fetch', 'L2', { redirectResponse: { status: 302 } });
  assert.deepEqual(log.requests(9).requests.map(r => r.index), [undefined, undefined, 1, 2, 3]);
  // Each hop of a redirect has its own number; the earlier one says it was redirected.
  const hop = log.byIndex(9, 2);
  assert.equal(hop.redirected, true);
  assert.equal(log.details(9, hop.requestId, hop.hop).request.url, 'https://b.test/old');
  assert.equal(log.details(9, hop.requestId, hop.hop).request.index, 2);
  assert.equal(log.byIndex(9, 3).redirected, false);
  assert.equal(log.details(9, '2.1').request.url, 'https://b.test/new');
  // A number past the page's requests, or of one the ring no longer holds, is said so; the
  // numbers of those it holds do not move.
  assert.match(log.byIndex(9, 4).missing, /the page now shown has 3 requests/);
  for (const id of ['2.2', '2.3', '2.4'])
    sent(id, `https://b.test/${id}`, 'Fetch', 'L2');
  assert.match(log.byIndex(9, 1).missing, /no longer kept: only the last 5 requests/);
  assert.equal(log.byIndex(9, 6).requestId, '2.4');
  assert.deepEqual(log.requests(9, { sincePage: true }).requests.map(r => r.index), [2, 3, 4, 5, 6]);
  assert.match(log.byIndex(7, 1).missing, /has 0 requests/);
});

test("the page's status is its document's last hop, once answered", () => {
  const log = new NetworkLog();
  const on = { tabId: 3 };
  const doc = (url, extra = {}) => log.handle(on, 'Network.requestWillBeSent',
    { requestId: 'L1', loaderId: 'L1', type: 'Document', request: { url, method: 'GET' }, timestamp: 1, ...extra });
  assert.equal(log.pageStatus(3), null, 'nothing seen');
  doc('https://a.test/old');
  doc('https://a.test/gone', { redirectResponse: { status: 301, statusText: 'Moved' }, timestamp: 2 });
  log.handle(on, 'Network.responseReceived', { requestId: 'L1', type: 'Document', response: { status: 404, statusText: 'Not Found' } });
  assert.equal(log.pageStatus(3), null, 'not committed yet');
  log.handle(on, 'Page.frameNavigated', { frame: { id: 'F', loaderId: 'L1' } });
  assert.deepEqual(log.pageStatus(3), { status: 404, statusText: 'Not Found' });
});
