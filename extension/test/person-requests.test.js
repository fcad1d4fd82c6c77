// Hand-offs to the person (issue 29): the book that keeps them (waiting, answered, timed out,
// withdrawn), and the commands that open one, wait for it in bounded calls and refuse other
// calls on the handed-off tab, against a fake chrome.tabs.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { runCommand } from '../lib/commands.js';
import { PersonRequests } from '../lib/person-requests.js';
import { TabOwnership } from '../lib/tabs.js';

const PAGE = { url: 'https://login.test/', title: 'Sign in' };
const open = (book, extra = {}) => book.open({
  kind: 'hand-off', connectionId: 'conn-1', assistant: 'Claude', tabId: 7, reason: 'Log in', page: PAGE, timeoutMs: 60_000, ...extra,
});

test('a hand-off waits until the person answers, and the waiting call wakes at once', async () => {
  const book = new PersonRequests();
  const request = open(book);
  assert.equal(request.status, 'waiting');
  const started = Date.now();
  const waited = book.wait(request.id, 10_000);
  setTimeout(() => book.answer(request.id, 'done'), 30);
  const answered = await waited;
  assert.equal(answered.status, 'done');
  assert.ok(Date.now() - started < 1_000, 'woke when answered, not at the end of the wait');
  assert.equal(book.answer(request.id, 'cancelled').status, 'done', 'a second answer changes nothing');
});

test('one wait without an answer ends after its bounded time, still waiting', async () => {
  const book = new PersonRequests();
  const request = open(book);
  const answered = await book.wait(request.id, 50);
  assert.equal(answered.status, 'waiting');
  assert.equal(book.handOffOn(7)?.id, request.id, 'the tab is still handed off');
  book.answer(request.id, 'cancelled');
  assert.equal(book.handOffOn(7), undefined);
});

test('a hand-off nobody answers times out at the timeout it was given', async () => {
  const book = new PersonRequests();
  const changes = [];
  book.listen((request, change) => changes.push(`${change}:${request.status}`));
  const request = open(book, { timeoutMs: 80 });
  const answered = await book.wait(request.id, 10_000);
  assert.equal(answered.status, 'timed-out');
  assert.deepEqual(changes, ['opened:waiting', 'answered:timed-out']);
  assert.deepEqual(book.waiting(), []);
});

test("a connection that goes away withdraws its hand-offs, not other assistants'", () => {
  const book = new PersonRequests();
  const mine = open(book);
  const theirs = open(book, { connectionId: 'conn-2', tabId: 8 });
  book.withdrawAll('conn-1');
  assert.equal(book.get(mine.id).status, 'withdrawn');
  assert.equal(book.get(theirs.id).status, 'waiting');
  book.answer(theirs.id, 'done');
});

// --- the commands -------------------------------------------------------------------------

let tabs;
beforeEach(() => {
  tabs = new Map([[7, { id: 7, windowId: 1, url: PAGE.url, title: PAGE.title }]]);
  globalThis.chrome = { tabs: { query: async () => [...tabs.values()], get: async id => {
    if (!tabs.has(id))
      throw new Error(`No tab with id: ${id}`);
    return { ...tabs.get(id) };
  } } };
});
afterEach(() => {
  delete globalThis.chrome;
});

function context() {
  const ownership = new TabOwnership();
  ownership.select('conn-1', 7);
  return { connectionId: 'conn-1', tabs: ownership, person: new PersonRequests(), assistantName: 'Claude', debuggers: {} };
}

test('requestHuman parks the tab; awaitHuman answers with what changed once the person clicks Done', async () => {
  const ctx = context();
  const opened = await runCommand(ctx, 'requestHuman', { reason: 'Log in with your account', timeoutSeconds: 60 });
  assert.equal(opened.status, 'waiting');
  assert.equal(opened.tabId, 7);
  assert.equal(ctx.person.waiting()[0].assistant, 'Claude', 'the popup names the assistant');
  const still = await runCommand(ctx, 'awaitHuman', { handoffId: opened.handoffId, waitMs: 20 });
  assert.equal(still.status, 'waiting');
  // The person logs in: the tab moves on; then Done.
  tabs.set(7, { ...tabs.get(7), url: 'https://login.test/account', title: 'Your account' });
  setTimeout(() => ctx.person.answer(opened.handoffId, 'done'), 20);
  const done = await runCommand(ctx, 'awaitHuman', { handoffId: opened.handoffId, waitMs: 5_000 });
  assert.equal(done.status, 'done');
  assert.deepEqual(done.before, PAGE);
  assert.deepEqual(done.after, { url: 'https://login.test/account', title: 'Your account' });
  assert.deepEqual(done.changed, ['url', 'title']);
  assert.match(done.note, /clicked Done/);
});

