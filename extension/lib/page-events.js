/**
 * What the pages of attached tabs say on their own: JavaScript dialogs
 * (`alert`, `confirm`, `prompt`, `beforeunload`) and console messages.
 *
 * Fed from `chrome.debugger.onEvent` (Page, Runtime and Log are enabled on
 * attach, see debugger-sessions.js). A dialog is tracked from its
 * `Page.javascriptDialogOpening` event, never by asking the page: while a
 * dialog is open the page's renderer is blocked, and commands that need it
 * (`Runtime.evaluate`, even `Page.enable`) hang until it is answered.
 *
 * Console messages are kept per tab in a bounded ring, each message clipped,
 * so a chatty page cannot grow the service worker's memory. They are what the
 * page's DevTools console shows: the page's console calls and uncaught
 * exceptions (Runtime), and the browser's own messages about the page (Log): a
 * resource that failed to load or answered 404, a blocked request, a preload
 * not used, a deprecated API. Those are often what explains a broken page, and
 * Playwright MCP lists them too (its type is the entry's level).
 *
 * Pure: no `chrome.*`, so Node tests it directly.
 */

/** Messages kept per tab; older ones are dropped (and counted). */
export const CONSOLE_LIMIT = 500;
/** Characters kept of one message. */
export const MESSAGE_CLIP = 2_000;

/**
 * @typedef {{type: string, message: string, defaultPrompt?: string, url?: string}} OpenDialog
 * @typedef {{type: string, text: string, url?: string, line?: number, time: number}} ConsoleEntry
 * @typedef {{backendNodeId: number, multiple: boolean, at: number}} FileChooser the input a page's
 *   file chooser was opened for, whether it takes several files, and when (`Date.now()`)
 */

/** A browser log entry's level as a console type: `verbose` is what the console calls debug. */
const LOG_LEVEL_TYPES = { verbose: 'debug', info: 'info', warning: 'warning', error: 'error' };

/** @param {unknown} url */
function isFavicon(url) {
  try {
    return new URL(String(url)).pathname === '/favicon.ico';
  } catch {
    return false;
  }
}

/** Console API types that count as errors for `onlyErrors`; uncaught exceptions are `error` too. */
const ERROR_TYPES = new Set(['error', 'assert']);

export class PageEvents {
  /** @param {{limit?: number, clip?: number}} [options] */
  constructor({ limit = CONSOLE_LIMIT, clip = MESSAGE_CLIP } = {}) {
    this._limit = limit;
    this._clip = clip;
    /** @type {Map<number, OpenDialog>} */
    this._dialogs = new Map();
    /**
     * Per tab: the kept messages, how many were dropped, how many were ever kept (`pushed`), and
     * where the page now shown began, counted the same way (`pageStart`).
     * @type {Map<number, {entries: ConsoleEntry[], dropped: number, pushed: number, pageStart: number}>}
     */
    this._console = new Map();
    /** @type {Map<number, Set<(dialog: OpenDialog) => void>>} */
    this._dialogWatchers = new Map();
    /**
     * Per tab: the file chooser an action opened and nothing has answered yet (action-reports.js
     * intercepts it, so no dialog of the system's is shown; browser_file_upload answers it).
     * @type {Map<number, FileChooser>}
     */
    this._choosers = new Map();
  }

