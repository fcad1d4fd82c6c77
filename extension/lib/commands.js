/**
 * The browser commands MCP clients send through the relay: one table mapping
 * a method name to the params it accepts and the handler that runs it.
 *
 * Every handler receives the calling MCP connection's context. Tab-taking
 * handlers resolve their tab through {@link targetTab}, which is where the
 * per-connection rules live: no tabId means "my current tab", and a tab
 * owned by another connection is refused.
 *
 * Page work goes through CDP (`chrome.debugger`) so it works on background
 * tabs and headless Chrome; tab bookkeeping goes through `chrome.tabs`.
 * `chrome.*` is touched only inside handlers, so Node can import this module
 * to test the param schemas.
 */

import { CONSOLE_LIMIT as CONSOLE_KEPT } from './page-events.js';
import { validateParams } from './params.js';
import { ErrorCode, RpcError, invalidParams, serverError } from './rpc.js';
import { DialogOpenError } from './debugger-sessions.js';
import { keyPressEvents } from './keys.js';
import { PAGE_TOOL_COMMANDS } from './page-tools.js';
import { PLAYWRIGHT_COMMANDS } from './playwright-commands.js';
import { webmcpCommands } from './webmcp.js';
import { settleAfter, settling } from './settle.js';
import {
  elementExpression, findElementThen, locateElement, pageExpression, pageShowsText, pageState, prepareTyping, readValue, selectOptions, takeSnapshot,
} from './page-scripts.js';
import { TARGET_PARAMS, describeTarget, elementTarget } from './targets.js';
import { captureTree, cutLines, formatOutline } from './snapshot.js';
import {
  CAPTURE_DEADLINE_MS, CaptureStalledError, DEFAULT_MAX_DIMENSION, captureForModel,
} from './screenshots.js';

/**
 * @typedef {object} CommandContext
 * @property {string} connectionId `conn-…` or DIRECT_CONNECTION
 * @property {import('./tabs.js').TabOwnership} tabs
 * @property {import('./debugger-sessions.js').DebuggerSessions} debuggers
 */

/** A screenshot's layout query; the rest of CAPTURE_DEADLINE_MS is for the capture. */
const METRICS_TIMEOUT_MS = 2_000;
/** Per debugger sessions, the tabs whose frame was not the tab's own size: measured and clipped from then on (screenshots.js). */
const clippedTabs = new WeakMap();
/** How long a navigation may take before the client is told it timed out. */
const NAVIGATION_TIMEOUT_MS = 30_000;
const POLL_INTERVAL_MS = 100;
/** A navigation waiting for its load event checks the document at least this often. */
const LOAD_POLL_MS = 250;
const LOAD_FALLBACK_POLL_MS = 25;
/** Snapshot limits: enough for a model to act on, small enough for one WebSocket frame. */
const SNAPSHOT_LIMITS = Object.freeze({ maxTextLength: 20_000, maxElements: 500 });

/** Outline snapshots (snapshot.js): the walk stops after this many elements. */
const OUTLINE_MAX_NODES = 200_000;
/**
 * The outline is returned whole (the bridge cuts it into parts a model can read); this cap
 * only keeps a pathological page from making one answer unbounded, and says so in a note.
 */
export const OUTLINE_MAX_CHARS = 2_000_000;

/** waitFor: how long by default, and at most (under the relay's and the bridge's 60 s request timeouts). */
export const WAIT_DEFAULT_MS = 10_000;
export const WAIT_MAX_MS = 30_000;
/** handleDialog: how long it waits for a dialog that is about to open (the click that opens it just returned). */
const DIALOG_GRACE_MS = 2_000;

/** Optional on every command that acts on a page: defaults to the connection's current tab. */
const TAB_ID = Object.freeze({ type: 'integer', min: 0 });

/**
 * @type {Record<string, {params: Record<string, import('./params.js').ParamSpec>, run: (ctx: CommandContext, params: any) => Promise<object>}>}
 */
/** Options of {@link reportingChanges} for actions that wait for the page to settle. */
const SETTLES = Object.freeze({ settle: true });
/** … for navigations, which answer once their load event fired: settled on less evidence. */
const SETTLES_LOADED = Object.freeze({ settle: true, loaded: true });

export const COMMANDS = {
  getTabs: { params: {}, run: getTabs },
  createTab: { params: { url: { type: 'string' }, active: { type: 'boolean' } }, run: createTab },
  selectTab: { params: { tabId: { ...TAB_ID, required: true } }, run: selectTab },
  activateTab: { params: { tabId: TAB_ID }, run: activateTab },
  closeTab: { params: { tabId: TAB_ID }, run: closeTab },
  browser_navigate: {
    params: { url: { type: 'string', required: true, nonEmpty: true }, snapshot: { type: 'boolean' }, tabId: TAB_ID },
    run: reportingChanges(navigate, SETTLES_LOADED),
  },
  goBack: { params: { tabId: TAB_ID }, run: (ctx, params) => goThroughHistory(ctx, params, -1) },
  goForward: { params: { tabId: TAB_ID }, run: (ctx, params) => goThroughHistory(ctx, params, +1) },
  click: {
    params: {
      ...TARGET_PARAMS,
      snapshot: { type: 'boolean' },
      x: { type: 'number', min: 0 },
      y: { type: 'number', min: 0 },
      button: { type: 'string', oneOf: ['left', 'middle', 'right'] },
      clickCount: { type: 'integer', min: 1, max: 3 },
      tabId: TAB_ID,
    },
    run: reportingChanges(click, SETTLES),
  },
  type: {
    params: {
      ...TARGET_PARAMS,
      text: { type: 'string', required: true },
      submit: { type: 'boolean' },
      snapshot: { type: 'boolean' },
      tabId: TAB_ID,
    },
    run: reportingChanges(type, SETTLES),
  },
  hover: { params: { ...TARGET_PARAMS, snapshot: { type: 'boolean' }, tabId: TAB_ID }, run: reportingChanges(hover) },
  selectOption: {
    params: {
      ...TARGET_PARAMS,
      values: { type: 'string[]', required: true, nonEmpty: true, maxItems: 1_000 },
      snapshot: { type: 'boolean' },
      tabId: TAB_ID,
    },
    run: reportingChanges(selectOption, SETTLES),
  },
  pressKey: { params: { key: { type: 'string', required: true }, snapshot: { type: 'boolean' }, tabId: TAB_ID }, run: reportingChanges(pressKey, SETTLES) },
  waitFor: {
    params: {
      text: { type: 'string', nonEmpty: true },
      textGone: { type: 'string', nonEmpty: true },
      time: { type: 'number', min: 0, max: WAIT_MAX_MS / 1000 },
      timeout: { type: 'number', min: 0.1, max: WAIT_MAX_MS / 1000 },
      tabId: TAB_ID,
    },
    run: waitFor,
  },
  handleDialog: {
    params: { accept: { type: 'boolean', required: true }, promptText: { type: 'string' }, tabId: TAB_ID },
    run: handleDialog,
  },
  consoleMessages: { params: { onlyErrors: { type: 'boolean' }, tabId: TAB_ID }, run: consoleMessages },
  screenshot: {
    params: {
      format: { type: 'string', oneOf: ['png', 'jpeg', 'webp'] },
      quality: { type: 'integer', min: 0, max: 100 },
      fullPage: { type: 'boolean' },
      maxDimension: { type: 'integer', min: 16, max: 16_384 },
      tabId: TAB_ID,
    },
    run: screenshot,
  },
  evaluate: { params: { expression: { type: 'string', required: true, nonEmpty: true }, tabId: TAB_ID }, run: evaluate },
  snapshot: {
    params: {
      ...TARGET_PARAMS,
      format: { type: 'string', oneOf: ['elements', 'outline'] },
      depth: { type: 'integer', min: 1, max: 1_000 },
      interactive: { type: 'boolean' },
      tabId: TAB_ID,
    },
    run: snapshot,
  },
  forwardCDPCommand: {
    params: {
      method: { type: 'string', required: true, nonEmpty: true },
      params: { type: 'object' },
      sessionId: { type: 'string' },
      tabId: TAB_ID,
    },
    run: forwardCDPCommand,
  },
};

