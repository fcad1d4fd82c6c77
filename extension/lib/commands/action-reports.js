/**
 * What an action changed, added to its answer: the page it led to (`pageChanged`), the
 * downloads it started, the errors and warnings the page's console gained (`console`), what a
 * person would have seen it cause (a form the browser's check stopped, a message the page
 * announced, a field it marked invalid: action-evidence.js), and with `snapshot: true` the
 * page's outline.
 */

import { LIVE_REGIONS, OPENABLE, actionEvidence, watchAction } from '../action-evidence.js';
import { DialogOpenError } from '../debugger-sessions.js';
import { pageState } from '../page-scripts.js';
import { settleAfter } from '../settle.js';
import { outlineOf } from './reading.js';
import { evaluateFunction, getTab, onChooserInput, targetTab } from './shared.js';

/** @typedef {import('../commands.js').CommandContext} CommandContext */

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
    const tabBefore = await targetTab(ctx, params.tabId).catch(() => null);
    const choosers = tabBefore !== null && !loaded;
    const [before] = await Promise.all([
      tabBefore === null ? null : evaluateFunction(ctx, tabBefore, watchAction, LIVE_REGIONS, OPENABLE).catch(() => null),
      choosers ? interceptFileChoosers(ctx, tabBefore, true) : null,
    ]);
    const events = ctx.debuggers?.events;
    const logged = tabBefore === null ? 0 : events?.mark(tabBefore) ?? 0;
    const openedBefore = tabBefore === null ? null : new Set((await tabsOpenedBy(tabBefore)).map(tab => tab.id));
    const started = Date.now();
    let acted;
    try {
      acted = await run(ctx, params);
      return await reportOn(ctx, params, acted, { settle, loaded, started, tabBefore, before, logged, openedBefore });
    } catch (error) {
      // A page may close its own tab once done (a pop-up that saved: `window.close()`): the
      // action did what it was asked, so it answers as done, and says where things go on.
      // The close can land while the action's last input event is still being answered, so
      // the action itself may fail with it.
      const tabId = typeof acted?.tabId === 'number' ? acted.tabId : tabBefore;
      if (error instanceof DialogOpenError || typeof tabId !== 'number' || !await tabWentAway(tabId, error))
        throw error;
      return { ...(acted ?? { tabId }), tabClosed: await closedTab(ctx, tabId) };
    } finally {
      if (choosers)
        void interceptFileChoosers(ctx, tabBefore, false);
    }
  };
}

/**
 * Chrome answers a page's file chooser (a click on "Choose file", or on a button whose script
 * clicks a hidden file input) with the system's file dialog: on the person's screen, for an
 * assistant's click, a window only the person can close, and one the assistant cannot answer.
 * While an action runs, the tab's file choosers are intercepted instead: Chrome shows nothing
 * and reports the input (`Page.fileChooserOpened`, kept by page-events.js), the action's
 * answer says a file chooser is open (`fileChooser`), and browser_file_upload gives that input
 * its files. Only while an action runs, so a person's own click in the tab opens the dialog
 * as it always does.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {boolean} enabled
 */
async function interceptFileChoosers(ctx, tabId, enabled) {
  // Chrome holds the command while the page shows a dialog (one the action opened): turning
  // the interception on then fails, as the action does; turning it off waits for the answer.
  // A tab let go of meanwhile (the owner stopped the assistant) is not attached again for it:
  // letting go ends the interception too.
  if (!enabled && ctx.debuggers?.isAttached && !ctx.debuggers.isAttached(tabId))
    return;
  await ctx.debuggers?.send(tabId, 'Page.setInterceptFileChooserDialog', { enabled }, { behindDialog: !enabled }).catch(() => {});
}

/**
 * The input a file chooser was opened for, as an answer names it: the element, its label, its
 * ref when a snapshot gave it one, what it accepts. Shipped as source to `onChooserInput`.
 */
const CHOOSER_INPUT = `function () {
  const words = text => String(text || '').replace(/\\s+/g, ' ').trim().slice(0, 80);
  const name = words(this.getAttribute('aria-label') || [...(this.labels || [])].map(label => label.innerText).join(' ') || this.title);
  const registry = window[Symbol.for('mcp-relay.refs')];
  const ref = registry?.refOf.get(this);
  return {
    element: this.localName + (this.id ? '#' + this.id : ''),
    ...(name ? { name } : {}),
    ...(ref && registry.byRef.get(ref)?.deref() === this ? { ref } : {}),
    ...(this.accept ? { accept: this.accept } : {}),
  };
}`;

/** How long an error that speaks of a closing tab waits for Chrome to remove it. */
const TAB_REMOVAL_WAIT_MS = 1_000;

/**
 * Whether the tab is gone, or going: an error that says its page closed or its debugger
 * detached comes a moment before Chrome's tab list drops the tab, so that one is waited for
 * (TAB_REMOVAL_WAIT_MS); any other error with the tab still open is the action's own.
 *
 * @param {number} tabId
 * @param {unknown} error
 */
