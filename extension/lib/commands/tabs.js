/**
 * Tabs and navigation: listing, opening (an agent's tab gets a window of its own), selecting,
 * bringing to the front and closing tabs, and moving a tab to a URL or through its history,
 * answering once the document has loaded.
 */

import { ErrorCode, RpcError, serverError } from '../rpc.js';
import { pageState } from '../page-scripts.js';
import { downloadStarted } from './action-reports.js';
import { POLL_INTERVAL_MS, checkUrl, evaluateFunction, getTab, messageOf, noCurrentTab, pageInfo, poll, rethrowDialog, targetTab } from './shared.js';

/** @typedef {import('../commands.js').CommandContext} CommandContext */

/** How long a navigation may take before the client is told it timed out, unless it names its own. */
const NAVIGATION_TIMEOUT_MS = 30_000;

/** A navigation waiting for its load event checks the document at least this often. */
const LOAD_POLL_MS = 250;

const LOAD_FALLBACK_POLL_MS = 25;

/**
 * Once the document is parsed (DOMContentLoaded), how long a navigation waits for its load
 * event before answering with the page as it is. One image or script that never comes (a
 * tracker that hangs, a slow CDN) held the load event, and with it the answer, until the
 * navigation failed after 30 s although the page was there to read. Playwright MCP's
 * navigation waits for the load event 5 s after DOMContentLoaded too.
 */
export const LOAD_AFTER_PARSE_MS = 5_000;