/** The protocol spec's own example says `navigate`; accept it as a synonym. */
COMMANDS.navigate = COMMANDS.browser_navigate;
Object.assign(COMMANDS, PLAYWRIGHT_COMMANDS, PAGE_TOOL_COMMANDS, webmcpCommands());
// The rest of Playwright MCP's actions say what changed too, once the page has settled.
for (const name of ['fillForm', 'drag', 'drop'])
  COMMANDS[name] = { ...COMMANDS[name], run: reportingChanges(COMMANDS[name].run, SETTLES) };
// Scripts can start downloads too; they report them, without waiting for the page to settle.
for (const name of ['evaluate', 'evaluateFunction'])
  COMMANDS[name] = { ...COMMANDS[name], run: reportingDownloads(COMMANDS[name].run) };
// History moves answer with the page they reached, once it has settled (settle.js).
for (const name of ['goBack', 'goForward'])
  COMMANDS[name] = settling(COMMANDS[name], { loaded: true });

/**
 * @param {CommandContext} ctx
 * @param {string} method
 * @param {unknown} params
 * @returns {Promise<object>} the `result` of the reply
 * @throws {RpcError|Error} becomes the `error` of the reply
 */
export async function runCommand(ctx, method, params) {
  if (!Object.hasOwn(COMMANDS, method))
    throw new RpcError(ErrorCode.METHOD_NOT_FOUND, `Method not found: "${method}"; this extension handles ${Object.keys(COMMANDS).join(', ')}`);
  const command = COMMANDS[method];
  const valid = validateParams(command.params, params);
  const dialogsBefore = ctx.debuggers?.events?.openDialogs() ?? new Map();
  try {
    return await command.run(ctx, valid);
  } catch (error) {
    // The command made the page open a dialog (a click on a button that calls confirm(), a
    // page that alerts while it loads): it did its work, and the page now waits for an
    // answer. Say so rather than fail.
    if (error instanceof DialogOpenError && (error.openedDuring || dialogsBefore.get(error.tabId) !== error.dialog))
      return { tabId: error.tabId, dialog: error.dialog, note: dialogNote(error.dialog) };
    if (error instanceof DialogOpenError)
      throw serverError(error.message);
    throw error;
  }
}

/** @param {import('./page-events.js').OpenDialog} dialog */
function dialogNote(dialog) {
  return `The page opened a JavaScript ${dialog.type} dialog and waits for an answer; answer it with handleDialog ` +
      '(in mcp-relay bridge: browser_handle_dialog with accept true or false, and promptText for a prompt).';
}

// ---------------------------------------------------------------------------
// Tabs

/** @param {CommandContext} ctx */
async function getTabs(ctx) {
  const tabs = await chrome.tabs.query({});
  const current = ctx.tabs.currentTab(ctx.connectionId);
  return {
    currentTabId: current ?? null,
    tabs: tabs.map(tab => {
      const owner = ctx.tabs.ownerOf(tab.id);
      return {
        tabId: tab.id,
        windowId: tab.windowId,
        url: tab.url || tab.pendingUrl || '',
        title: tab.title || '',
        active: tab.active,
        current: tab.id === current,
        // Never reveal other connections' ids; "another connection" is all a client needs.
        owner: owner === undefined ? null : owner === ctx.connectionId ? 'you' : 'another connection',
      };
    }),
  };
}

/** @param {CommandContext} ctx @param {{url?: string, active?: boolean}} params */
async function createTab(ctx, { url, active = false }) {
  if (url !== undefined)
    checkUrl(url);
  // Open blank, then navigate through CDP: that reports load failures
  // (net::ERR_…) and lets us wait for the load. A tab opened on chrome://newtab
  // could not be attached at all.
  const tab = await openAgentTab(active);
  ctx.tabs.select(ctx.connectionId, tab.id);
  ctx.tabs.markOpenedByAgent(tab.id);
  if (url === undefined || url === 'about:blank')
    return { tabId: tab.id, url: 'about:blank', title: '' };
  try {
    const page = await navigateTab(ctx, tab.id, url);
    return { tabId: tab.id, ...page };
  } catch (error) {
    throw new RpcError(ErrorCode.SERVER_ERROR, `Opened tab ${tab.id} but ${messageOf(error)}`);
  }
}

