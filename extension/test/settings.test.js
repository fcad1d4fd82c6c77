import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultBrowserName, mergeSettings, normalizeRelayUrl, resolveRelayUrl } from '../lib/settings.js';

const b64url = value => Buffer.from(JSON.stringify(value)).toString('base64url');
const jwt = claims => `${b64url({ alg: 'HS256' })}.${b64url(claims)}.sig`;

test('appends /extension to a URL without a path', () => {
  assert.equal(normalizeRelayUrl('ws://127.0.0.1:8080'), 'ws://127.0.0.1:8080/extension');
  assert.equal(normalizeRelayUrl('wss://relay.example.com/'), 'wss://relay.example.com/extension');
});

test('keeps a URL that already ends in /extension, minus a trailing slash', () => {
  assert.equal(normalizeRelayUrl('ws://h:1/extension'), 'ws://h:1/extension');
  assert.equal(normalizeRelayUrl('ws://h:1/extension/'), 'ws://h:1/extension');
  assert.equal(normalizeRelayUrl('wss://h/relay/extension'), 'wss://h/relay/extension');
});

test('appends /extension under another path and swaps a trailing /mcp', () => {
  assert.equal(normalizeRelayUrl('wss://h/relay'), 'wss://h/relay/extension');
  assert.equal(normalizeRelayUrl('wss://h/mcp'), 'wss://h/extension');
  assert.equal(normalizeRelayUrl('wss://h/relay/mcp/'), 'wss://h/relay/extension');
});

test('turns http(s) into ws(s) and keeps the query', () => {
  assert.equal(normalizeRelayUrl('http://h:8080'), 'ws://h:8080/extension');
  assert.equal(normalizeRelayUrl('https://h/?x=1'), 'wss://h/extension?x=1');
});

test('rejects URLs that cannot be a relay', () => {
  assert.throws(() => normalizeRelayUrl('not a url'), /not a valid URL/);
  assert.throws(() => normalizeRelayUrl('ftp://h'), /ws:\/\/ or wss:\/\//);
});

test('a configured URL wins over the token claim', () => {
  const token = jwt({ connection_url: 'wss://from-token.example' });
  assert.equal(resolveRelayUrl({ relayUrl: 'ws://configured:1', token }), 'ws://configured:1/extension');
});

test('without a URL, the token connection_url claim is used', () => {
  const token = jwt({ connection_url: 'wss://from-token.example/mcp' });
  assert.equal(resolveRelayUrl({ relayUrl: '  ', token }), 'wss://from-token.example/extension');
});

test('no URL and no claim means nothing to dial', () => {
  assert.equal(resolveRelayUrl({ relayUrl: '', token: jwt({ sub: 'x' }) }), null);
  assert.equal(resolveRelayUrl({ relayUrl: '', token: '' }), null);
});

test('dev-config overrides stored settings; enabled defaults to on', () => {
  const stored = { relayUrl: 'ws://stored', token: 'stored-token', name: 'Stored' };
  const merged = mergeSettings(stored, { relayUrl: 'ws://dev', token: 'dev-token' }, 'Chrome 1');
  assert.deepEqual(merged, { relayUrl: 'ws://dev', token: 'dev-token', name: 'Stored', enabled: true, fromDevConfig: true });
});

test('stored settings apply without dev-config, and the switch can turn them off', () => {
  const merged = mergeSettings({ relayUrl: ' ws://stored ', token: 't', enabled: false }, null, 'Chrome 1');
  assert.deepEqual(merged, { relayUrl: 'ws://stored', token: 't', name: 'Chrome 1', enabled: false, fromDevConfig: false });
});

test('blank or non-string dev-config values fall back to stored ones', () => {
  const merged = mergeSettings({ token: 'stored' }, { token: '  ', name: 7 }, 'Chrome 1');
  assert.equal(merged.token, 'stored');
  assert.equal(merged.name, 'Chrome 1');
});

test('default browser name comes from the user agent', () => {
  const ua = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36';
  assert.equal(defaultBrowserName(ua), 'Chrome 141');
  assert.equal(defaultBrowserName(`${ua} Edg/141.0.0.0`), 'Edge 141');
  assert.equal(defaultBrowserName('curl/8'), 'Chrome');
});
