// The protocol as the relay sees it, with WebSocket and chrome.* replaced by
// in-memory fakes: what goes out on open, how authenticate is answered, that
// every request gets exactly one reply with its own id, how status and
// connection_closed release state, and how CDP events are addressed.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';

class FakeEvent {
  constructor() { this.listeners = new Set(); }
  addListener(fn) { this.listeners.add(fn); }
  removeListener(fn) { this.listeners.delete(fn); }
  fire(...args) { for (const fn of this.listeners) fn(...args); }
}

class FakeWebSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 3;
  static last = null;
  constructor(url) {
    this.url = url;
    this.readyState = FakeWebSocket.CONNECTING;
    this.sent = [];
    FakeWebSocket.last = this;
  }
  send(data) { this.sent.push(JSON.parse(data)); }
  close(code, reason) { this.readyState = FakeWebSocket.CLOSED; this.closedWith = { code, reason }; }
  // Test side
  open() { this.readyState = FakeWebSocket.OPEN; this.onopen?.(); }
  receive(message) { this.onmessage?.({ data: typeof message === 'string' ? message : JSON.stringify(message) }); }
  drop(code, reason) { this.readyState = FakeWebSocket.CLOSED; this.onclose?.({ code, reason }); }
}

let chromeLog;
function installFakeChrome() {
  chromeLog = { attached: new Set(), detached: [], commands: [] };
  const openTabs = new Map([[1, { id: 1, url: 'https://a.test/', title: 'A', windowId: 1, active: true }],
    [2, { id: 2, url: 'https://b.test/', title: 'B', windowId: 1, active: false }]]);
  globalThis.chrome = {
    debugger: {
      onEvent: new FakeEvent(),
      onDetach: new FakeEvent(),
      attach: async ({ tabId }) => { chromeLog.attached.add(tabId); },
      detach: async ({ tabId }) => { chromeLog.detached.push(tabId); chromeLog.attached.delete(tabId); },
      sendCommand: async (target, method, params) => {
        chromeLog.commands.push({ target, method, params });
        if (method === 'Runtime.evaluate')
          return { result: { type: 'number', value: 2 } };
        return {};
      },
    },
    tabs: {
      onRemoved: new FakeEvent(),
      get: async id => {
        if (!openTabs.has(id))
          throw new Error(`No tab with id: ${id}.`);
        return openTabs.get(id);
      },
      query: async () => [...openTabs.values()],
    },
  };
}

const { RelayConnection } = await import('../lib/relay-connection.js');
const { ConnectionState } = await import('../lib/connection-state.js');
const A = 'conn-aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa';
const B = 'conn-bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb';
const credentials = { name: 'Test Browser', token: 'header.payload.sig', clientId: 'client-1', version: '0.1.0' };
let events;
let state;
let connection;
let ws;

const tick = () => new Promise(resolve => setTimeout(resolve, 0));
const replyTo = id => ws.sent.find(message => message.id === id);

beforeEach(() => {
  installFakeChrome();
  globalThis.WebSocket = FakeWebSocket;
  events = { authenticated: [], status: [], shutdown: [], closed: [], orphans: [] };
  state = new ConnectionState();
  connection = new RelayConnection('ws://relay.test/extension', credentials, state, {
    onAuthenticated: params => events.authenticated.push(params),
    onStatus: params => events.status.push(params),
    onShutdownNotice: reason => events.shutdown.push(reason),
    onClose: event => events.closed.push(event),
    onOrphanReply: reply => events.orphans.push(reply),
  });
  ws = FakeWebSocket.last;
  ws.open();
});

afterEach(async () => {
  connection.close();
  await state.dispose();
  delete globalThis.chrome;
  delete globalThis.WebSocket;
});

test('on open it sends only the build_info notification, never a request', () => {
  assert.deepEqual(ws.sent, [{ jsonrpc: '2.0', method: 'build_info', params: { version: '0.1.0', name: 'Test Browser' } }]);
});

test('authenticate is answered with the same id and every credential field', () => {
  ws.receive({ jsonrpc: '2.0', id: 'proxy:7', method: 'authenticate', params: {} });
  assert.deepEqual(replyTo('proxy:7'), {
    jsonrpc: '2.0',
    id: 'proxy:7',
    result: { name: 'Test Browser', accessToken: 'header.payload.sig', access_token: 'header.payload.sig', client_id: 'client-1', version: '0.1.0' },
  });
});