/**
 * Opens an agent's tab as the only tab of a window of its own. Chrome paints
 * only the front tab of each window, and captures wait for a painted frame;
 * as the front tab of its own window, the agent's tab keeps painting whatever
 * the person does, and the person's windows keep their tabs, their front tab
 * and their focus. The window opens unfocused (unless `active`) with the size
 * of the person's last window; the window that had the focus keeps it, and
 * stays in front.
 *
 * @param {boolean} active bring it to the front and focus it
 * @returns {Promise<chrome.tabs.Tab>}
 */
async function openAgentTab(active) {
  const previous = await chrome.windows.getLastFocused({ windowTypes: ['normal'] }).catch(() => undefined);
  const size = previous?.width && previous?.height && previous.state === 'normal'
    ? { width: previous.width, height: previous.height }
    : {};
  let window;
  try {
    window = await chrome.windows.create({ url: 'about:blank', focused: active, type: 'normal', ...size });
  } catch (error) {
    // No new windows here (a kiosk, a policy): a tab in the current window, which may not
    // paint while in the background (screenshots then say so within 5 s).
    try {
      return await chrome.tabs.create({ url: 'about:blank', active });
    } catch {
      throw serverError(`Could not open a window or a tab: ${messageOf(error)}`);
    }
  }
  const tab = window.tabs?.[0];
  if (!tab)
    throw serverError('Could not open a tab: Chrome created a window without one');
  // The person's window had the focus: keep it, and keep it above the new window (window
  // managers without focus-stealing prevention, and bare X servers, map new windows on top).
  if (!active && previous?.focused)
    await chrome.windows.update(previous.id, { focused: true }).catch(() => {});
  return tab;
}

/** @param {CommandContext} ctx @param {{tabId: number}} params */
async function selectTab(ctx, { tabId }) {
  const tab = await getTab(tabId);
  ctx.tabs.select(ctx.connectionId, tabId);
  return { tabId, url: tab.url || tab.pendingUrl || '', title: tab.title || '' };
}

/** @param {CommandContext} ctx @param {{tabId?: number}} params */
async function activateTab(ctx, { tabId }) {
  const id = await targetTab(ctx, tabId);
  ctx.tabs.select(ctx.connectionId, id);
  const tab = await chrome.tabs.update(id, { active: true });
  await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {
    // Headless and some window managers refuse focus; the tab is still the active one in its window.
  });
  return { tabId: id, active: true };
}

/** @param {CommandContext} ctx @param {{tabId?: number}} params */
async function closeTab(ctx, { tabId }) {
  const id = tabId ?? ctx.tabs.currentTab(ctx.connectionId);
  if (id === undefined)
    throw noCurrentTab();
  await getTab(id);
  ctx.tabs.assertMayUse(ctx.connectionId, id);
  await ctx.debuggers.detach(id);
  await chrome.tabs.remove(id);
  ctx.tabs.dropTab(id);
  return { tabId: id, closed: true };
}

// ---------------------------------------------------------------------------
// Navigation

/** @param {CommandContext} ctx @param {{url: string, tabId?: number}} params */
async function navigate(ctx, { url, tabId }) {
  checkUrl(url);
  // First command of a fresh connection: give it a tab of its own (unfocused) rather than an error.
  if (tabId === undefined && ctx.tabs.currentTab(ctx.connectionId) === undefined)
    return createTab(ctx, { url, active: false });
  const id = await targetTab(ctx, tabId);
  return { tabId: id, ...(await navigateTab(ctx, id, url)) };
}

/**
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {string} url
 * @returns {Promise<{url: string, title: string}>}
 */
async function navigateTab(ctx, tabId, url) {
  const deadline = Date.now() + NAVIGATION_TIMEOUT_MS;
  let response;
  // Listening before navigating: a light page's load event can come right behind the commit.
  await ctx.debuggers.attach(tabId).catch(() => {});
  const loaded = ctx.debuggers.taps?.expect(tabId, 'Page.loadEventFired');
  try {
    // Page.navigate answers once the new document commits, or with errorText.
    response = await ctx.debuggers.send(tabId, 'Page.navigate', { url }, { timeoutMs: NAVIGATION_TIMEOUT_MS });
  } catch (error) {
    loaded?.cancel();
    if (!/does not let extensions debug/.test(messageOf(error)))
      throw error;
    // The tab shows a chrome:// page we may not attach to; leave it through the tabs API.
    await chrome.tabs.update(tabId, { url });
    await waitForTabComplete(tabId, deadline, url);
    return pageInfo(ctx, tabId);
  }
  if (response?.errorText) {
    loaded?.cancel();
    // A URL that answers with a file is a download, not a page: the tab stays where it was,
    // and the download is captured (the result's `downloads`).
    if (/ERR_ABORTED/.test(response.errorText) && await downloadStarted(ctx, tabId, deadline - NAVIGATION_TIMEOUT_MS))
      return { ...(await pageInfo(ctx, tabId)), note: `${url} is a file, not a page: it was downloaded (see "downloads"), and the tab stayed where it was` };
    throw serverError(`${url} failed to load in tab ${tabId}: ${response.errorText}`);
  }
  await waitForDocumentComplete(ctx, tabId, deadline, url, loaded);
  return pageInfo(ctx, tabId);
}

/**
 * @param {CommandContext} ctx
 * @param {{tabId?: number}} params
 * @param {-1|1} delta
 */
async function goThroughHistory(ctx, { tabId }, delta) {
  const id = await targetTab(ctx, tabId);
  const { currentIndex, entries } = await ctx.debuggers.send(id, 'Page.getNavigationHistory');
  const target = currentIndex + delta;
  if (target < 0 || target >= entries.length)
    throw serverError(`tab ${id} has no ${delta < 0 ? 'previous' : 'next'} page in its history`);
  await ctx.debuggers.send(id, 'Page.navigateToHistoryEntry', { entryId: entries[target].id });
  const deadline = Date.now() + NAVIGATION_TIMEOUT_MS;
  // Wait until history says we moved, then until that document loaded.
  await poll(deadline, async () => {
    const history = await ctx.debuggers.send(id, 'Page.getNavigationHistory');
    return history.currentIndex === target;
  }, () => `tab ${id} did not go ${delta < 0 ? 'back' : 'forward'} within ${NAVIGATION_TIMEOUT_MS / 1000} s`);
  await waitForDocumentComplete(ctx, id, deadline, entries[target].url);
  return { tabId: id, ...(await pageInfo(ctx, id)) };
}

