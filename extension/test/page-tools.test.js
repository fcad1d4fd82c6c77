// Issue 23's pure parts: the downloads an agent's actions capture (announced by an agent
// tab, claimed from chrome.downloads, taken once), emulateMedia's per-tab overrides, and the
// drop command's params.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DownloadBook, MATCH_WINDOW_MS, MAX_KEPT, decodeDataUrl, safeName, toBase64 } from '../lib/downloads.js';
import { emulatedMediaParams, mergeMedia } from '../lib/media.js';
import { COMMANDS } from '../lib/commands.js';
import { validateParams } from '../lib/params.js';
import { ErrorCode } from '../lib/rpc.js';

test('only a download an agent tab announced is claimed, once, and only for a while', () => {
  const book = new DownloadBook();
  book.announce(7, 'conn-a', { guid: 'g1', url: 'http://site/report.csv', suggestedFilename: 'report.csv' }, 1_000);
  // The person's own download of another URL is not the agent's.
  assert.equal(book.claim({ url: 'http://site/other.zip' }, 1_010), undefined);
  const claimed = book.claim({ url: 'http://site/report.csv' }, 1_020);
  assert.deepEqual({ tabId: claimed.tabId, connectionId: claimed.connectionId, filename: claimed.filename }, { tabId: 7, connectionId: 'conn-a', filename: 'report.csv' });
  assert.equal(book.claim({ url: 'http://site/report.csv' }, 1_030), undefined, 'one announcement, one item');
  book.announce(7, 'conn-a', { url: 'blob:http://site/1' }, 2_000);
  assert.equal(book.hasAnnounced(2_000), true);
  assert.equal(book.claim({ url: 'blob:http://site/1' }, 2_000 + MATCH_WINDOW_MS + 1), undefined, 'stale announcements expire');
  assert.equal(book.startedIn(7, 2_000), false, 'an expired announcement is no evidence');
  book.announce(7, 'conn-a', { url: 'http://site/x.csv' }, Date.now());
  assert.equal(book.startedIn(7, Date.now() - 1_000), true);
  assert.equal(book.startedIn(8, Date.now() - 1_000), false, 'another tab');
  book.claim({ url: 'http://site/x.csv' });
  // A redirect: Chrome's item names the final URL.
  book.announce(7, 'conn-a', { url: 'http://site/final.bin' }, 3_000);
  assert.ok(book.claim({ url: 'http://site/start', finalUrl: 'http://site/final.bin' }, 3_001));
});

test('an action sees the downloads its tab started since it began, once fetched', async () => {
  const book = new DownloadBook();
  const before = book.start({ connectionId: 'conn-a', tabId: 7, url: 'http://site/old', filename: 'old' }, 500);
  const id = book.start({ connectionId: 'conn-a', tabId: 7, url: 'http://site/a.bin', filename: 'a.bin', mimeType: 'application/octet-stream' }, 1_000);
  book.start({ connectionId: 'conn-b', tabId: 8, url: 'http://site/b.bin', filename: 'b.bin' }, 1_000);
  setTimeout(() => book.complete(id, 'AAEC', 3), 10);
  const rows = await book.startedSince('conn-a', 7, 900, 5_000);
  assert.deepEqual(rows, [{ id, url: 'http://site/a.bin', filename: 'a.bin', mimeType: 'application/octet-stream', bytes: 3, state: 'complete' }]);
  // Still running after the wait: reported in progress.
  const slow = await book.startedSince('conn-a', 7, 400, 20);
  assert.deepEqual(slow.map(row => [row.id, row.state]), [[before, 'in_progress'], [id, 'complete']]);
  assert.deepEqual(book.list('conn-b').map(row => row.filename), ['b.bin']);
});

test('a download is taken once, by its connection, within the size limit', () => {
  const book = new DownloadBook();
  const id = book.start({ connectionId: 'conn-a', tabId: 7, url: 'u', filename: 'f.bin' });
  assert.equal(book.take('conn-a', id).reason, 'in_progress');
  book.complete(id, 'AAECAw==', 4, 'application/x-test');
  assert.equal(book.take('conn-b', id).reason, 'unknown', 'another connection cannot take it');
  assert.deepEqual(book.take('conn-a', id), { ok: true, download: { id, filename: 'f.bin', mimeType: 'application/x-test', bytes: 4, data: 'AAECAw==' } });
  assert.equal(book.take('conn-a', id).reason, 'unknown', 'forgotten once taken');
  const big = book.start({ connectionId: 'conn-a', tabId: 7, url: 'u', filename: 'big' });
  book.complete(big, 'AAECAw==', 4);
  assert.equal(book.take('conn-a', big, 3).reason, 'too-large');
  assert.equal(book.list('conn-a').length, 0, 'a download above the limit is forgotten too');
  const failed = book.start({ connectionId: 'conn-a', tabId: 7, url: 'u', filename: 'x' });
  book.fail(failed, 'HTTP 404');
  assert.equal(book.take('conn-a', failed).row.error, 'HTTP 404');
});

