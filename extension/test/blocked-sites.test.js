// Site patterns as the options page and dev-config.json give them: which URLs they put off limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedSiteError, blockingPattern, parseSitePattern, parseSitePatterns } from '../lib/blocked-sites.js';

const patterns = parseSitePatterns(['*.mybank.com', 'mail.example.com/*', 'https://shop.test/account/*', '', '# comment']);

test('a star-dot pattern blocks the domain itself and every subdomain, over any scheme and port', () => {
  for (const url of ['https://mybank.com/', 'http://www.mybank.com/login', 'https://a.b.mybank.com:8443/x'])
    assert.equal(blockingPattern(patterns, url)?.source, '*.mybank.com', url);
  assert.equal(blockingPattern(patterns, 'https://notmybank.com/'), undefined);
  assert.equal(blockingPattern(patterns, 'https://mybank.com.evil.test/'), undefined);
});

test('a host without a star blocks that host only', () => {
  assert.ok(blockingPattern(patterns, 'https://mail.example.com/inbox?x=1'));
  assert.equal(blockingPattern(patterns, 'https://example.com/'), undefined);
  assert.equal(blockingPattern(patterns, 'https://other.mail.example.com/'), undefined);
});

test('a path pattern blocks only the paths it names', () => {
  assert.ok(blockingPattern(patterns, 'https://shop.test/account/orders'));
  assert.equal(blockingPattern(patterns, 'https://shop.test/catalog'), undefined);
});

test('pages without a host and unparsable URLs pass', () => {
  for (const url of ['about:blank', 'data:text/html,hi', 'not a url', '', undefined])
    assert.equal(blockingPattern(patterns, url), undefined);
});

test('blank lines, comments and host-less patterns are ignored', () => {
  assert.equal(patterns.length, 3);
  assert.equal(parseSitePattern('*'), null);
  assert.equal(parseSitePattern('/path/only'), null);
  assert.equal(parseSitePattern('MyBank.COM').host, 'mybank.com');
});

test('the refusal names the site and the tab but not the pattern', () => {
  const error = blockedSiteError('https://www.mybank.com/login', 7);
  assert.equal(error.code, -32000);
  assert.match(error.message, /www\.mybank\.com \(tab 7\) is off limits/);
  assert.doesNotMatch(error.message, /\*\./);
});