// ---------------------------------------------------------------------------
// Input

/** @param {CommandContext} ctx */
async function click(ctx, params) {
  const { ref, selector, x, y, button = 'left', clickCount = 1, tabId } = params;
  if (ref === undefined && selector === undefined && (x === undefined || y === undefined))
    throw invalidParams('click needs parameter "ref" or "selector", or both "x" and "y"');
  const id = await targetTab(ctx, tabId);
  let point = { x, y };
  let element;
  if (ref !== undefined || selector !== undefined) {
    const located = await locate(ctx, id, elementTarget(params), { requireEnabled: true });
    point = { x: located.x, y: located.y };
    element = located.element;
  }
  const buttons = { left: 1, right: 2, middle: 4 }[button];
  const mouse = (type, extra) => ctx.debuggers.send(id, 'Input.dispatchMouseEvent', { type, ...point, ...extra });
  await mouse('mouseMoved', {});
  await keepingTheFocus(id, async () => {
    await mouse('mousePressed', { button, buttons, clickCount });
    await mouse('mouseReleased', { button, buttons: 0, clickCount });
  });
  return { tabId: id, clicked: true, x: point.x, y: point.y, ...(element ? { element } : {}) };
}

/** How long after a synthetic click focus is watched and handed back. */
const FOCUS_WATCH_MS = 1_000;

/**
 * Runs `action` (a synthetic mouse press) and hands the focus back to the
 * window that had it. Chrome activates the window of a tab that receives a
 * mouse press, even a synthetic one from CDP; in the agent's own window, that
 * would take the focus (and the keyboard) from the person. Activation can
 * arrive a little after the press, so focus changes are watched for a moment.
 *
 * @param {number} tabId the tab being clicked
 * @param {() => Promise<void>} action
 */
async function keepingTheFocus(tabId, action) {
  const [focused, tab] = await Promise.all([
    chrome.windows.getLastFocused({ windowTypes: ['normal'] }).catch(() => undefined),
    chrome.tabs.get(tabId).catch(() => undefined),
  ]);
  if (!focused?.focused || !tab || focused.id === tab.windowId)
    return action();
  const giveBack = () => chrome.windows.update(focused.id, { focused: true }).catch(() => {});
  const onFocusChanged = (/** @type {number} */ windowId) => {
    if (windowId === tab.windowId)
      giveBack();
  };
  chrome.windows.onFocusChanged.addListener(onFocusChanged);
  setTimeout(() => chrome.windows.onFocusChanged.removeListener(onFocusChanged), FOCUS_WATCH_MS);
  try {
    await action();
  } finally {
    const now = await chrome.windows.get(tab.windowId).catch(() => undefined);
    if (now?.focused)
      await giveBack();
  }
}

/** @param {CommandContext} ctx */
async function type(ctx, params) {
  const { text, submit = false, tabId } = params;
  const target = elementTarget(params);
  const id = await targetTab(ctx, tabId);
  const started = Date.now();
  let prepared = await evaluateExpression(ctx, id, elementExpression(prepareTyping, target, text === ''));
  // A field the page enables a moment later (after another field is filled) is waited for.
  while (prepared?.error === 'disabled' && Date.now() - started < ACTIONABLE_WAIT_MS) {
    await new Promise(resolve => setTimeout(resolve, ACTIONABLE_POLL_MS));
    prepared = await evaluateExpression(ctx, id, elementExpression(prepareTyping, target, text === ''));
  }
  if (prepared?.error)
    throw elementError({ ...prepared, ...(prepared.error === 'disabled' ? { waitedMs: Date.now() - started } : {}) }, target);
  if (text !== '')
    await ctx.debuggers.send(id, 'Input.insertText', { text });
  const value = (await evaluateExpression(ctx, id, elementExpression(readValue, target)))?.value ?? null;
  if (submit) {
    // keyDown carrying "\r" is what makes Chrome fire keypress and submit the form.
    const enter = { key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 };
    await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', { type: 'keyDown', ...enter, text: '\r', unmodifiedText: '\r' });
    await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', { type: 'keyUp', ...enter });
  }
  return { tabId: id, typed: true, value, submitted: submit };
}

/** @param {CommandContext} ctx */
async function hover(ctx, params) {
  const target = elementTarget(params);
  const id = await targetTab(ctx, params.tabId);
  const { x, y, element } = await locate(ctx, id, target);
  await ctx.debuggers.send(id, 'Input.dispatchMouseEvent', { type: 'mouseMoved', x, y });
  return { tabId: id, hovered: true, x, y, element };
}

/** @param {CommandContext} ctx */
async function selectOption(ctx, params) {
  const { values, tabId } = params;
  const target = elementTarget(params);
  const named = describeTarget(target);
  const id = await targetTab(ctx, tabId);
  const result = await evaluateExpression(ctx, id, elementExpression(selectOptions, target, values));
  if (result?.error) {
    switch (result.error) {
      case 'not-select':
        throw serverError(`Element ${named} is a <${result.element}>, not a <select>; click custom drop-downs instead`);
      case 'no-option':
        throw serverError(`<select> ${named} has no option with value or label "${result.value}"; its options are: ${result.available.join(', ')}`);
      case 'option-disabled':
        throw serverError(`The option "${result.value}" of ${named} is disabled`);
      case 'not-multiple':
        throw invalidParams(`<select> ${named} takes one value, not ${result.count}: it is not a multi-select`);
      default:
        throw elementError(result, target);
    }
  }
  return { tabId: id, selected: result.values, labels: result.labels };
}

/** @param {CommandContext} ctx */
async function pressKey(ctx, { key, tabId }) {
  const plan = keyPressEvents(key);
  if ('error' in plan)
    throw invalidParams(`parameter "key": ${plan.error}`);
  const id = await targetTab(ctx, tabId);
  for (const event of plan.events)
    await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', event);
  return { tabId: id, pressed: key };
}

