import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PageEvents, describeRemoteObject } from '../lib/page-events.js';

const log = (events, tabId, type, ...args) => events.handle({ tabId }, 'Runtime.consoleAPICalled', {
  type, args: args.map(value => (typeof value === 'string' ? { type: 'string', value } : { type: typeof value, value })), timestamp: 1,
});

test('dialogs are tracked from their events, per tab, and watchers hear them open', () => {
  const events = new PageEvents();
  const heard = [];
  const stop = events.watchDialogs(7, dialog => heard.push(dialog));
  events.handle({ tabId: 7 }, 'Page.javascriptDialogOpening', { type: 'prompt', message: 'Name?', defaultPrompt: 'x', url: 'https://a.test/' });
  assert.deepEqual(events.dialog(7), { type: 'prompt', message: 'Name?', defaultPrompt: 'x', url: 'https://a.test/' });
  assert.equal(events.dialog(8), undefined);
  assert.equal(heard.length, 1);
  stop();
  events.handle({ tabId: 7 }, 'Page.javascriptDialogClosed', { result: true });
  assert.equal(events.dialog(7), undefined);
  events.handle({ tabId: 7 }, 'Page.javascriptDialogOpening', { type: 'alert', message: 'hi' });
  assert.equal(heard.length, 1, 'a stopped watcher hears nothing');
  assert.deepEqual(events.dialog(7), { type: 'alert', message: 'hi' });
  events.detached(7);
  assert.equal(events.dialog(7), undefined);
});

test("a file chooser a page opened is kept per tab until answered, its page left or its tab gone", () => {
  const events = new PageEvents();
  events.handle({ tabId: 7 }, 'Page.fileChooserOpened', { frameId: 'F', mode: 'selectMultiple', backendNodeId: 41 });
  const chooser = events.fileChooser(7);
  assert.equal(chooser.backendNodeId, 41);
  assert.equal(chooser.multiple, true);
  assert.ok(Math.abs(chooser.at - Date.now()) < 1_000);
  assert.equal(events.fileChooser(8), undefined);
  // A frame's navigation leaves it; the tab's page navigating drops it.
  events.handle({ tabId: 7 }, 'Page.frameNavigated', { frame: { id: 'child', parentId: 'F' } });
  assert.equal(events.fileChooser(7)?.backendNodeId, 41);
  events.handle({ tabId: 7 }, 'Page.frameNavigated', { frame: { id: 'F' } });
  assert.equal(events.fileChooser(7), undefined);
  events.handle({ tabId: 7 }, 'Page.fileChooserOpened', { frameId: 'F', mode: 'selectSingle', backendNodeId: 42 });
  assert.equal(events.fileChooser(7).multiple, false);
  events.fileChooserAnswered(7);
  assert.equal(events.fileChooser(7), undefined);
  events.handle({ tabId: 7 }, 'Page.fileChooserOpened', { frameId: 'F', mode: 'selectSingle', backendNodeId: 43 });
  events.forget(7);
  assert.equal(events.fileChooser(7), undefined);
});

test('events of child sessions and of no tab are ignored', () => {
  const events = new PageEvents();
  events.handle({ tabId: 1, sessionId: 'iframe' }, 'Page.javascriptDialogOpening', { type: 'alert', message: 'x' });
  events.handle({}, 'Runtime.consoleAPICalled', { type: 'log', args: [] });
  assert.equal(events.dialog(1), undefined);
  assert.deepEqual(events.consoleMessages(1), { messages: [], dropped: 0, earlier: 0 });
});

test('console calls and uncaught exceptions are kept, and onlyErrors keeps the errors', () => {
  const events = new PageEvents();
  log(events, 3, 'log', 'hello', 42);
  log(events, 3, 'error', 'broke');
  log(events, 3, 'warning', 'careful');
  events.handle({ tabId: 3 }, 'Runtime.exceptionThrown', {
    timestamp: 2,
    exceptionDetails: { text: 'Uncaught', url: 'https://a.test/x.js', lineNumber: 9, exception: { description: 'Error: boom\n    at f (x.js:10)' } },
  });
  const all = events.consoleMessages(3).messages;
  assert.deepEqual(all.map(m => `${m.type}: ${m.text.split('\n')[0]}`),
      ['log: hello 42', 'error: broke', 'warning: careful', 'error: Uncaught Error: boom']);
  assert.equal(all[3].line, 10);
  assert.deepEqual(events.consoleMessages(3, { onlyErrors: true }).messages.map(m => m.text.split('\n')[0]),
      ['broke', 'Uncaught Error: boom']);
  events.forget(3);
  assert.deepEqual(events.consoleMessages(3).messages, []);
});

test('the ring is bounded and counts what it dropped; long messages are clipped', () => {
  const events = new PageEvents({ limit: 3, clip: 10 });
  for (let i = 0; i < 5; i++)
    log(events, 1, 'log', `m${i}`);
  const { messages, dropped } = events.consoleMessages(1);
  assert.deepEqual(messages.map(m => m.text), ['m2', 'm3', 'm4']);
  assert.equal(dropped, 2);
  log(events, 1, 'log', 'x'.repeat(25));
  assert.equal(events.consoleMessages(1).messages.at(-1).text, `${'x'.repeat(10)}… [15 more characters]`);
});