test('downloads nobody takes are bounded per connection and dropped with it', () => {
  const book = new DownloadBook();
  for (let i = 0; i < MAX_KEPT + 5; i++)
    book.start({ connectionId: 'conn-a', tabId: 1, url: `u${i}`, filename: `f${i}` });
  assert.equal(book.list('conn-a').length, MAX_KEPT);
  assert.equal(book.list('conn-a')[0].filename, 'f5', 'the oldest go first');
  book.start({ connectionId: 'conn-b', tabId: 2, url: 'u', filename: 'b' });
  book.retainOnly(['conn-b']);
  assert.equal(book.list('conn-a').length, 0);
  assert.equal(book.list('conn-b').length, 1, 'connections the relay still lists keep theirs');
  book.forgetConnection('conn-b');
  assert.equal(book.list('conn-b').length, 0);
});

test('file names lose directories and control characters; bytes survive base64 and data: URLs', () => {
  assert.equal(safeName('../../etc/passwd'), 'passwd');
  assert.equal(safeName('C:\\Users\\x\\report\u0007.csv'), 'report.csv');
  assert.equal(safeName('..'), '');
  const bytes = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256);
  assert.deepEqual(Buffer.from(toBase64(bytes), 'base64'), Buffer.from(bytes));
  assert.deepEqual(decodeDataUrl('data:text/csv;charset=utf-8,a%2Cb%0A%C3%A9'), { base64: Buffer.from('a,b\né').toString('base64'), bytes: 6, mimeType: 'text/csv' });
  assert.equal(decodeDataUrl('data:application/octet-stream;base64,AAEC').bytes, 3);
});

test('emulateMedia changes only what it names, and null clears an override', () => {
  let media = mergeMedia({}, { colorScheme: 'dark', media: 'print' });
  assert.deepEqual(emulatedMediaParams(media), { media: 'print', features: [{ name: 'prefers-color-scheme', value: 'dark' }] });
  media = mergeMedia(media, { reducedMotion: 'reduce' });
  assert.deepEqual(media, { colorScheme: 'dark', media: 'print', reducedMotion: 'reduce' });
  media = mergeMedia(media, { media: null, colorScheme: undefined });
  assert.deepEqual(emulatedMediaParams(media), {
    media: '', features: [{ name: 'prefers-color-scheme', value: 'dark' }, { name: 'prefers-reduced-motion', value: 'reduce' }],
  });
  assert.deepEqual(emulatedMediaParams(mergeMedia(media, { colorScheme: null, reducedMotion: null })), { media: '', features: [] });
});

test('emulateMedia keeps null (clear) apart from absent, and refuses values Playwright does not know', () => {
  assert.deepEqual(validateParams(COMMANDS.emulateMedia.params, { colorScheme: null, media: 'print' }), { colorScheme: null, media: 'print' });
  assert.throws(() => validateParams(COMMANDS.emulateMedia.params, { colorScheme: 'sepia' }), error => error.code === ErrorCode.INVALID_PARAMS && /colorScheme/.test(error.message));
});

test('drop names its element by ref or selector and carries files and/or data', async () => {
  const params = validateParams(COMMANDS.drop.params, { ref: 'e3', data: { 'text/plain': 'hi' } });
  assert.deepEqual(params, { ref: 'e3', data: { 'text/plain': 'hi' } });
  const ctx = { connectionId: 'conn-a', tabs: { currentTab: () => 1 }, debuggers: {} };
  await assert.rejects(COMMANDS.drop.run(ctx, { ref: 'e3' }), error => error.code === ErrorCode.INVALID_PARAMS && /"files" or "data"/.test(error.message));
  await assert.rejects(COMMANDS.drop.run(ctx, { data: { 'text/plain': 'x' } }), error => error.code === ErrorCode.INVALID_PARAMS && /ref/.test(error.message));
});