/** @param {CommandContext} ctx */
export async function getTabs(ctx) {
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

/** @param {CommandContext} ctx @param {{url?: string, active?: boolean, timeoutMs?: number}} params */
export async function createTab(ctx, { url, active = false, timeoutMs }) {
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
    const page = await navigateTab(ctx, tab.id, url, timeoutMs);
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
export async function selectTab(ctx, { tabId }) {
  const tab = await getTab(tabId);
  ctx.tabs.select(ctx.connectionId, tabId);
  return { tabId, url: tab.url || tab.pendingUrl || '', title: tab.title || '' };
}

/** @param {CommandContext} ctx @param {{tabId?: number}} params */
export async function activateTab(ctx, { tabId }) {
  const id = await targetTab(ctx, tabId);
  ctx.tabs.select(ctx.connectionId, id);
  const tab = await chrome.tabs.update(id, { active: true });
  await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {
    // Headless and some window managers refuse focus; the tab is still the active one in its window.
  });
  return { tabId: id, active: true };
}

/** @param {CommandContext} ctx @param {{tabId?: number}} params */
export async function closeTab(ctx, { tabId }) {
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

/** @param {CommandContext} ctx @param {{url: string, tabId?: number, timeoutMs?: number}} params */
export async function navigate(ctx, { url, tabId, timeoutMs }) {
  checkUrl(url);
  // First command of a fresh connection: give it a tab of its own (unfocused) rather than an error.
  if (tabId === undefined && ctx.tabs.currentTab(ctx.connectionId) === undefined)
    return createTab(ctx, { url, active: false, timeoutMs });
  const id = await targetTab(ctx, tabId);
  return { tabId: id, ...(await navigateTab(ctx, id, url, timeoutMs)) };
}

/**
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {string} url
 * @param {number} [timeoutMs] how long it may take to commit, and then to load
 * @returns {Promise<{url: string, title: string}>}
 */
async function navigateTab(ctx, tabId, url, timeoutMs = NAVIGATION_TIMEOUT_MS) {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let response;
  // Listening before navigating: a light page's load event can come right behind the commit.
  await ctx.debuggers.attach(tabId).catch(() => {});
  const loaded = ctx.debuggers.taps?.expect(tabId, 'Page.loadEventFired');
  try {
    // Page.navigate answers once the new document commits, or with errorText.
    response = await ctx.debuggers.send(tabId, 'Page.navigate', { url }, { timeoutMs });
  } catch (error) {
    loaded?.cancel();
    if (/got no answer within/.test(messageOf(error)))
      throw await navigationTimedOut(ctx, tabId, url, started, timeoutMs);
    if (!/does not let extensions debug/.test(messageOf(error)))
      throw error;
    // The tab shows a chrome:// page we may not attach to; leave it through the tabs API.
    await chrome.tabs.update(tabId, { url });
    await waitForTabComplete(tabId, deadline, url, timeoutMs);
    return pageInfo(ctx, tabId);
  }
  if (response?.errorText) {
    loaded?.cancel();
    // A URL that answers with a file is a download, not a page: the tab stays where it was,
    // and the download is captured (the result's `downloads`).
    if (/ERR_ABORTED/.test(response.errorText) && await downloadStarted(ctx, tabId, started))
      return { ...(await pageInfo(ctx, tabId)), note: `${url} is a file, not a page: it was downloaded (see "downloads"), and the tab stayed where it was` };
    // Chrome aborts a top-level data: URL an extension's debugger asks for, whatever it holds.
    if (/ERR_ABORTED/.test(response.errorText) && /^data:/i.test(url)) {
      throw serverError(`Chrome refused to open the data: URL in tab ${tabId} (${response.errorText}): it opens no ` +
          'top-level data: URL for an extension. Serve the page over http(s), or write it into the page with browser_evaluate');
    }
    throw serverError(`${url} failed to load in tab ${tabId}: ${response.errorText}`);
  }
  const stillLoading = await waitForDocumentComplete(ctx, tabId, deadline, url, loaded, timeoutMs);
  const page = { ...(await pageInfo(ctx, tabId)), ...(stillLoading ? { stillLoading } : {}) };
  // A page the server answered with an error (404, 500) loads like any other; the model
  // should not read "Not Found" as the content it came for.
  const answered = ctx.debuggers.network?.pageStatus(tabId);
  return answered && answered.status >= 400 ? { ...page, httpError: answered } : page;
}

/**
 * A navigation that did not commit in time is stopped, so the tab does
 * not go on waiting for it: a pending Page.navigate held the tab's next CDP commands back by
 * as long again (measured: the next navigation took 60 s, the one after 30 s). The error says
 * what the network log knows: whether the request went out and was answered.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {string} url
 * @param {number} started when the navigation was asked for
 * @param {number} timeoutMs how long it had
 */
async function navigationTimedOut(ctx, tabId, url, started, timeoutMs) {
  // Read before stopping: stopping marks the request canceled.
  const request = ctx.debuggers.network?.lastDocument(tabId, started);
  const unanswered = request && request.status === undefined && !request.failure;
  await ctx.debuggers.send(tabId, 'Page.stopLoading', {}, { timeoutMs: 2_000 }).catch(() => {});
  const seconds = Math.round(timeoutMs / 100) / 10;
  const what = unanswered
    ? `the browser asked ${request.url} for the page and no answer came: the server is slow or hung, or ` +
      'the browser is waiting for a free connection to it (Chrome opens at most 6 at a time to one ' +
      'host, and pages that keep a stream open, live updates or a chat, hold theirs in other tabs)'
    : request?.status !== undefined
      ? `the server answered ${request.status} and the page did not open`
      : 'no request for it was seen';
  const tab = await chrome.tabs.get(tabId).catch(() => undefined);
  return serverError(`${url} did not load within ${seconds} s in tab ${tabId}: ${what}. The navigation was stopped; ` +
      `the tab shows ${tab?.url || 'what it showed before'}`);
}

/**
 * @param {CommandContext} ctx
 * @param {{tabId?: number}} params
 * @param {-1|1} delta
 */
export async function goThroughHistory(ctx, { tabId }, delta) {
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
  const stillLoading = await waitForDocumentComplete(ctx, id, deadline, entries[target].url);
  return { tabId: id, ...(await pageInfo(ctx, id)), ...(stillLoading ? { stillLoading } : {}) };
}


/**
 * Polls document.readyState. Evaluations may fail while the old document is
 * torn down ("Execution context was destroyed"); those are retried. A parsed document
 * whose load event has not fired LOAD_AFTER_PARSE_MS later is answered as it is, with
 * what holds it (`{waitedMs, inFlight}`: requests still open); undefined once loaded.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {number} deadline epoch ms
 * @param {string} url for the timeout message
 * @param {{event: (ms: number) => Promise<any>, cancel: () => void}} [loaded] a tap on Page.loadEventFired set before navigating
 * @param {number} [timeoutMs] what the deadline allowed, for the timeout message
 * @returns {Promise<{waitedMs: number, inFlight: number} | undefined>}
 */
async function waitForDocumentComplete(ctx, tabId, deadline, url, loaded, timeoutMs = NAVIGATION_TIMEOUT_MS) {
  let tap = loaded;
  let parsedAt;
  try {
    for (;;) {
      const state = await evaluateFunction(ctx, tabId, pageState).catch(rethrowDialog);
      if (state?.readyState === 'complete')
        return undefined;
      const now = Date.now();
      if (state?.readyState === 'interactive')
        parsedAt ??= now;
      if (parsedAt !== undefined && now - parsedAt >= LOAD_AFTER_PARSE_MS)
        return { waitedMs: now - parsedAt, inFlight: ctx.debuggers.network?.quiet(tabId).inFlight ?? 0 };
      // The deadline is for the page to open and be parsed; then LOAD_AFTER_PARSE_MS bounds the rest.
      if (parsedAt === undefined && now >= deadline)
        throw serverError(`${url} did not finish loading in tab ${tabId} within ${timeoutMs / 1000} s`);
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
async function waitForTabComplete(tabId, deadline, url, timeoutMs) {
  await poll(deadline, async () => (await getTab(tabId)).status === 'complete',
      () => `${url} did not finish loading in tab ${tabId} within ${timeoutMs / 1000} s`);
}
