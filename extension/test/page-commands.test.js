// The Playwright-named commands (pressKey, selectOption, waitFor, handleDialog,
// consoleMessages) against a fake CDP session: what they send, and the errors a model reads.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { runCommand } from '../lib/commands.js';
import { DialogOpenError } from '../lib/debugger-sessions.js';
import { PageEvents } from '../lib/page-events.js';
import { ErrorCode, RpcError } from '../lib/rpc.js';
import { TabOwnership } from '../lib/tabs.js';

const TAB = 5;
let ctx;
let sent;
/** What Runtime.evaluate answers, or a function of the expression. */
let evaluates;
beforeEach(() => {
  sent = [];
  evaluates = null;
  globalThis.chrome = { tabs: { get: async id => ({ id, url: 'https://page.test/' }) } };
  const tabs = new TabOwnership();
  tabs.select('conn-a', TAB);
  const events = new PageEvents();
  ctx = {
    connectionId: 'conn-a',
    tabs,
    debuggers: {
      events,
      attach: async () => {},
      send: async (tabId, method, params) => {
        sent.push({ tabId, method, params });
        if (method === 'Runtime.evaluate') {
          const value = typeof evaluates === 'function' ? evaluates(params.expression) : evaluates;
          if (value instanceof Error)
            throw value;
          return { result: { type: typeof value, value } };
        }
        return {};
      },
    },
  };
});
afterEach(() => { delete globalThis.chrome; });

const rpcError = (code, pattern) => error => error instanceof RpcError && error.code === code && pattern.test(error.message);

test('pressKey sends the combination as key events, modifiers around the key', async () => {
  assert.deepEqual(await runCommand(ctx, 'pressKey', { key: 'Control+A' }), { tabId: TAB, pressed: 'Control+A' });
  // The page's URL and title are read before and after (to report a change); the rest are
  // keys, with the page's file choosers intercepted while they are pressed (an Enter on a file
  // input opens one) and not after.
  const intercepting = sent.filter(s => s.method === 'Page.setInterceptFileChooserDialog');
  assert.deepEqual(intercepting.map(s => s.params.enabled), [true, false]);
  assert.ok(sent.indexOf(intercepting[0]) < sent.findIndex(s => s.method === 'Input.dispatchKeyEvent'));
  assert.equal(sent.at(-1), intercepting[1]);
  const keys = sent.filter(s => s.method !== 'Runtime.evaluate' && s !== intercepting[0] && s !== intercepting[1]);
  assert.deepEqual(keys.map(s => `${s.params.type} ${s.params.key}`),
      ['rawKeyDown Control', 'rawKeyDown a', 'keyUp a', 'keyUp Control']);
  assert.ok(keys.every(s => s.method === 'Input.dispatchKeyEvent' && s.tabId === TAB));
  await assert.rejects(runCommand(ctx, 'pressKey', { key: 'Enterr' }),
      rpcError(ErrorCode.INVALID_PARAMS, /parameter "key": "Enterr" is not a key name/));
});

test('pressKey with text presses each character in turn, and takes key or text, not both', async () => {
  assert.deepEqual(await runCommand(ctx, 'pressKey', { text: 'Hi 2' }), { tabId: TAB, typed: 'Hi 2' });
  const keys = sent.filter(s => s.method === 'Input.dispatchKeyEvent');
  assert.deepEqual(keys.filter(s => s.params.type === 'keyDown').map(s => s.params.text), ['H', 'i', ' ', '2']);
  assert.equal(keys.filter(s => s.params.type === 'keyUp').length, 4);
  for (const params of [{}, { key: 'Enter', text: 'x' }]) {
    await assert.rejects(runCommand(ctx, 'pressKey', params),
        rpcError(ErrorCode.INVALID_PARAMS, /give "key" \(a key such as Enter or Control\+A\) or "text"/));
  }
});

test('selectOption explains a missing option and a single select given several values', async () => {
  evaluates = { error: 'no-option', value: 'purple', available: ['r (Red)', 'g (Green)'] };
  await assert.rejects(runCommand(ctx, 'selectOption', { selector: '#c', values: ['purple'] }),
      rpcError(ErrorCode.SERVER_ERROR, /no option with value or label "purple"; its options are: r \(Red\), g \(Green\)/));
  evaluates = { error: 'not-multiple', count: 2 };
  await assert.rejects(runCommand(ctx, 'selectOption', { selector: '#c', values: ['r', 'g'] }),
      rpcError(ErrorCode.INVALID_PARAMS, /not a multi-select/));
  evaluates = { values: ['r'], labels: ['Red'] };
  assert.deepEqual(await runCommand(ctx, 'selectOption', { selector: '#c', values: ['Red'] }),
      { tabId: TAB, selected: ['r'], labels: ['Red'] });
  await assert.rejects(runCommand(ctx, 'selectOption', { selector: '#c', values: [] }),
      rpcError(ErrorCode.INVALID_PARAMS, /"values" must hold at least one string/));
});

