// The commands that touch windows, focus and screenshots, against in-memory
// fakes of chrome.windows / chrome.tabs and of the tab's CDP session: where an
// agent's tab opens, that the person's window keeps the focus, and what a
// screenshot answers (its size, and an explained error in time when the tab
// never paints).
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { runCommand } from '../lib/commands.js';
import { TabOwnership } from '../lib/tabs.js';

class FakeEvent {
  constructor() { this.listeners = new Set(); }
  addListener(fn) { this.listeners.add(fn); }
  removeListener(fn) { this.listeners.delete(fn); }
  fire(...args) { for (const fn of this.listeners) fn(...args); }
}

/** The person's window 1 (focused, 1400x900) with their tab 10 in front and tab 11 behind it. */
let browser;
function installFakeChrome() {
  browser = {
    windows: new Map([[1, { id: 1, focused: true, state: 'normal', width: 1400, height: 900, type: 'normal' }]]),
    tabs: new Map([[10, { id: 10, windowId: 1, active: true, url: 'https://person.test/' }],
      [11, { id: 11, windowId: 1, active: false, url: 'https://behind.test/' }]]),
    created: [],
    updates: [],
    refuseWindows: false,
    nextId: 100,
  };
  const focus = id => {
    for (const window of browser.windows.values())
      window.focused = window.id === id;
    chrome.windows.onFocusChanged.fire(id);
  };
  browser.focus = focus;
  globalThis.chrome = {
    windows: {
      onFocusChanged: new FakeEvent(),
      getLastFocused: async () => ({ ...[...browser.windows.values()].find(w => w.focused) }),
      get: async id => ({ ...browser.windows.get(id) }),
      create: async options => {
        if (browser.refuseWindows)
          throw new Error('No new windows');
        browser.created.push(options);
        const window = { id: browser.nextId++, focused: false, state: 'normal', type: 'normal', width: options.width, height: options.height };
        const tab = { id: browser.nextId++, windowId: window.id, active: true, url: options.url };
        browser.windows.set(window.id, window);
        browser.tabs.set(tab.id, tab);
        if (options.focused)
          focus(window.id);
        return { ...window, tabs: [{ ...tab }] };
      },
      update: async (id, change) => {
        browser.updates.push({ id, ...change });
        if (change.focused)
          focus(id);
        return { ...browser.windows.get(id) };
      },
    },
    tabs: {
      get: async id => {
        if (!browser.tabs.has(id))
          throw new Error(`No tab with id: ${id}.`);
        return { ...browser.tabs.get(id) };
      },
      create: async ({ url, active }) => {
        const tab = { id: browser.nextId++, windowId: 1, active, url };
        browser.tabs.set(tab.id, tab);
        return { ...tab };
      },
    },
  };
}

/** A PNG's first 33 bytes, base64, for an image of `width`×`height`. */
function pngHeader(width, height) {
  const bytes = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).copy(bytes);
  bytes.write('IHDR', 12, 'ascii');
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  return bytes.toString('base64');
}

/** The CDP session of every tab: records commands; `paints(tabId)` says whether captures answer. */
function fakeDebuggers({ paints = () => true, onMousePressed = () => {}, viewport = [2000, 1000] } = {}) {
  const [width, height] = viewport;
  const sent = [];
  const muted = [];
  return {
    sent,
    muted,
    mute: (tabId, method) => {
      muted.push({ tabId, method });
      return () => {};
    },
    send: async (tabId, method, params = {}) => {
      sent.push({ tabId, method, params });
      switch (method) {
        case 'Page.getLayoutMetrics':
          return {
            cssVisualViewport: { pageX: 0, pageY: 0, clientWidth: width, clientHeight: height },
            visualViewport: { pageX: 0, pageY: 0, clientWidth: width, clientHeight: height },
            cssContentSize: { x: 0, y: 0, width, height: 3 * height },
          };
        case 'Page.captureScreenshot': {
          if (!paints(tabId))
            return new Promise(() => {});
          const scale = params.clip?.scale ?? 1;
          return { data: pngHeader(Math.round(width * scale), Math.round(height * scale)) };
        }
        case 'Runtime.evaluate':
          return { result: { type: 'object', value: { x: 5, y: 6, element: 'button#go' } } };
        case 'Input.dispatchMouseEvent':
          if (params.type === 'mousePressed')
            onMousePressed(tabId);
          return {};
        default:
          return {};
      }
    },
  };
}

let ctx;
beforeEach(() => {
  installFakeChrome();
  ctx = { connectionId: 'conn-a', tabs: new TabOwnership(), debuggers: fakeDebuggers() };
});
afterEach(() => {
  delete globalThis.chrome;
});