test('while the person has the tab, other calls on it are refused naming the hand-off; getTabs is not', async () => {
  const ctx = context();
  const opened = await runCommand(ctx, 'requestHuman', { reason: 'Solve the CAPTCHA' });
  for (const [method, params] of [['click', { selector: 'button' }], ['snapshot', {}], ['browser_navigate', { url: 'https://x.test/', tabId: 7 }]]) {
    await assert.rejects(runCommand(ctx, method, params), error => {
      assert.match(error.message, new RegExp(`hand-off ${opened.handoffId}: "Solve the CAPTCHA"`));
      assert.match(error.message, /nothing was done/);
      return true;
    }, method);
  }
  await assert.rejects(runCommand(ctx, 'requestHuman', { reason: 'again' }), /already handed to the person/);
  const listed = await runCommand(ctx, 'getTabs', {});
  assert.equal(listed.tabs[0].tabId, 7);
  ctx.person.answer(opened.handoffId, 'cancelled');
  const cancelled = await runCommand(ctx, 'awaitHuman', { handoffId: opened.handoffId });
  assert.equal(cancelled.status, 'cancelled');
  assert.match(cancelled.note, /Do not ask again at once/);
});

test('answerHuman takes Done from the MCP host, says so in the note, and wakes the waiting call', async () => {
  const ctx = context();
  const answered = [];
  ctx.person.listen((request, change) => change === 'answered' && answered.push(request));
  const opened = await runCommand(ctx, 'requestHuman', { reason: 'Log in' });
  const waiting = runCommand(ctx, 'awaitHuman', { handoffId: opened.handoffId, waitMs: 5_000 });
  tabs.set(7, { ...tabs.get(7), url: 'https://login.test/account', title: 'Your account' });
  const done = await runCommand(ctx, 'answerHuman', { handoffId: opened.handoffId, answer: 'done' });
  assert.equal(done.status, 'done');
  assert.deepEqual(done.changed, ['url', 'title']);
  assert.match(done.note, /answered Done in the MCP host/);
  assert.equal((await waiting).status, 'done');
  assert.equal(answered[0].answeredVia, 'host', 'the receipt can tell the host from the popup');
  assert.deepEqual(ctx.person.waiting(), [], 'the popup card is gone');
});

test("answerHuman after the person answered in the popup changes nothing: the popup's answer stands", async () => {
  const ctx = context();
  const opened = await runCommand(ctx, 'requestHuman', { reason: 'Approve the transfer' });
  ctx.person.answer(opened.handoffId, 'cancelled');
  const late = await runCommand(ctx, 'answerHuman', { handoffId: opened.handoffId, answer: 'done' });
  assert.equal(late.status, 'cancelled');
  assert.match(late.note, /clicked Cancel/);
  await assert.rejects(runCommand(ctx, 'answerHuman', { handoffId: opened.handoffId, answer: 'allowed' }), /answer/);
  await assert.rejects(runCommand(ctx, 'answerHuman', { handoffId: 'nope', answer: 'done' }), /no hand-off nope/);
});

test('a hand-off longer than 30 minutes, or a wait over 30 s, is refused before anything happens', async () => {
  const ctx = context();
  await assert.rejects(runCommand(ctx, 'requestHuman', { reason: 'Log in', timeoutSeconds: 1_801 }), /timeoutSeconds/);
  await assert.rejects(runCommand(ctx, 'awaitHuman', { handoffId: 'x', waitMs: 30_001 }), /waitMs/);
  assert.deepEqual(ctx.person.waiting(), []);
});