test('authenticate that is not the relay\'s own, repeated, or late never gets the token', () => {
  const leaked = () => ws.sent.some(m => JSON.stringify(m).includes('header.payload.sig'));
  // A forwarded request carries a connection id, not a proxy: id.
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'authenticate', params: {} });
  ws.receive({ jsonrpc: '2.0', id: 7, method: 'authenticate', params: {} });
  assert.equal(replyTo(`${A}:1`).error.code, -32600);
  assert.equal(replyTo(7).error.code, -32600);
  assert.ok(!leaked());
  // The relay's own request is answered once; a second one on the same socket is refused.
  ws.receive({ jsonrpc: '2.0', id: 'proxy:1', method: 'authenticate', params: {} });
  assert.equal(replyTo('proxy:1').result.accessToken, 'header.payload.sig');
  ws.receive({ jsonrpc: '2.0', id: 'proxy:2', method: 'authenticate', params: {} });
  assert.equal(replyTo('proxy:2').error.code, -32600);
  assert.equal(ws.sent.filter(m => JSON.stringify(m).includes('header.payload.sig')).length, 1);
});

test('authenticate after authenticated is refused', () => {
  ws.receive({ jsonrpc: '2.0', method: 'authenticated', params: { user_id: 'u', extension_id: 'ext-1', client_id: 'client-1' } });
  ws.receive({ jsonrpc: '2.0', id: 'proxy:1', method: 'authenticate', params: {} });
  assert.equal(replyTo('proxy:1').error.code, -32600);
  assert.ok(!ws.sent.some(m => JSON.stringify(m).includes('header.payload.sig')));
});

test('authenticated, status and shutdown reach the supervisor', () => {
  ws.receive({ jsonrpc: '2.0', method: 'authenticated', params: { user_id: 'u', extension_id: 'ext-1', client_id: 'client-1' } });
  ws.receive({ jsonrpc: '2.0', method: 'status', params: { connected: true, peer_count: 2, timestamp: 't', connection_ids: [A, B] } });
  ws.receive({ jsonrpc: '2.0', method: 'shutdown', params: { reason: 'maintenance' } });
  assert.equal(events.authenticated[0].extension_id, 'ext-1');
  assert.equal(events.status[0].peer_count, 2);
  assert.deepEqual(events.shutdown, ['maintenance']);
  assert.equal(ws.sent.length, 1, 'notifications are never answered');
});

test('an unknown method gets -32601 with the request id', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'teleport', params: {} });
  await tick();
  assert.equal(replyTo(`${A}:1`).error.code, -32601);
});

test('bad params get -32602 naming the parameter', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:2`, method: 'selectTab', params: { tabId: 'one' } });
  await tick();
  assert.equal(replyTo(`${A}:2`).error.code, -32602);
  assert.match(replyTo(`${A}:2`).error.message, /tabId/);
});

test('invalid JSON gets a parse error with a null id', () => {
  ws.receive('{not json');
  assert.equal(ws.sent.at(-1).error.code, -32700);
  assert.equal(ws.sent.at(-1).id, null);
});

test('each request is answered exactly once, with result {} at least', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:3`, method: 'selectTab', params: { tabId: 1 } });
  ws.receive({ jsonrpc: '2.0', id: 42, method: 'getTabs' });
  await tick();
  await tick();
  for (const id of [`${A}:3`, 42]) {
    const replies = ws.sent.filter(message => message.id === id);
    assert.equal(replies.length, 1, `one reply for ${id}`);
    assert.ok('result' in replies[0]);
  }
});

test('a tab selected by one connection is refused to another', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 1 } });
  await tick();
  ws.receive({ jsonrpc: '2.0', id: `${B}:1`, method: 'selectTab', params: { tabId: 1 } });
  await tick();
  assert.deepEqual(replyTo(`${B}:1`).error, { code: -32000, message: replyTo(`${B}:1`).error.message });
  assert.match(replyTo(`${B}:1`).error.message, /tab 1 belongs to another MCP connection/);
});

test('connection_closed releases the tab and detaches the debugger', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 1 } });
  await tick();
  ws.receive({ jsonrpc: '2.0', id: `${A}:2`, method: 'evaluate', params: { expression: '1+1' } });
  await tick();
  await tick();
  assert.deepEqual(replyTo(`${A}:2`).result, { value: 2, type: 'number' });
  assert.ok(chromeLog.attached.has(1));
  ws.receive({ jsonrpc: '2.0', method: 'connection_closed', params: { connection_id: A, reason: 'gone' } });
  await tick();
  assert.deepEqual(chromeLog.detached, [1]);
  ws.receive({ jsonrpc: '2.0', id: `${B}:1`, method: 'selectTab', params: { tabId: 1 } });
  await tick();
  assert.equal(replyTo(`${B}:1`).result.tabId, 1);
});