/** @param {CommandContext} ctx */
async function waitFor(ctx, { text, textGone, time, timeout, tabId }) {
  if (text === undefined && textGone === undefined && time === undefined)
    throw invalidParams('waitFor needs "text", "textGone" or "time"');
  if (time !== undefined && (text !== undefined || textGone !== undefined))
    throw invalidParams('give either "time", or "text"/"textGone", not both');
  const id = await targetTab(ctx, tabId);
  const started = Date.now();
  if (time !== undefined) {
    await new Promise(resolve => setTimeout(resolve, time * 1000));
    return { tabId: id, waited: time };
  }
  const limitMs = timeout === undefined ? WAIT_DEFAULT_MS : timeout * 1000;
  const wanted = [
    ...(text !== undefined ? [`"${text}" to appear`] : []),
    ...(textGone !== undefined ? [`"${textGone}" to disappear`] : []),
  ].join(' and ');
  await poll(started + limitMs, async () => {
    const shown = text === undefined || await evaluateFunction(ctx, id, pageShowsText, text).catch(rethrowDialog) === true;
    const gone = textGone === undefined || await evaluateFunction(ctx, id, pageShowsText, textGone).catch(rethrowDialog) === false;
    return shown && gone;
  }, () => `waited ${limitMs / 1000} s (the timeout) for ${wanted} in tab ${id}, in vain; ` +
      `take a snapshot to see the page, or wait longer with "timeout" (at most ${WAIT_MAX_MS / 1000} s)`);
  return { tabId: id, found: true, ...(text !== undefined ? { text } : {}), ...(textGone !== undefined ? { textGone } : {}), waitedMs: Date.now() - started };
}

/** Page scripts fail while a document is replaced (retried by the poll); a dialog ends the wait. */
function rethrowDialog(error) {
  if (error instanceof DialogOpenError)
    throw error;
  return null;
}

/** @param {CommandContext} ctx */
async function handleDialog(ctx, { accept, promptText, tabId }) {
  const id = await targetTab(ctx, tabId);
  const events = ctx.debuggers.events;
  let dialog = events.dialog(id);
  if (!dialog) {
    // The command that opens it may have returned a moment before the dialog appeared.
    await ctx.debuggers.attach(id);
    dialog = await new Promise(resolve => {
      const timer = setTimeout(() => {
        stop();
        resolve(events.dialog(id));
      }, DIALOG_GRACE_MS);
      const stop = events.watchDialogs(id, opened => {
        clearTimeout(timer);
        stop();
        resolve(opened);
      });
    });
  }
  if (!dialog)
    throw serverError(`tab ${id} shows no JavaScript dialog (none opened within ${DIALOG_GRACE_MS / 1000} s) to answer`);
  const params = { accept, ...(promptText !== undefined ? { promptText } : {}) };
  await ctx.debuggers.send(id, 'Page.handleJavaScriptDialog', params);
  // Chrome also sends Page.javascriptDialogClosed; do not wait for it, but do not report it open either.
  events.answered(id);
  return { tabId: id, handled: true, type: dialog.type, message: dialog.message, accepted: accept, ...(promptText !== undefined && dialog.type === 'prompt' ? { promptText } : {}) };
}

/** @param {CommandContext} ctx */
async function consoleMessages(ctx, { onlyErrors = false, tabId }) {
  const id = await targetTab(ctx, tabId);
  // Recording starts with the attachment; attach now so later messages are kept.
  await ctx.debuggers.attach(id);
  const { messages, dropped } = ctx.debuggers.events.consoleMessages(id, { onlyErrors });
  return {
    tabId: id,
    messages,
    ...(dropped ? { dropped, note: `${dropped} older messages were dropped: only the last ${CONSOLE_KEPT} of each tab are kept` } : {}),
  };
}

// ---------------------------------------------------------------------------
// Reading the page

/**
 * A screenshot sized for a model (see screenshots.js), answered within
 * CAPTURE_DEADLINE_MS: an image, or an error saying why and what to do.
 *
 * @param {CommandContext} ctx
 */
async function screenshot(ctx, { format = 'png', quality, fullPage = false, maxDimension = DEFAULT_MAX_DIMENSION, tabId }) {
  if (quality !== undefined && format === 'png')
    throw invalidParams('parameter "quality" applies only to format "jpeg" or "webp"');
  const started = Date.now();
  const id = await targetTab(ctx, tabId);
  const clipped = clippedTabs.get(ctx.debuggers) ?? clippedTabs.set(ctx.debuggers, new Set()).get(ctx.debuggers);
  const tab = clipped.has(id) ? undefined : await chrome.tabs.get(id).catch(() => undefined);
  let shot;
  try {
    shot = await captureForModel((method, params, options) => ctx.debuggers.send(id, method, params, options),
        { format, quality, fullPage, maxDimension }, {
          deadlineMs: CAPTURE_DEADLINE_MS - (Date.now() - started),
          metricsTimeoutMs: METRICS_TIMEOUT_MS,
          tabSize: tab && { width: tab.width, height: tab.height },
          muteKick: () => ctx.debuggers.mute(id, 'Page.screencastFrame'),
        });
  } catch (error) {
    // A page stuck in a dialog or a long script does not even answer the layout query.
    if (error instanceof CaptureStalledError || /no answer within/.test(messageOf(error)))
      throw serverError(await stalledAdvice(id, Date.now() - started, error instanceof CaptureStalledError));
    throw error;
  }
  if (!shot.asIs && !fullPage)
    clipped.add(id);
  const { data, width, height, attempts } = shot;
  return { tabId: id, data, mimeType: `image/${format}`, format, width, height, attempts };
}

/**
 * Why a tab produced no frame, and what the model can do about it.
 *
 * @param {number} tabId
 * @param {number} ms how long the capture waited
 * @param {boolean} answered whether the page answered (a capture produced no frame) rather than not at all
 */
