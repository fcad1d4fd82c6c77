// The debugger sessions against a fake chrome.debugger: Page and Runtime are enabled on
// attach (bounded, so a tab already showing a dialog cannot wedge the attach), and a
// JavaScript dialog never leaves a command waiting behind it.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { DebuggerSessions, DialogOpenError } from '../lib/debugger-sessions.js';

let sent;
/** Methods that never answer, as Chrome's do while the page shows a dialog. */
let hanging;
beforeEach(() => {
  sent = [];
  hanging = new Set();
  globalThis.chrome = {
    debugger: {
      attach: async () => {},
      detach: async () => {},
      sendCommand: (target, method, params) => {
        sent.push(method);
        return hanging.has(method) ? new Promise(() => {}) : Promise.resolve({ method, params });
      },
    },
  };
});
afterEach(() => { delete globalThis.chrome; });

test('attaching enables Page, Runtime, Network and WebMCP events, and keeps revoked blob: URLs readable for downloads', async () => {
  const sessions = new DebuggerSessions();
  await sessions.send(1, 'Runtime.evaluate', { expression: '1' });
  assert.deepEqual(sent, ['Emulation.setFocusEmulationEnabled', 'Page.enable', 'Runtime.enable', 'Log.enable', 'Network.enable',
    'WebMCP.enable', 'Runtime.addBinding', 'Page.addScriptToEvaluateOnNewDocument', 'Target.setAutoAttach', 'Runtime.evaluate', 'Runtime.evaluate']);
});

test('a command that is waiting when a dialog opens stops waiting and says which dialog', async () => {
  const sessions = new DebuggerSessions();
  await sessions.attach(1);
  hanging.add('Input.dispatchMouseEvent');
  const pending = sessions.send(1, 'Input.dispatchMouseEvent', { type: 'mouseReleased' });
  await new Promise(resolve => setImmediate(resolve));
  sessions.events.handle({ tabId: 1 }, 'Page.javascriptDialogOpening', { type: 'confirm', message: 'Sure?' });
  await assert.rejects(pending, error => error instanceof DialogOpenError && error.openedDuring &&
      error.dialog.type === 'confirm' && /browser_handle_dialog/.test(error.message));
});

test('while a dialog is open, commands are refused at once, except answering it', async () => {
  const sessions = new DebuggerSessions();
  await sessions.attach(2);
  const attached = sent.length;
  sessions.events.handle({ tabId: 2 }, 'Page.javascriptDialogOpening', { type: 'alert', message: 'Hi' });
  await assert.rejects(sessions.send(2, 'Runtime.evaluate', {}),
      error => error instanceof DialogOpenError && !error.openedDuring && /alert dialog \("Hi"\)/.test(error.message));
  assert.equal(sent.slice(attached).includes('Runtime.evaluate'), false, 'the refused command was never sent');
  await sessions.send(2, 'Page.handleJavaScriptDialog', { accept: true });
  assert.equal(sent.at(-1), 'Page.handleJavaScriptDialog');
  // Another tab is not affected.
  await sessions.send(3, 'Runtime.evaluate', {});
  assert.equal(sent.at(-1), 'Runtime.evaluate');
});

test('muted events are kept from the client until every mute is undone', () => {
  const sessions = new DebuggerSessions();
  const first = sessions.mute(1, 'Page.screencastFrame');
  const second = sessions.mute(1, 'Page.screencastFrame');
  assert.ok(sessions.isMuted(1, 'Page.screencastFrame'));
  assert.ok(!sessions.isMuted(2, 'Page.screencastFrame'), 'only that tab');
  assert.ok(!sessions.isMuted(1, 'Page.loadEventFired'), 'only that method');
  first();
  first();
  assert.ok(sessions.isMuted(1, 'Page.screencastFrame'), 'one undo per mute');
  second();
  assert.ok(!sessions.isMuted(1, 'Page.screencastFrame'));
});