test("an agent's tab opens as the only tab of a new unfocused window the size of the person's", async () => {
  const opened = await runCommand(ctx, 'createTab', {});
  assert.deepEqual(browser.created, [{ url: 'about:blank', focused: false, type: 'normal', width: 1400, height: 900 }]);
  const tab = browser.tabs.get(opened.tabId);
  assert.notEqual(tab.windowId, 1, 'not in the person\'s window');
  assert.equal(tab.active, true, 'the front tab of its own window');
  assert.equal(ctx.tabs.currentTab('conn-a'), opened.tabId);
  // The person's window keeps the focus and is asked to stay in front; their front tab is untouched.
  assert.deepEqual(browser.updates, [{ id: 1, focused: true }]);
  assert.equal(browser.windows.get(1).focused, true);
  assert.equal(browser.tabs.get(10).active, true);
});

test('createTab with active: true opens a focused window and leaves focus there', async () => {
  const opened = await runCommand(ctx, 'createTab', { active: true });
  assert.equal(browser.created[0].focused, true);
  assert.deepEqual(browser.updates, []);
  assert.equal(browser.windows.get(browser.tabs.get(opened.tabId).windowId).focused, true);
});

test('where new windows are refused, createTab falls back to a tab of the current window', async () => {
  browser.refuseWindows = true;
  const opened = await runCommand(ctx, 'createTab', {});
  assert.equal(browser.tabs.get(opened.tabId).windowId, 1);
  assert.equal(browser.tabs.get(opened.tabId).active, false);
});

test("a click activates the agent's window before it presses, and hands the focus back to the person's", async () => {
  const opened = await runCommand(ctx, 'createTab', {});
  const agentWindow = browser.tabs.get(opened.tabId).windowId;
  browser.updates.length = 0;
  // Chrome activates the window of a tab that receives a mouse press, even a synthetic one.
  ctx.debuggers = fakeDebuggers({ onMousePressed: tabId => browser.focus(browser.tabs.get(tabId).windowId) });
  const clicked = await runCommand(ctx, 'click', { selector: '#go' });
  assert.equal(clicked.clicked, true);
  assert.deepEqual(ctx.debuggers.sent.filter(c => c.method === 'Input.dispatchMouseEvent').map(c => c.params.type),
      ['mouseMoved', 'mousePressed', 'mouseReleased']);
  // The agent's window first (so what its activation sends the page comes before the press),
  // then the person's back.
  assert.deepEqual(browser.updates.map(u => u.id), [agentWindow, 1]);
  // After a hover, a click puts the page's pointer back where the hover left it before it
  // moves and presses (the menu it opened opens again after the activation moved the pointer).
  await runCommand(ctx, 'hover', { selector: '#menu' });
  ctx.debuggers.sent.length = 0;
  await runCommand(ctx, 'click', { selector: '#go' });
  assert.deepEqual(ctx.debuggers.sent.filter(c => c.method === 'Input.dispatchMouseEvent').map(c => c.params.type),
      ['mouseMoved', 'mouseMoved', 'mousePressed', 'mouseReleased']);
  assert.ok(browser.updates.some(u => u.id === 1 && u.focused), 'focus given back');
  assert.equal(browser.windows.get(1).focused, true);
  assert.equal(browser.windows.get(agentWindow).focused, false);
  // A late activation, after the click answered, is handed back too.
  browser.focus(agentWindow);
  await new Promise(resolve => setTimeout(resolve, 10));
  assert.equal(browser.windows.get(1).focused, true);
});

test("a click that fails after activating the agent's window still hands the focus back", async () => {
  const opened = await runCommand(ctx, 'createTab', {});
  const agentWindow = browser.tabs.get(opened.tabId).windowId;
  await runCommand(ctx, 'hover', { selector: '#menu' });
  browser.updates.length = 0;
  // The tab goes away under the pointer: the move that puts the hover back fails.
  const sent = ctx.debuggers.send;
  ctx.debuggers.send = async (tabId, method, params) => {
    if (method === 'Input.dispatchMouseEvent')
      throw new Error('No tab with given id');
    return sent(tabId, method, params);
  };
  await assert.rejects(runCommand(ctx, 'click', { selector: '#go' }));
  assert.deepEqual(browser.updates.map(u => u.id), [agentWindow, 1]);
  assert.equal(browser.windows.get(1).focused, true);
});

test('a click whose page closes its tab while the release is answered is done, and says the tab closed', async () => {
  const opened = await runCommand(ctx, 'createTab', {});
  // window.close() in the click handler: Chrome fails the release's answer as the page goes,
  // and drops the tab from its list a moment later.
  const sent = ctx.debuggers.send;
  ctx.debuggers.send = async (tabId, method, params) => {
    if (method === 'Input.dispatchMouseEvent' && params.type === 'mouseReleased') {
      setTimeout(() => browser.tabs.delete(tabId), 150);
      throw new Error('Detached while handling command.');
    }
    return sent(tabId, method, params);
  };
  const clicked = await runCommand(ctx, 'click', { selector: '#go' });
  assert.deepEqual(clicked.tabClosed, { tabId: opened.tabId });
  // A failure that says nothing of a closing tab is the click's own, at once.
  const other = await runCommand(ctx, 'createTab', {});
  ctx.debuggers.send = async (tabId, method, params) => {
    if (method === 'Input.dispatchMouseEvent')
      throw new Error('Input dispatch refused');
    return sent(tabId, method, params);
  };
  const started = Date.now();
  await assert.rejects(runCommand(ctx, 'click', { selector: '#go', tabId: other.tabId }), /Input dispatch refused/);
  assert.ok(Date.now() - started < 500);
});

