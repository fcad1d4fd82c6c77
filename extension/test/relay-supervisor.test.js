// Reconnect, error reporting and the fate of MCP connection state across
// sockets, with WebSocket and chrome.* replaced by in-memory fakes.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';

class FakeEvent {
  constructor() { this.listeners = new Set(); }
  addListener(fn) { this.listeners.add(fn); }
  removeListener(fn) { this.listeners.delete(fn); }
}

class FakeWebSocket {
  static OPEN = 1;
  static CLOSED = 3;
  static all = [];
  constructor(url) { this.url = url; this.readyState = 0; this.sent = []; FakeWebSocket.all.push(this); }
  send(data) { this.sent.push(JSON.parse(data)); }
  close() { this.readyState = FakeWebSocket.CLOSED; }
  open() { this.readyState = FakeWebSocket.OPEN; this.onopen?.(); }
  receive(message) { this.onmessage?.({ data: JSON.stringify(message) }); }
  drop(code, reason = '') { this.readyState = FakeWebSocket.CLOSED; this.onclose?.({ code, reason }); }
}

globalThis.WebSocket = FakeWebSocket;
const { RelaySupervisor } = await import('../lib/relay-supervisor.js');
const { Backoff } = await import('../lib/backoff.js');

const A = 'conn-aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa';
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const until = async (condition, what, ms = 2000) => {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > ms)
      throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
};

let settings;
let published;
let supervisor;

beforeEach(() => {
  FakeWebSocket.all = [];
  globalThis.chrome = {
    runtime: { getPlatformInfo: async () => ({}) },
    debugger: {
      onEvent: new FakeEvent(),
      onDetach: new FakeEvent(),
      attach: async () => {},
      detach: async () => {},
      sendCommand: async () => ({}),
    },
    tabs: {
      onRemoved: new FakeEvent(),
      get: async id => ({ id, url: 'https://a.test/', title: 'A' }),
      query: async () => [{ id: 7, url: 'https://a.test/', title: 'A', windowId: 1, active: true }],
    },
  };
  settings = { relayUrl: 'ws://127.0.0.1:9', token: 'a.b.c', name: 'Test', enabled: true, fromDevConfig: true };
  published = [];
  supervisor = new RelaySupervisor({
    loadSettings: async () => ({ ...settings }),
    loadClientId: async () => 'client-1',
    version: '0.1.0',
    publish: state => published.push(state),
    backoff: new Backoff({ initialMs: 20, maxMs: 100, random: () => 0.999 }),
    timing: { statusWaitMs: 40, reconnectGraceMs: 150 },
  });
});

afterEach(async () => {
  await supervisor.stop();
  delete globalThis.chrome;
});

const last = () => published.at(-1);
const socket = n => FakeWebSocket.all[n];

async function connectAndAuthenticate(n) {
  await until(() => socket(n), `socket #${n}`);
  socket(n).open();
  socket(n).receive({ jsonrpc: '2.0', id: 'proxy:1', method: 'authenticate', params: {} });
  socket(n).receive({ jsonrpc: '2.0', method: 'authenticated', params: { user_id: 'u', extension_id: 'ext-1', client_id: 'client-1' } });
}

test('dials the normalised URL and reports connecting, then authenticated with the extension id', async () => {
  supervisor.restart();
  await until(() => socket(0), 'a socket');
  assert.equal(socket(0).url, 'ws://127.0.0.1:9/extension');
  assert.equal(last().state, 'connecting');
  await connectAndAuthenticate(0);
  assert.equal(last().state, 'authenticated');
  assert.equal(last().extensionId, 'ext-1');
  socket(0).receive({ jsonrpc: '2.0', method: 'status', params: { connected: true, peer_count: 3, timestamp: 't', connection_ids: [] } });
  assert.equal(last().peerCount, 3);
});

test('a 1008 close shows the reason and retries with growing delays', async () => {
  supervisor.restart();
  await until(() => socket(0), 'socket #0');
  socket(0).open();
  socket(0).drop(1008, 'invalid token: expired');
  assert.equal(last().state, 'disconnected');
  assert.match(last().lastError, /invalid token: expired/);
  assert.ok(last().nextRetryAt > Date.now() - 5);
  await until(() => socket(1), 'first retry');
  socket(1).open();
  socket(1).drop(1008, 'invalid token: expired');
  await until(() => socket(2), 'second retry');
  assert.match(published.findLast(s => s.lastError).lastError, /invalid token/);
});

test('the shutdown notice explains the 1001 close that follows', async () => {
  supervisor.restart();
  await connectAndAuthenticate(0);
  socket(0).receive({ jsonrpc: '2.0', method: 'shutdown', params: { reason: 'relay upgrading' } });
  socket(0).drop(1001, '');
  assert.match(last().lastError, /went away: relay upgrading/);
  await until(() => socket(1), 'reconnect after shutdown');
});