async function stalledAdvice(tabId, ms, answered) {
  const seconds = (ms / 1000).toFixed(1);
  const tab = await chrome.tabs.get(tabId).catch(() => undefined);
  const window = tab ? await chrome.windows.get(tab.windowId).catch(() => undefined) : undefined;
  let why = 'the page did not answer or paint: it may be busy running script, or showing a dialog ' +
      '(alert, confirm) that waits for an answer';
  if (tab && !tab.active)
    why = `it is a background tab of window ${tab.windowId}, and Chrome may not paint tabs that are not in front`;
  else if (window?.state === 'minimized')
    why = `its window ${tab?.windowId} is minimized, and Chrome may not paint minimized windows`;
  return `Screenshot of tab ${tabId} failed: ${answered ? 'no frame' : 'no answer from the page'} within ${seconds} s; ${why}. ` +
      'To read the page, take a snapshot (it needs no painting). For a screenshot, open the page in a tab of your ' +
      'own with createTab (in mcp-relay bridge: browser_tabs with action "new" and the url), which gets a window ' +
      'of its own that keeps painting; or bring this tab to the front with activateTab (the person will see it).';
}

/** @param {CommandContext} ctx */
async function evaluate(ctx, { expression, tabId }) {
  const id = await targetTab(ctx, tabId);
  const { result, exceptionDetails } = await ctx.debuggers.send(id, 'Runtime.evaluate', {
    expression,
    returnByValue: true,
    awaitPromise: true,
    // Lets the expression do what a click would allow (open popups, play media).
    userGesture: true,
  });
  if (exceptionDetails)
    throw serverError(`The expression threw: ${exceptionText(exceptionDetails)}`);
  // JSON has no undefined, NaN or Infinity: report null plus what it was.
  if (result.unserializableValue !== undefined)
    return { value: null, type: result.type, unserializableValue: result.unserializableValue };
  return { value: result.value ?? null, type: result.type };
}

/**
 * `format: "outline"` is the snapshot with refs (snapshot.js), which the
 * bridge asks for; without it, the older flat list of elements with CSS
 * selectors, which direct clients of the relay already read.
 *
 * @param {CommandContext} ctx
 */
async function snapshot(ctx, { format, depth, interactive = false, ref, selector, tabId }) {
  const scoped = ref !== undefined || selector !== undefined;
  // A subtree exists only in the outline; asking for one implies it.
  const shape = format ?? (scoped ? 'outline' : 'elements');
  if (scoped && shape !== 'outline')
    throw invalidParams('parameters "ref" and "selector" (a subtree) need format "outline"');
  const target = scoped ? elementTarget({ ref, selector }) : undefined;
  const id = await targetTab(ctx, tabId);
  if (shape === 'elements')
    return { tabId: id, ...(await evaluateFunction(ctx, id, takeSnapshot, SNAPSHOT_LIMITS)) };
  return { tabId: id, ...(await outlineOf(ctx, id, { depth, interactive, target })) };
}

/** @param {CommandContext} ctx */
async function forwardCDPCommand(ctx, { method, params = {}, sessionId, tabId }) {
  const id = await targetTab(ctx, tabId);
  try {
    return await ctx.debuggers.send(id, method, params, { sessionId });
  } catch (error) {
    throw serverError(`CDP ${method} failed on tab ${id}: ${messageOf(error)}`);
  }
}

// ---------------------------------------------------------------------------
// What an action changed

/**
 * Wraps an action so its result says what changed, as Playwright MCP's do: the
 * page's `url` and `title` under `pageChanged` when either changed, and with
 * `snapshot: true` the page's outline (cut at ACTION_SNAPSHOT_MAX_CHARS), so
 * the model rarely needs a separate snapshot call. A dialog the action opened
 * surfaces through runCommand (the state read after the action meets it).
 * With `settle`, the page is first given time to settle (settle.js), so a click
 * on a link reports the page it led to rather than the moment before.
 *
 * @param {(ctx: CommandContext, params: any) => Promise<any>} run
 * @param {{settle?: boolean, loaded?: boolean}} [options] `loaded`: a navigation, which answers after its load event
 */
export function reportingChanges(run, { settle = false, loaded = false } = {}) {
  return async (ctx, params) => {
    // Only a tab this connection may use is read (targetTab checks), before the action runs.
    const before = await targetTab(ctx, params.tabId)
        .then(id => evaluateFunction(ctx, id, pageState))
        .catch(() => null);
    const started = Date.now();
    const acted = await run(ctx, params);
    const result = settle ? await settleAfter(ctx, acted, { loaded }) : acted;
    if (typeof result?.tabId !== 'number' || result.dialog)
      return result;
    await addDownloads(ctx, result, started);
    const after = await stateAfterAction(ctx, result.tabId);
    if (before && after && (before.url !== after.url || before.title !== after.title))
      result.pageChanged = { url: after.url, title: after.title };
    if (params.snapshot) {
      const outline = await outlineOf(ctx, result.tabId, {});
      result.snapshot = outline.snapshot;
      if (outline.note)
        result.snapshotNote = outline.note;
    }
    return result;
  };
}

/**
 * Wraps a command that may start downloads without being an action that settles (a script).
 *
 * @param {(ctx: CommandContext, params: any) => Promise<any>} run
 */
function reportingDownloads(run) {
  return async (ctx, params) => {
    const started = Date.now();
    const result = await run(ctx, params);
    const tabId = result?.tabId ?? ctx.tabs.currentTab(ctx.connectionId);
    if (typeof tabId === 'number' && !result?.dialog)
      await addDownloads(ctx, result, started, tabId);
    return result;
  };
}

/**
 * Whether the tab started a download since `since`, waiting a moment for Chrome to say so.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {number} since epoch ms
 */
async function downloadStarted(ctx, tabId, since) {
  const until = Date.now() + DOWNLOAD_ANNOUNCE_WAIT_MS;
  for (;;) {
    if (ctx.downloads?.startedIn(tabId, since))
      return true;
    if (Date.now() >= until)
      return false;
    await new Promise(resolve => setTimeout(resolve, 20));
  }
}

/** How long a navigation that ended in a download waits for Chrome to announce it. */
const DOWNLOAD_ANNOUNCE_WAIT_MS = 500;
/** How long an action's answer waits for the downloads it started to be fetched. */
const DOWNLOAD_WAIT_MS = 10_000;
/** How long after an action a download it started may take to be announced by Chrome. */
const DOWNLOAD_GRACE_MS = 150;

/**
 * Adds `downloads` to an action's result: what its tab downloaded since the action began
 * (captured, see downloads.js), once fetched or after DOWNLOAD_WAIT_MS (then "in_progress").
 *
 * @param {CommandContext} ctx
 * @param {any} result
 * @param {number} started epoch ms
 * @param {number} [tabId]
 */