async function tabWentAway(tabId, error) {
  const gone = () => getTab(tabId).then(() => false, () => true);
  if (await gone())
    return true;
  const message = error instanceof Error ? error.message : String(error);
  if (!/detached|not attached|closed|no tab with/i.test(message))
    return false;
  const deadline = Date.now() + TAB_REMOVAL_WAIT_MS;
  while (Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 50));
    if (await gone())
      return true;
  }
  return false;
}

/**
 * What an action's answer says of its tab the page closed: its id, and the connection's
 * current tab now (the page that opened it, when this connection's), if any.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 */
async function closedTab(ctx, tabId) {
  // Chrome's onRemoved may not have reached the ownership yet.
  ctx.tabs.dropTab(tabId);
  const current = ctx.tabs.currentTab(ctx.connectionId);
  const tab = current === undefined ? null : await chrome.tabs.get(current).catch(() => null);
  return { tabId, ...(tab ? { current: { tabId: tab.id, url: tab.url || '', title: tab.title || '' } } : {}) };
}

/**
 * The rest of {@link reportingChanges}: once the action ran, what it changed.
 *
 * @param {CommandContext} ctx
 * @param {any} params
 * @param {any} acted the action's own result
 * @param {{settle: boolean, loaded: boolean, started: number, tabBefore: number | null, before: any, logged: number, openedBefore: Set<number> | null}} watched
 */
async function reportOn(ctx, params, acted, { settle, loaded, started, tabBefore, before, logged, openedBefore }) {
  const events = ctx.debuggers?.events;
  // An action waits for the requests it set off, not for those the page had open before it
  // (a long poll, a stream), as Playwright MCP's do; a navigation waits for its whole page.
  const result = settle ? await settleAfter(ctx, acted, { loaded, since: loaded ? undefined : started }) : acted;
  if (typeof result?.tabId !== 'number' || result.dialog)
    return result;
  await addDownloads(ctx, result, started);
  const chooser = events?.fileChooser(result.tabId);
  if (chooser && chooser.at >= started) {
    const input = await onChooserInput(ctx, result.tabId, chooser, CHOOSER_INPUT);
    result.fileChooser = { ...input, multiple: chooser.multiple };
  }
  const watched = before !== null && result.tabId === tabBefore;
  const after = await stateAfterAction(ctx, result.tabId, watched ? actionEvidence : pageState, LIVE_REGIONS, OPENABLE);
  // A navigation's page that titled itself once loaded (Gradio sets its title from script)
  // answers with that title, not with the blank it had at its load event and a "Page
  // changed" to the same URL.
  if (loaded && after && typeof result.url === 'string' && after.url === result.url && after.title && after.title !== result.title)
    result.title = after.title;
  if (before && after && (before.url !== after.url || before.title !== after.title))
    result.pageChanged = { url: after.url, title: after.title };
  // The same address loaded again (a form sent to it, the server answering with the page);
  // a navigation's own header says where it went.
  else if (before && after?.newDocument && !loaded)
    result.loadedAgain = { url: after.url, title: after.title };
  for (const seen of EVIDENCE) {
    if (after?.[seen])
      result[seen] = after[seen];
  }
  if (result.changed)
    dropOwnChanges(result, params);
  if (result.shows || result.pageSays)
    dropOwnShows(result, params);
  // What typing or filling took off the page is suggestions redrawn as the words change;
  // what a pick took away is the list it picked from.
  if (typeof params.text === 'string' || Array.isArray(params.fields) || params.values !== undefined)
    delete result.gone;
  // A drop-down opened and closed to pick from it: its answer says so (antd opens on the
  // press, so the click read as `Collapsed: [ref=e10]`; a form filled read so for Shoelace's
  // select among its fields).
  const filled = Array.isArray(params.fields) ? params.fields : [];
  if (result.picked || (result.toggled && filled.some(one => [one?.ref, one?.target].includes(result.toggled.ref) ||
      (result.toggled.name && one?.name === result.toggled.name))))
    delete result.toggled;
  // An Enter the browser's check stopped did not submit anything.
  if (result.formBlocked && result.submitted === true)
    result.submitted = false;
  if (openedBefore && result.tabId === tabBefore)
    await addOpenedTabs(ctx, result, openedBefore);
  // As Playwright MCP's answers say what the console gained: an error a click set off is
  // often why nothing happened. Only when there is something to say.
  const said = events?.newSince(result.tabId, result.tabId === tabBefore ? logged : 0);
  if (said && (said.errors || said.warnings))
    result.console = said;
  if (params.snapshot) {
    const outline = await outlineOf(ctx, result.tabId, {});
    result.snapshot = outline.snapshot;
    if (outline.note)
      result.snapshotNote = outline.note;
  }
  return result;
}

/**
 * The tabs a tab's page opened (a `target=_blank` link, `window.open`).
 *
 * @param {number} tabId
 * @returns {Promise<chrome.tabs.Tab[]>}
 */