test('missing token or URL is reported without dialling', async () => {
  settings.token = '';
  await supervisor.restart();
  assert.equal(FakeWebSocket.all.length, 0);
  assert.match(last().lastError, /No access token/);
  settings = { ...settings, token: 'a.b.c', relayUrl: '' };
  await supervisor.restart();
  assert.equal(FakeWebSocket.all.length, 0);
  assert.match(last().lastError, /No relay URL/);
});

test('the switch turned off means no socket and no error', async () => {
  settings.enabled = false;
  await supervisor.restart();
  assert.equal(FakeWebSocket.all.length, 0);
  assert.equal(last().state, 'disconnected');
  assert.equal(last().lastError, null);
});

test('connections the relay carried over to the new socket keep their tabs', async () => {
  supervisor.restart();
  await connectAndAuthenticate(0);
  socket(0).receive({ jsonrpc: '2.0', method: 'status', params: { connected: true, peer_count: 1, timestamp: 't', connection_ids: [A] } });
  socket(0).receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 7 } });
  await until(() => socket(0).sent.some(m => m.id === `${A}:1`), 'selectTab reply');
  socket(0).drop(1006);
  await connectAndAuthenticate(1);
  // The relay sends status right behind authenticated when it kept the connection.
  socket(1).receive({ jsonrpc: '2.0', method: 'status', params: { connected: true, peer_count: 1, timestamp: 't', connection_ids: [A] } });
  await sleep(80);
  socket(1).receive({ jsonrpc: '2.0', id: `${A}:2`, method: 'getTabs', params: {} });
  await until(() => socket(1).sent.some(m => m.id === `${A}:2`), 'getTabs reply');
  assert.equal(socket(1).sent.find(m => m.id === `${A}:2`).result.currentTabId, 7);
});

test('without a status after authenticated, old connections are released', async () => {
  supervisor.restart();
  await connectAndAuthenticate(0);
  socket(0).receive({ jsonrpc: '2.0', method: 'status', params: { connected: true, peer_count: 1, timestamp: 't', connection_ids: [A] } });
  socket(0).receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 7 } });
  await until(() => socket(0).sent.some(m => m.id === `${A}:1`), 'selectTab reply');
  socket(0).drop(1006);
  await connectAndAuthenticate(1);
  await sleep(80);
  socket(1).receive({ jsonrpc: '2.0', id: `${A}:2`, method: 'getTabs', params: {} });
  await until(() => socket(1).sent.some(m => m.id === `${A}:2`), 'getTabs reply');
  assert.equal(socket(1).sent.find(m => m.id === `${A}:2`).result.currentTabId, null);
});

test('a relay that stays away does not keep tabs owned forever', async () => {
  supervisor.restart();
  await connectAndAuthenticate(0);
  socket(0).receive({ jsonrpc: '2.0', id: `${A}:1`, method: 'selectTab', params: { tabId: 7 } });
  await until(() => socket(0).sent.some(m => m.id === `${A}:1`), 'selectTab reply');
  socket(0).drop(1006);
  for (let n = 1; n < 4; n++) {
    await until(() => socket(n), `retry ${n}`, 3000);
    socket(n).drop(1006);
  }
  await sleep(200);
  await connectAndAuthenticate(4);
  socket(4).receive({ jsonrpc: '2.0', method: 'status', params: { connected: true, peer_count: 1, timestamp: 't', connection_ids: [A] } });
  socket(4).receive({ jsonrpc: '2.0', id: `${A}:2`, method: 'getTabs', params: {} });
  await until(() => socket(4).sent.some(m => m.id === `${A}:2`), 'getTabs reply');
  assert.equal(socket(4).sent.find(m => m.id === `${A}:2`).result.currentTabId, null, 'released after the grace period');
});

test('a reply that finished between sockets goes out once on the next authenticated socket', async () => {
  let finish;
  chrome.tabs.get = id => new Promise(resolve => { finish = () => resolve({ id, url: 'https://a.test/', title: 'A' }); });
  supervisor.restart();
  await connectAndAuthenticate(0);
  socket(0).receive({ jsonrpc: '2.0', id: `${A}:5`, method: 'selectTab', params: { tabId: 3 } });
  socket(0).drop(1006);
  await until(() => finish, 'command started');
  finish();
  await sleep(5);
  await until(() => socket(1), 'reconnect');
  assert.equal(socket(1).sent.some(m => m.id === `${A}:5`), false, 'not before authentication');
  await connectAndAuthenticate(1);
  const replies = [...socket(0).sent, ...socket(1).sent].filter(m => m.id === `${A}:5`);
  assert.equal(replies.length, 1);
  assert.equal(replies[0].result.tabId, 3);
  assert.equal(socket(1).sent.includes(replies[0]), true);
});