async function addDownloads(ctx, result, started, tabId = result.tabId) {
  const book = ctx.downloads;
  if (!book)
    return;
  // A download Chrome announced but has not handed to chrome.downloads yet is about to be captured.
  const until = Date.now() + DOWNLOAD_GRACE_MS;
  while (book.hasAnnounced() && Date.now() < until)
    await new Promise(resolve => setTimeout(resolve, 20));
  const rows = await book.startedSince(ctx.connectionId, tabId, started, DOWNLOAD_WAIT_MS);
  if (rows.length)
    result.downloads = rows;
}

/**
 * The page's URL and title once an action returned. A page that is being replaced
 * cannot run script; the tab then says where it is going. A dialog is rethrown.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 */
async function stateAfterAction(ctx, tabId) {
  try {
    return await evaluateFunction(ctx, tabId, pageState);
  } catch (error) {
    if (error instanceof DialogOpenError)
      throw error;
    const tab = await getTab(tabId);
    return { url: tab.pendingUrl || tab.url || '', title: tab.title || '' };
  }
}

/**
 * The page (or, with `target`, one element's subtree, the element first at indent 0) as
 * outline text with refs. Whole: the bridge cuts it into parts; only a pathological page
 * meets OUTLINE_MAX_CHARS, cut there at a whole line with a note.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {{depth?: number, interactive?: boolean, target?: import('./targets.js').ElementTarget}} options
 * @returns {Promise<{url: string, title: string, snapshot: string, note?: string}>}
 */
async function outlineOf(ctx, tabId, { target, ...options }) {
  const limits = { maxNodes: OUTLINE_MAX_NODES };
  let captured;
  if (target) {
    const expression = `(${findElementThen.toString()})((el, limits) => (${captureTree.toString()})(limits, el), ` +
        `${JSON.stringify(target)}, ${JSON.stringify(limits)})`;
    captured = await evaluateExpression(ctx, tabId, expression);
    if (captured?.error)
      throw elementError(captured, target);
  } else {
    captured = await evaluateFunction(ctx, tabId, captureTree, limits);
  }
  const cut = cutLines(formatOutline(captured.tree, options), OUTLINE_MAX_CHARS);
  const notes = [];
  if (target && captured.tree.length === 0)
    notes.push(`The element ${describeTarget(target)} is not rendered (hidden, or aria-hidden), so its subtree is empty`);
  if (cut.cut) {
    notes.push(`The snapshot was cut after ${cut.shownLines} of ${cut.totalLines} lines (${OUTLINE_MAX_CHARS} characters, ` +
        'the safety cap); take a subtree (ref or selector), "depth" or "interactive": true to see the rest');
  }
  if (captured.nodesTruncated) {
    notes.push(`The page has more than ${captured.nodesTruncated} elements; only the first were read. ` +
        'Use a subtree (ref or selector), "interactive": true or "depth" to see less at a time');
  }
  return {
    url: captured.url,
    title: captured.title,
    snapshot: cut.text,
    ...(notes.length ? { note: notes.join('. ') } : {}),
  };
}

// ---------------------------------------------------------------------------
// Helpers

/**
 * The tab a command acts on: the one named by `tabId` (claimed for this
 * connection, refused if another owns it) or the connection's current tab.
 *
 * @param {CommandContext} ctx
 * @param {number | undefined} tabId
 * @returns {Promise<number>}
 */
export async function targetTab(ctx, tabId) {
  if (tabId !== undefined) {
    ctx.tabs.assertMayUse(ctx.connectionId, tabId);
    await getTab(tabId);
    ctx.tabs.claim(ctx.connectionId, tabId);
    return tabId;
  }
  const current = ctx.tabs.currentTab(ctx.connectionId);
  if (current === undefined)
    throw noCurrentTab();
  try {
    await getTab(current);
  } catch {
    ctx.tabs.dropTab(current);
    throw serverError(`The current tab (${current}) was closed; call createTab, or selectTab with a tabId from getTabs`);
  }
  return current;
}

function noCurrentTab() {
  return serverError('This MCP connection has no current tab; call createTab, or selectTab with a tabId from getTabs');
}

/** @param {number} tabId */
async function getTab(tabId) {
  try {
    return await chrome.tabs.get(tabId);
  } catch {
    throw serverError(`tab ${tabId} does not exist (it may have been closed); call getTabs for the open tabs`);
  }
}

/** @param {string} url */
function checkUrl(url) {
  try {
    new URL(url);
  } catch {
    throw invalidParams(`parameter "url" must be an absolute URL such as https://example.com, got "${url}"`);
  }
}

/**
 * Runs a page-scripts function in the tab and returns its JSON result.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {Function} fn
 * @param {...unknown} args
 */
async function evaluateFunction(ctx, tabId, fn, ...args) {
  return evaluateExpression(ctx, tabId, pageExpression(fn, ...args));
}

/**
 * Runs an expression built by page-scripts.js in the tab and returns its JSON result.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {string} expression
 */
async function evaluateExpression(ctx, tabId, expression) {
  const { result, exceptionDetails } = await ctx.debuggers.send(tabId, 'Runtime.evaluate', {
    expression,
    returnByValue: true,
    awaitPromise: true,
  });
  if (exceptionDetails)
    throw serverError(`Script failed in tab ${tabId}: ${exceptionText(exceptionDetails)}`);
  return result.value;
}

/**
 * Where a mouse would act on an element: see `locateElement`.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {import('./targets.js').ElementTarget | string} target a ref or selector (a bare string is a selector)
 */
async function locate(ctx, tabId, target, options = {}) {
  return locateWhenReady(expression => evaluateExpression(ctx, tabId, expression), target, options);
}

/** How long an element command waits for its element to become enabled, visible or uncovered. */
export const ACTIONABLE_WAIT_MS = 3_000;
/** How long it keeps trying an element placed off-screen (a page still scrolling or animating). */
const OFF_SCREEN_WAIT_MS = 500;
const ACTIONABLE_POLL_MS = 100;