async function tabsOpenedBy(tabId) {
  try {
    return (await chrome.tabs.query({})).filter(tab => tab.openerTabId === tabId);
  } catch {
    return [];
  }
}

/**
 * Adds `tabsOpened` to an action's result: the tabs its page opened while it ran. As
 * Playwright MCP's answers list the open tabs when they changed: the model would otherwise
 * not know the page it asked for is in another tab. They become this connection's, as tabs
 * it opened itself (browser_tabs selects them, browser_close closes them); the current tab
 * stays where the action ran.
 *
 * @param {CommandContext} ctx
 * @param {any} result
 * @param {Set<number>} openedBefore
 */
async function addOpenedTabs(ctx, result, openedBefore) {
  const opened = (await tabsOpenedBy(result.tabId)).filter(tab => !openedBefore.has(tab.id));
  for (const tab of opened) {
    try {
      ctx.tabs.claim(ctx.connectionId, tab.id);
      ctx.tabs.markOpenedByAgent(tab.id);
      ctx.tabs.setOpener(tab.id, result.tabId);
    } catch {
      // Another connection's already (it cannot be, fresh as it is): listed, not taken.
    }
  }
  if (opened.length)
    result.tabsOpened = opened.map(tab => ({ tabId: tab.id, url: tab.pendingUrl || tab.url || '', title: tab.title || '' }));
}

/**
 * Wraps a command that may start downloads without being an action that settles (a script).
 *
 * @param {(ctx: CommandContext, params: any) => Promise<any>} run
 */
export function reportingDownloads(run) {
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
export async function downloadStarted(ctx, tabId, since) {
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
export async function addDownloads(ctx, result, started, tabId = result.tabId) {
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

/** What action-evidence.js reports, copied into the action's result when present. */
const EVIDENCE = ['formBlocked', 'markedInvalid', 'pageSays', 'changed', 'changedMore', 'opened', 'closed', 'appeared', 'toggled', 'shows', 'listed', 'gone', 'unread'];

/**
 * Leaves out of `changed` the fields an action that sets values set itself, which its own
 * answer says (`value`, `filled`, `selected`). The page scripts that set a value mark their
 * element, and the page leaves it out; this leaves out what they cannot mark, a field set by
 * clicks and keys (a drop-down the page draws, a slider): the one the action named by ref, and
 * the one focused. A click's own checkbox stays: its new state is what the click did.
 *
 * @param {any} result
 * @param {any} params
 */
function dropOwnChanges(result, params) {
  const named = new Set([params.ref, params.target, ...(Array.isArray(params.fields) ? params.fields.flatMap(f => [f?.ref, f?.target]) : [])]
    .filter(at => typeof at === 'string'));
  const setsValues = result.typed || result.filled || result.selected;
  result.changed = result.changed
    .filter(row => !(setsValues && (row.focused || (row.ref && named.has(row.ref)))))
    .map(({ focused: _focused, ...row }) => row);
  if (!result.changed.length) {
    delete result.changed;
    delete result.changedMore;
  }
}

/**
 * Leaves out of `shows` and `pageSays` the words the action put there itself, which its own
 * answer says: the option a drop-down now shows as chosen (antd draws "Garden" in its select,
 * which read `Page now shows: "Garden"` under `selected: ["Garden"]`), the text typed or
 * filled, a slider's value its own `<output>` announces (Shoelace's range read `Page says
 * (status): 20` after a form filled its tip with 20).
 *
 * @param {any} result
 * @param {any} params
 */
function dropOwnShows(result, params) {
  const own = [params.text, params.value, result.value, ...(Array.isArray(params.values) ? params.values : []),
    ...(Array.isArray(result.selected) ? result.selected : []),
    ...(Array.isArray(params.fields) ? params.fields.map(f => (typeof f?.value === 'number' ? String(f.value) : f?.value)) : [])]
    .filter(one => typeof one === 'string' && one.trim()).map(one => one.trim());
  const sets = new Set([...own, own.join(', '), own.join(' ')]);
  for (const key of ['shows', 'pageSays']) {
    if (!result[key])
      continue;
    // (A part that holds fields is more than the words chosen: Trac's filter row for the
    // field chosen, "Priority", with its own drop-downs to set.)
    result[key] = result[key].filter(row => row.fields || !sets.has(row.text));
    if (!result[key].length)
      delete result[key];
  }
}

/**
 * The page's URL and title once an action returned. A page that is being replaced
 * cannot run script; the tab then says where it is going. A dialog is rethrown.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {(...args: any[]) => any} [read] the page function that reads them (`actionEvidence` adds what it saw)
 * @param {...unknown} args its arguments
 */
export async function stateAfterAction(ctx, tabId, read = pageState, ...args) {
  try {
    return await evaluateFunction(ctx, tabId, read, ...args);
  } catch (error) {
    if (error instanceof DialogOpenError)
      throw error;
    const tab = await getTab(tabId);
    return { url: tab.pendingUrl || tab.url || '', title: tab.title || '' };
  }
}