  /**
   * One `chrome.debugger.onEvent`. Events of child sessions (iframes, workers) are ignored:
   * the tools speak of the tab's page.
   *
   * @param {{tabId?: number, sessionId?: string}} source
   * @param {string} method
   * @param {any} params
   */
  handle(source, method, params) {
    const tabId = source?.tabId;
    if (tabId === undefined || source.sessionId)
      return;
    switch (method) {
      case 'Page.javascriptDialogOpening': {
        /** @type {OpenDialog} */
        const dialog = { type: String(params?.type ?? 'alert'), message: this._clipped(String(params?.message ?? '')) };
        if (dialog.type === 'prompt')
          dialog.defaultPrompt = String(params?.defaultPrompt ?? '');
        if (params?.url)
          dialog.url = String(params.url);
        this._dialogs.set(tabId, dialog);
        for (const watcher of this._dialogWatchers.get(tabId) ?? [])
          watcher(dialog);
        return;
      }
      case 'Page.javascriptDialogClosed':
        this._dialogs.delete(tabId);
        return;
      case 'Page.fileChooserOpened':
        if (typeof params?.backendNodeId === 'number')
          this._choosers.set(tabId, { backendNodeId: params.backendNodeId, multiple: params.mode === 'selectMultiple', at: Date.now() });
        return;
      case 'Page.frameNavigated':
        // The main frame shows a new page: what it logs from now on is "since the page", and
        // a file chooser of the page before has no input left to answer.
        if (params?.frame && !params.frame.parentId) {
          const ring = this._ring(tabId);
          ring.pageStart = ring.pushed;
          this._choosers.delete(tabId);
        }
        return;
      case 'Runtime.consoleAPICalled': {
        const frame = params?.stackTrace?.callFrames?.[0];
        this._push(tabId, {
          type: String(params?.type ?? 'log'),
          text: (params?.args ?? []).map(describeRemoteObject).join(' '),
          ...(frame?.url ? { url: frame.url, line: frame.lineNumber + 1 } : {}),
          time: typeof params?.timestamp === 'number' ? params.timestamp : Date.now(),
        });
        return;
      }
      case 'Log.entryAdded': {
        const entry = params?.entry ?? {};
        // A worker's messages are not the page's (as Playwright reads them too), and the
        // favicon the browser fetches for its tab strip is the browser's: its 404 on a page
        // without one would be the first "error" of every such page.
        if (entry.source === 'worker' || (entry.source === 'network' && isFavicon(entry.url)))
          return;
        this._push(tabId, {
          type: LOG_LEVEL_TYPES[entry.level] ?? 'info',
          text: String(entry.text ?? ''),
          // lineNumber is 0-based, as a stack frame's.
          ...(entry.url ? { url: String(entry.url), ...(typeof entry.lineNumber === 'number' ? { line: entry.lineNumber + 1 } : {}) } : {}),
          time: typeof entry.timestamp === 'number' ? entry.timestamp : Date.now(),
        });
        return;
      }
      case 'Runtime.exceptionThrown': {
        const details = params?.exceptionDetails ?? {};
        const text = details.exception?.description ?? details.exception?.value ?? details.text ?? 'Uncaught exception';
        this._push(tabId, {
          type: 'error',
          text: `Uncaught ${String(text).replace(/^Uncaught /, '')}`,
          ...(details.url ? { url: details.url, line: (details.lineNumber ?? 0) + 1 } : {}),
          time: typeof params?.timestamp === 'number' ? params.timestamp : Date.now(),
        });
        return;
      }
      default:
    }
  }

  /** @param {number} tabId @returns {OpenDialog | undefined} */
  dialog(tabId) {
    return this._dialogs.get(tabId);
  }

  /** @returns {Map<number, OpenDialog>} the dialogs open now, by tab (a copy) */
  openDialogs() {
    return new Map(this._dialogs);
  }

  /**
   * Calls `onOpen` when a dialog opens on the tab; returns the function that stops watching.
   *
   * @param {number} tabId
   * @param {(dialog: OpenDialog) => void} onOpen
   */
  watchDialogs(tabId, onOpen) {
    let watchers = this._dialogWatchers.get(tabId);
    if (!watchers) {
      watchers = new Set();
      this._dialogWatchers.set(tabId, watchers);
    }
    watchers.add(onOpen);
    return () => {
      watchers.delete(onOpen);
      if (watchers.size === 0 && this._dialogWatchers.get(tabId) === watchers)
        this._dialogWatchers.delete(tabId);
    };
  }