test('status without a connection releases it; direct is never pruned', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 1 } });
  ws.receive({ jsonrpc: '2.0', id: 5, method: 'selectTab', params: { tabId: 2 } });
  await tick();
  ws.receive({ jsonrpc: '2.0', method: 'status', params: { connected: true, peer_count: 1, timestamp: 't', connection_ids: [B] } });
  ws.receive({ jsonrpc: '2.0', id: `${B}:1`, method: 'selectTab', params: { tabId: 1 } });
  ws.receive({ jsonrpc: '2.0', id: `${B}:2`, method: 'selectTab', params: { tabId: 2 } });
  await tick();
  assert.equal(replyTo(`${B}:1`).result.tabId, 1, 'A was not listed, so its tab is free');
  assert.match(replyTo(`${B}:2`).error.message, /belongs to another/, 'the direct connection keeps its tab');
});

test('CDP events go to the owning connection with a top-level connectionId', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 1 } });
  await tick();
  ws.receive({ jsonrpc: '2.0', id: `${A}:2`, method: 'forwardCDPCommand', params: { method: 'Network.enable' } });
  await tick();
  await tick();
  assert.deepEqual(replyTo(`${A}:2`).result, {});
  chrome.debugger.onEvent.fire({ tabId: 1 }, 'Network.requestWillBeSent', { requestId: 'r1' });
  chrome.debugger.onEvent.fire({ tabId: 2 }, 'Network.requestWillBeSent', { requestId: 'r2' });
  const forwarded = ws.sent.filter(message => message.method === 'forwardCDPEvent');
  assert.deepEqual(forwarded, [{
    jsonrpc: '2.0',
    method: 'forwardCDPEvent',
    params: { tabId: 1, method: 'Network.requestWillBeSent', params: { requestId: 'r1' } },
    connectionId: A,
  }]);
});

test('CDP events the extension caused itself (a muted screencast kick) are not forwarded', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 1 } });
  await tick();
  ws.receive({ jsonrpc: '2.0', id: `${A}:2`, method: 'forwardCDPCommand', params: { method: 'Page.enable' } });
  await tick();
  await tick();
  const unmute = state.debuggers.mute(1, 'Page.screencastFrame');
  chrome.debugger.onEvent.fire({ tabId: 1 }, 'Page.screencastFrame', { sessionId: 1 });
  chrome.debugger.onEvent.fire({ tabId: 1 }, 'Page.loadEventFired', {});
  unmute();
  chrome.debugger.onEvent.fire({ tabId: 1 }, 'Page.screencastFrame', { sessionId: 2 });
  const forwarded = ws.sent.filter(message => message.method === 'forwardCDPEvent').map(m => m.params);
  assert.deepEqual(forwarded, [
    { tabId: 1, method: 'Page.loadEventFired', params: {} },
    { tabId: 1, method: 'Page.screencastFrame', params: { sessionId: 2 } },
  ]);
});

test('a tab closed by the user is dropped from ownership', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 2 } });
  await tick();
  chrome.tabs.onRemoved.fire(2, {});
  ws.receive({ jsonrpc: '2.0', id: `${A}:2`, method: 'getTabs', params: {} });
  await tick();
  await tick();
  assert.equal(replyTo(`${A}:2`).result.currentTabId, null);
});

test('a drop reports code and reason, and removes exactly the listener it added', () => {
  // One forwards the socket's events, the other keeps the shared state's dialogs and console.
  assert.equal(chrome.debugger.onEvent.listeners.size, 2);
  ws.drop(1008, 'invalid token');
  assert.deepEqual(events.closed, [{ code: 1008, reason: 'invalid token', opened: true }]);
  assert.equal(chrome.debugger.onEvent.listeners.size, 1, 'the shared state keeps its event listener');
  assert.equal(chrome.debugger.onDetach.listeners.size, 1, 'the shared state keeps its bookkeeping listeners');
  assert.equal(chrome.tabs.onRemoved.listeners.size, 1);
});

test('tab ownership survives a socket drop; the shared state holds it', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 1 } });
  await tick();
  ws.drop(1006, '');
  assert.equal(state.tabs.ownerOf(1), A);
  assert.equal(state.tabs.currentTab(A), 1);
});

test('a reply finished after the socket closed is handed over, not lost or sent twice', async () => {
  ws.receive({ jsonrpc: '2.0', id: `${A}:9`, method: 'getTabs', params: {} });
  ws.drop(1006, '');
  await tick();
  await tick();
  assert.equal(replyTo(`${A}:9`), undefined);
  assert.equal(events.orphans.length, 1);
  assert.equal(events.orphans[0].id, `${A}:9`);
  assert.ok(Array.isArray(events.orphans[0].result.tabs));
});

test('the shared state removes exactly the listeners it added', async () => {
  await state.dispose();
  assert.equal(chrome.debugger.onDetach.listeners.size, 0);
  assert.equal(chrome.debugger.onEvent.listeners.size, 1, "only the open socket's own listener is left");
  assert.equal(chrome.tabs.onRemoved.listeners.size, 0);
});