/**
 * Where a mouse would act on an element (`locateElement`: scrolled into view first), waiting
 * a bounded time for what usually passes by itself: a disabled element being enabled, an
 * overlay or animation going away, an element being shown. Then a clear error saying what
 * was waited for.
 *
 * @param {(expression: string) => Promise<any>} evaluate runs an expression in the tab
 * @param {import('./targets.js').ElementTarget | string} target
 * @param {{requireEnabled?: boolean}} [options]
 */
export async function locateWhenReady(evaluate, target, options = {}) {
  const started = Date.now();
  for (;;) {
    const located = await evaluate(elementExpression(locateElement, target, options));
    if (!located?.error)
      return located;
    const waited = Date.now() - started;
    const limit = located.error === 'off-screen' ? OFF_SCREEN_WAIT_MS : ACTIONABLE_WAIT_MS;
    if (!['disabled', 'covered', 'not-visible', 'off-screen'].includes(located.error) || waited >= limit)
      throw elementError({ ...located, waitedMs: waited }, target);
    await new Promise(resolve => setTimeout(resolve, ACTIONABLE_POLL_MS));
  }
}

/**
 * @param {{error: string, message?: string, element?: string, cover?: string}} failure from a page script
 * @param {import('./targets.js').ElementTarget | string} target
 */
export function elementError(failure, target) {
  const named = describeTarget(target);
  switch (failure.error) {
    case 'invalid-selector':
      return invalidParams(`parameter "selector" is not a valid CSS selector: ${typeof target === 'string' ? target : target.selector}`);
    case 'not-found':
      return serverError(`No element matches ${named}; take a snapshot to see the page's elements`);
    case 'stale-ref':
      return serverError(staleRefMessage(failure.ref));
    case 'not-visible':
      return serverError(`Element ${named} (${failure.element}) is not visible (no size, hidden, or not taking pointer events)${waitedText(failure)}, ` +
          'so it cannot be clicked or hovered; take a snapshot to see what is shown');
    case 'covered':
      return serverError(`Element ${named} (${failure.element}) is covered by another element, ${failure.cover}, at its centre${waitedText(failure)}; ` +
          'a click there would land on that element: close or dismiss it first (a dialog, banner or overlay)');
    case 'off-screen':
      return serverError(`Element ${named} (${failure.element}) is outside the page's visible area even after scrolling to it ` +
          `(its centre is at ${failure.at.x},${failure.at.y}; the viewport is ${failure.viewport.width}×${failure.viewport.height}): ` +
          'the page places it off-screen, as skip links that show only on keyboard focus are, so a mouse cannot reach it. ' +
          'Press Tab to focus it, or use the element it leads to');
    case 'not-editable':
      return serverError(`Element ${named} is a <${failure.element}>, which does not accept text; target an input, textarea or contenteditable element`);
    case 'disabled':
      return serverError(`Element ${named}${failure.element ? ` (${failure.element})` : ''} is ${failure.readOnly ? 'read-only' : 'disabled'}` +
          `${failure.waitedMs !== undefined ? ` and stayed so for ${(failure.waitedMs / 1000).toFixed(1)} s` : ''}; ` +
          'the page enables it once something else is done first (a required field, a checkbox): take a snapshot to see what');
    default:
      return serverError(`Element ${named}: ${failure.error}`);
  }
}

/** @param {{waitedMs?: number}} failure */
function waitedText(failure) {
  return failure.waitedMs ? ` (waited ${(failure.waitedMs / 1000).toFixed(1)} s for that to change)` : '';
}

/**
 * The refusal of a ref that no longer names a live element. Nothing was done:
 * the model must look again rather than guess which element took its place.
 *
 * @param {string} ref
 */
export function staleRefMessage(ref) {
  return `Ref ${ref} does not name an element on the page any more (it was removed or replaced, ` +
      'or the page changed since the snapshot that listed it), so nothing was done; ' +
      'take a new snapshot (browser_snapshot) and use a ref from it';
}

/** @param {CommandContext} ctx @param {number} tabId */
async function pageInfo(ctx, tabId) {
  try {
    const { url, title } = await evaluateFunction(ctx, tabId, pageState);
    return { url, title };
  } catch {
    const tab = await getTab(tabId);
    return { url: tab.url || '', title: tab.title || '' };
  }
}

/**
 * Polls document.readyState. Evaluations may fail while the old document is
 * torn down ("Execution context was destroyed"); those are retried.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {number} deadline epoch ms
 * @param {string} url for the timeout message
 * @param {{event: (ms: number) => Promise<any>, cancel: () => void}} [loaded] a tap on Page.loadEventFired set before navigating
 */
async function waitForDocumentComplete(ctx, tabId, deadline, url, loaded) {
  let tap = loaded;
  try {
    for (;;) {
      const state = await evaluateFunction(ctx, tabId, pageState).catch(rethrowDialog);
      if (state?.readyState === 'complete')
        return;
      if (Date.now() >= deadline)
        throw serverError(`${url} did not finish loading in tab ${tabId} within ${NAVIGATION_TIMEOUT_MS / 1000} s`);
      if (tap) {
        // The load event answers at once (one event: the tap is spent either way); polling
        // is the fallback (an event missed, a load event of the document before).
        await tap.event(LOAD_POLL_MS);
        tap = undefined;
      } else {
        await new Promise(resolve => setTimeout(resolve, loaded ? LOAD_FALLBACK_POLL_MS : POLL_INTERVAL_MS));
      }
    }
  } finally {
    loaded?.cancel();
  }
}

/** The chrome.tabs fallback when the tab cannot be attached. */
async function waitForTabComplete(tabId, deadline, url) {
  await poll(deadline, async () => (await getTab(tabId)).status === 'complete',
      () => `${url} did not finish loading in tab ${tabId} within ${NAVIGATION_TIMEOUT_MS / 1000} s`);
}

/**
 * @param {number} deadline epoch ms
 * @param {() => Promise<boolean>} done
 * @param {() => string} timeoutMessage
 */
async function poll(deadline, done, timeoutMessage) {
  while (!(await done())) {
    if (Date.now() >= deadline)
      throw serverError(timeoutMessage());
    await new Promise(resolve => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

/** @param {any} details CDP Runtime.ExceptionDetails */
function exceptionText(details) {
  return details.exception?.description?.split('\n')[0] ?? details.text ?? 'unknown exception';
}

/** @param {unknown} error */
function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}