test("the browser's own log entries are kept as console messages of their level, a worker's are not", () => {
  const events = new PageEvents();
  const entry = (tabId, fields) => events.handle({ tabId }, 'Log.entryAdded', { entry: { timestamp: 5, ...fields } });
  entry(4, { source: 'network', level: 'error', text: 'Failed to load resource: the server responded with a status of 404 (Not Found)', url: 'https://a.test/missing.png' });
  entry(4, { source: 'other', level: 'warning', text: 'A preload for x is found, but is not used', url: 'https://a.test/', lineNumber: 9 });
  entry(4, { source: 'violation', level: 'verbose', text: '[Violation] slow handler' });
  entry(4, { source: 'worker', level: 'error', text: 'from a worker' });
  entry(4, { source: 'network', level: 'error', text: 'Failed to load resource: 404', url: 'https://a.test/favicon.ico' });
  events.handle({ tabId: 5, sessionId: 'frame' }, 'Log.entryAdded', { entry: { source: 'network', level: 'error', text: 'child' } });
  assert.deepEqual(events.consoleMessages(4).messages, [
    { type: 'error', text: 'Failed to load resource: the server responded with a status of 404 (Not Found)', url: 'https://a.test/missing.png', time: 5 },
    { type: 'warning', text: 'A preload for x is found, but is not used', url: 'https://a.test/', line: 10, time: 5 },
    { type: 'debug', text: '[Violation] slow handler', time: 5 },
  ]);
  assert.deepEqual(events.consoleMessages(4, { onlyErrors: true }).messages.map(m => m.type), ['error']);
  assert.deepEqual(events.consoleMessages(5).messages, []);
});

test('newSince counts the errors and warnings logged after a mark, across a full ring', () => {
  const events = new PageEvents({ limit: 3 });
  assert.deepEqual(events.newSince(2, events.mark(2)), { errors: 0, warnings: 0 });
  log(events, 2, 'error', 'old');
  const mark = events.mark(2);
  log(events, 2, 'log', 'a');
  log(events, 2, 'warning', 'b');
  log(events, 2, 'error', 'c');
  events.handle({ tabId: 2 }, 'Runtime.exceptionThrown', { exceptionDetails: { text: 'boom' }, timestamp: 1 });
  assert.deepEqual(events.newSince(2, mark), { errors: 2, warnings: 1 });
  assert.deepEqual(events.newSince(2, events.mark(2)), { errors: 0, warnings: 0 });
});

test('sincePage keeps the messages of the page now shown and counts the earlier ones, also across a full ring', () => {
  const events = new PageEvents({ limit: 4 });
  const navigated = (tabId, parentId) => events.handle({ tabId }, 'Page.frameNavigated', { frame: { id: 'f', ...(parentId ? { parentId } : {}) } });
  log(events, 1, 'log', 'old 1');
  log(events, 1, 'error', 'old 2');
  navigated(1);
  log(events, 1, 'log', 'new 1');
  navigated(1, 'main');
  log(events, 1, 'error', 'new 2 (an iframe navigating is not a new page)');
  const page = events.consoleMessages(1, { sincePage: true });
  assert.deepEqual(page.messages.map(m => m.text), ['new 1', 'new 2 (an iframe navigating is not a new page)']);
  assert.equal(page.earlier, 2);
  assert.deepEqual(events.consoleMessages(1, { sincePage: true, onlyErrors: true }).messages.map(m => m.text.slice(0, 5)), ['new 2']);
  assert.equal(events.consoleMessages(1).messages.length, 4, 'without sincePage, everything kept');
  // The ring drops the oldest: the earlier page's messages go first, the count follows.
  log(events, 1, 'log', 'new 3');
  assert.equal(events.consoleMessages(1, { sincePage: true }).earlier, 1);
  log(events, 1, 'log', 'new 4');
  log(events, 1, 'log', 'new 5');
  const later = events.consoleMessages(1, { sincePage: true });
  assert.equal(later.earlier, 0);
  assert.deepEqual(later.messages.map(m => m.text.slice(0, 5)), ['new 2', 'new 3', 'new 4', 'new 5']);
  // A page that has logged nothing yet shows nothing, however much came before.
  navigated(1);
  assert.deepEqual(events.consoleMessages(1, { sincePage: true }), { messages: [], dropped: 3, earlier: 4 });
});

test('remote objects read as the console would print them', () => {
  assert.equal(describeRemoteObject({ type: 'string', value: 'a' }), 'a');
  assert.equal(describeRemoteObject({ type: 'number', unserializableValue: 'NaN' }), 'NaN');
  assert.equal(describeRemoteObject({ type: 'undefined' }), 'undefined');
  assert.equal(describeRemoteObject({ type: 'boolean', value: true }), 'true');
  assert.equal(describeRemoteObject({ type: 'object', subtype: 'null', value: null }), 'null');
  assert.equal(describeRemoteObject({ type: 'object', className: 'Object', description: 'Object' }), 'Object');
});