test('a screenshot is sized for a model and names its format and pixel size', async () => {
  const opened = await runCommand(ctx, 'createTab', {});
  const shot = await runCommand(ctx, 'screenshot', {});
  assert.equal(shot.tabId, opened.tabId);
  assert.equal(shot.mimeType, 'image/png');
  assert.equal(shot.format, 'png');
  assert.deepEqual([shot.width, shot.height], [1568, 784]);
  assert.equal(shot.attempts, 1);
  const capture = ctx.debuggers.sent.find(c => c.method === 'Page.captureScreenshot').params;
  assert.equal(capture.format, 'png');
  assert.deepEqual({ ...capture.clip, scale: undefined }, { x: 0, y: 0, width: 2000, height: 1000, scale: undefined });

  const small = await runCommand(ctx, 'screenshot', { format: 'jpeg', quality: 50, maxDimension: 500 });
  const jpeg = ctx.debuggers.sent.filter(c => c.method === 'Page.captureScreenshot').at(-1).params;
  assert.equal(jpeg.quality, 50);
  assert.equal(small.mimeType, 'image/jpeg');
  assert.ok(Math.max(small.width, small.height) <= 500);
  await assert.rejects(runCommand(ctx, 'screenshot', { maxDimension: 8 }), /maxDimension/);
});

test('a frame of the tab\'s own size is taken as it is; any other is measured and clipped, then at once for that tab', async () => {
  ctx.debuggers = fakeDebuggers({ viewport: [1280, 800] });
  const { tabId } = await runCommand(ctx, 'createTab', {});
  Object.assign(browser.tabs.get(tabId), { width: 1280, height: 800 });
  const shot = await runCommand(ctx, 'screenshot', {});
  assert.deepEqual([shot.width, shot.height], [1280, 800]);
  assert.deepEqual(ctx.debuggers.sent.filter(c => c.method.startsWith('Page.')),
      [{ tabId, method: 'Page.captureScreenshot', params: { format: 'png' } }]);

  // An emulated viewport taller than the window (browser_resize): the frame is not the tab's size.
  Object.assign(browser.tabs.get(tabId), { width: 1280, height: 661 });
  ctx.debuggers = fakeDebuggers({ viewport: [1280, 800] });
  const emulated = await runCommand(ctx, 'screenshot', {});
  assert.deepEqual([emulated.width, emulated.height], [1280, 800]);
  await runCommand(ctx, 'screenshot', {});
  const sent = ctx.debuggers.sent.filter(c => c.method.startsWith('Page.'));
  assert.deepEqual(sent.map(c => c.method), [
    'Page.captureScreenshot', 'Page.getLayoutMetrics', 'Page.captureScreenshot',
    'Page.getLayoutMetrics', 'Page.captureScreenshot',
  ]);
  assert.deepEqual(sent.at(-1).params.clip, { x: 0, y: 0, width: 1280, height: 800, scale: 1 });
});

test('a background tab that never paints gets an explained error within 5 s, and is not brought to the front', async () => {
  ctx.debuggers = fakeDebuggers({ paints: tabId => tabId !== 11 });
  const started = Date.now();
  await assert.rejects(runCommand(ctx, 'screenshot', { tabId: 11 }), error => {
    assert.match(error.message, /^Screenshot of tab 11 failed: no frame within \d\.\d s; it is a background tab of window 1/);
    assert.match(error.message, /createTab/);
    assert.match(error.message, /activateTab/);
    return true;
  });
  const took = Date.now() - started;
  assert.ok(took < 5_000, `answered after ${took} ms`);
  // The kick and the retry were tried; nothing was activated or focused.
  const methods = ctx.debuggers.sent.map(c => c.method);
  assert.deepEqual(methods.filter(m => m !== 'Page.getLayoutMetrics'),
      ['Page.captureScreenshot', 'Page.startScreencast', 'Page.stopScreencast', 'Page.captureScreenshot']);
  // The kick's own frames are kept from the client, which never asked for a screencast.
  assert.deepEqual(ctx.debuggers.muted, [{ tabId: 11, method: 'Page.screencastFrame' }]);
  assert.deepEqual(browser.updates, []);
  assert.equal(browser.tabs.get(10).active, true);
});