test('waitFor polls until the text shows, and names its timeout when it never does', async () => {
  let checks = 0;
  evaluates = () => ++checks >= 3;
  const found = await runCommand(ctx, 'waitFor', { text: 'Done', timeout: 5 });
  assert.equal(found.found, true);
  assert.equal(checks, 3);
  evaluates = false;
  const started = Date.now();
  await assert.rejects(runCommand(ctx, 'waitFor', { text: 'Never', timeout: 0.3 }),
      rpcError(ErrorCode.SERVER_ERROR, /waited 0.3 s \(the timeout\) for "Never" to appear in tab 5, in vain/));
  assert.ok(Date.now() - started < 2_000);
  // textGone: a page between documents (the check fails) is not "gone".
  evaluates = new Error('Execution context was destroyed');
  await assert.rejects(runCommand(ctx, 'waitFor', { textGone: 'Loading', timeout: 0.2 }), /"Loading" to disappear/);
  await assert.rejects(runCommand(ctx, 'waitFor', {}), rpcError(ErrorCode.INVALID_PARAMS, /"text", "textGone" or "time"/));
  await assert.rejects(runCommand(ctx, 'waitFor', { text: 'a', time: 1 }), rpcError(ErrorCode.INVALID_PARAMS, /not both/));
  await assert.rejects(runCommand(ctx, 'waitFor', { time: 31 }), rpcError(ErrorCode.INVALID_PARAMS, /"time" must be at most 30/));
});

test('handleDialog answers the open dialog, and says so when there is none', async () => {
  ctx.debuggers.events.handle({ tabId: TAB }, 'Page.javascriptDialogOpening', { type: 'prompt', message: 'Name?', defaultPrompt: '' });
  const answered = await runCommand(ctx, 'handleDialog', { accept: true, promptText: 'Ada' });
  assert.deepEqual(answered, { tabId: TAB, handled: true, type: 'prompt', message: 'Name?', accepted: true, promptText: 'Ada' });
  assert.deepEqual(sent.at(-1), { tabId: TAB, method: 'Page.handleJavaScriptDialog', params: { accept: true, promptText: 'Ada' } });
  assert.equal(ctx.debuggers.events.dialog(TAB), undefined);
  await assert.rejects(runCommand(ctx, 'handleDialog', { accept: true }),
      rpcError(ErrorCode.SERVER_ERROR, /tab 5 shows no JavaScript dialog \(none opened within 2 s\)/));
});

test('handleDialog waits briefly for a dialog that is about to open', async () => {
  setTimeout(() => ctx.debuggers.events.handle({ tabId: TAB }, 'Page.javascriptDialogOpening', { type: 'alert', message: 'Hi' }), 50);
  const answered = await runCommand(ctx, 'handleDialog', { accept: false });
  assert.equal(answered.type, 'alert');
  assert.equal(answered.accepted, false);
});

test('a dialog opened by a command is its result; one already open is an error', async () => {
  // Opened while the command ran, whether or not a CDP call was waiting at that moment.
  const dialog = { type: 'confirm', message: 'Sure?' };
  ctx.debuggers.send = async () => { throw new DialogOpenError(TAB, dialog, true); };
  const result = await runCommand(ctx, 'evaluate', { expression: 'confirm("Sure?")' });
  assert.deepEqual(result.dialog, dialog);
  assert.match(result.note, /browser_handle_dialog/);
  // Refused by a later CDP call of the same command (a page that alerts while it loads).
  ctx.debuggers.send = async () => { throw new DialogOpenError(TAB, dialog, false); };
  assert.deepEqual((await runCommand(ctx, 'evaluate', { expression: '1' })).dialog, dialog);
  // Open before the command began: the command is refused, it did nothing.
  ctx.debuggers.events.handle({ tabId: TAB }, 'Page.javascriptDialogOpening', dialog);
  const open = ctx.debuggers.events.dialog(TAB);
  ctx.debuggers.send = async () => { throw new DialogOpenError(TAB, open, false); };
  await assert.rejects(runCommand(ctx, 'evaluate', { expression: '1' }),
      rpcError(ErrorCode.SERVER_ERROR, /tab 5 shows a JavaScript confirm dialog \("Sure\?"\)/));
});

test('consoleMessages lists the tab\'s messages, or only its errors', async () => {
  const log = (type, value) => ctx.debuggers.events.handle({ tabId: TAB }, 'Runtime.consoleAPICalled', { type, args: [{ type: 'string', value }], timestamp: 1 });
  log('log', 'hello');
  log('error', 'broke');
  const all = await runCommand(ctx, 'consoleMessages', {});
  assert.deepEqual(all.messages.map(m => m.text), ['hello', 'broke']);
  assert.equal(all.dropped, undefined);
  const errors = await runCommand(ctx, 'consoleMessages', { onlyErrors: true });
  assert.deepEqual(errors.messages.map(m => m.text), ['broke']);
});

test('a click on a stale ref is refused with "take a new snapshot" and sends no mouse event', async () => {
  evaluates = expression => (expression.includes('mcp-relay.refs') ? { error: 'stale-ref', ref: 'e3' } : null);
  await assert.rejects(runCommand(ctx, 'click', { ref: 'e3' }),
      rpcError(ErrorCode.SERVER_ERROR, /Ref e3 does not name an element.*nothing was done; take a new snapshot/));
  assert.ok(!sent.some(s => s.method === 'Input.dispatchMouseEvent'), JSON.stringify(sent));
  await assert.rejects(runCommand(ctx, 'hover', {}), rpcError(ErrorCode.INVALID_PARAMS, /give parameter "ref"/));
});