  /**
   * The tab's kept console messages, oldest first. `sincePage`: only those of the page now shown
   * (since the main frame's last navigation), as Playwright MCP lists them; `earlier` counts the
   * kept ones of earlier pages left out.
   *
   * @param {number} tabId
   * @param {{onlyErrors?: boolean, sincePage?: boolean}} [options]
   * @returns {{messages: ConsoleEntry[], dropped: number, earlier: number}}
   */
  consoleMessages(tabId, { onlyErrors = false, sincePage = false } = {}) {
    const ring = this._console.get(tabId);
    if (!ring)
      return { messages: [], dropped: 0, earlier: 0 };
    // The first kept entry's number among all ever kept; the page began at pageStart.
    const first = ring.pushed - ring.entries.length;
    const from = sincePage ? Math.min(ring.entries.length, Math.max(0, ring.pageStart - first)) : 0;
    const shown = ring.entries.slice(from);
    const messages = onlyErrors ? shown.filter(entry => ERROR_TYPES.has(entry.type)) : shown;
    return { messages, dropped: ring.dropped, earlier: from };
  }

  /**
   * Where the tab's console stands now, for {@link PageEvents#newSince}.
   *
   * @param {number} tabId
   */
  mark(tabId) {
    return this._console.get(tabId)?.pushed ?? 0;
  }

  /**
   * How many errors and warnings the tab's console gained since `mark` (of those still kept).
   *
   * @param {number} tabId
   * @param {number} mark
   * @returns {{errors: number, warnings: number}}
   */
  newSince(tabId, mark) {
    const ring = this._console.get(tabId);
    const said = { errors: 0, warnings: 0 };
    if (!ring)
      return said;
    const first = ring.pushed - ring.entries.length;
    for (const entry of ring.entries.slice(Math.max(0, mark - first))) {
      if (ERROR_TYPES.has(entry.type))
        said.errors += 1;
      else if (entry.type === 'warning')
        said.warnings += 1;
    }
    return said;
  }

  /** The debugger let go of the tab: an open dialog can no longer be known to be open. */
  detached(tabId) {
    this._dialogs.delete(tabId);
  }

  /** The tab's dialog was answered. */
  answered(tabId) {
    this._dialogs.delete(tabId);
  }

  /** The tab is gone. */
  forget(tabId) {
    this._dialogs.delete(tabId);
    this._console.delete(tabId);
    this._choosers.delete(tabId);
  }

  /**
   * The file chooser an action opened in the tab and no upload has answered, if any.
   *
   * @param {number} tabId
   * @returns {FileChooser | undefined}
   */
  fileChooser(tabId) {
    return this._choosers.get(tabId);
  }

  /** The tab's file chooser was given its files. @param {number} tabId */
  fileChooserAnswered(tabId) {
    this._choosers.delete(tabId);
  }

  /** @param {number} tabId @param {ConsoleEntry} entry */
  _push(tabId, entry) {
    const ring = this._ring(tabId);
    entry.text = this._clipped(entry.text);
    ring.entries.push(entry);
    ring.pushed += 1;
    const excess = ring.entries.length - this._limit;
    if (excess > 0) {
      ring.entries.splice(0, excess);
      ring.dropped += excess;
    }
  }

  /** @param {number} tabId */
  _ring(tabId) {
    let ring = this._console.get(tabId);
    if (!ring) {
      ring = { entries: [], dropped: 0, pushed: 0, pageStart: 0 };
      this._console.set(tabId, ring);
    }
    return ring;
  }

  /** @param {string} text */
  _clipped(text) {
    return text.length > this._clip ? `${text.slice(0, this._clip)}… [${text.length - this._clip} more characters]` : text;
  }
}

/**
 * How the DevTools console would print one argument, briefly.
 *
 * @param {any} object CDP Runtime.RemoteObject
 */
export function describeRemoteObject(object) {
  if (!object)
    return 'undefined';
  if (object.type === 'string')
    return String(object.value);
  if (object.unserializableValue !== undefined)
    return String(object.unserializableValue);
  if (object.type === 'undefined')
    return 'undefined';
  if ('value' in object)
    return typeof object.value === 'object' ? JSON.stringify(object.value) : String(object.value);
  return String(object.description ?? object.className ?? object.type);
}
