/**
 * The extension's `chrome.debugger` attachments, one per tab, made on demand.
 *
 * Commands go through CDP rather than content scripts so they work on
 * background tabs and in headless Chrome, and so `forwardCDPCommand` and the
 * built-in commands share one attachment (Chrome allows one debugger client
 * per extension per tab). Attaching shows the "is debugging this browser"
 * bar, so tabs are attached only when a command needs them and detached as
 * soon as their connection ends.
 *
 * The `chrome.debugger` event listeners live in RelayConnection, which owns
 * the socket those events are forwarded to; it calls {@link forget} when
 * Chrome reports a detach.
 */

import { KEEP_BLOBS_SCRIPT } from './downloads.js';
import { AUTO_ATTACH, FrameSessions } from './frame-sessions.js';
import { DOM_WATCH_SCRIPT } from './settle.js';
import { INTERNALS_SCRIPT } from './snapshot.js';
import { EventTaps } from './event-taps.js';
import { NetworkLog } from './network.js';
import { PageEvents } from './page-events.js';
import { WebMcpTools } from './webmcp-store.js';
import { WEBMCP_BINDING, WEBMCP_SCRIPT } from './webmcp-script.js';

/** CDP protocol version every Chromium since 2017 speaks. */
const PROTOCOL_VERSION = '1.3';

/** Default time a CDP command may take before we give up and tell the client. */
export const DEFAULT_CDP_TIMEOUT_MS = 30_000;
/** How long attaching waits for Page and Runtime events to be enabled. */
const ENABLE_TIMEOUT_MS = 3_000;

/**
 * CDP methods that still work while the page shows a JavaScript dialog; any other command
 * would wait behind the dialog until it is answered, so it is refused at once instead.
 */
const WORK_DESPITE_DIALOG = new Set([
  'Page.handleJavaScriptDialog', 'Page.getNavigationHistory', 'Target.getTargetInfo', 'Browser.getVersion',
]);

/** A command that cannot run, or stopped waiting, because the page shows a dialog. */
export class DialogOpenError extends Error {
  /**
   * @param {number} tabId
   * @param {import('./page-events.js').OpenDialog} dialog
   * @param {boolean} openedDuring whether the dialog opened while the command ran (so the
   *   command itself most likely opened it)
   */
  constructor(tabId, dialog, openedDuring) {
    super(`tab ${tabId} shows a JavaScript ${dialog.type} dialog ("${dialog.message}"), and the page waits ` +
        'for an answer before doing anything else; answer it with handleDialog (in mcp-relay bridge: ' +
        'browser_handle_dialog with accept true or false)');
    this.tabId = tabId;
    this.dialog = dialog;
    this.openedDuring = openedDuring;
  }
}

export class DebuggerSessions {
  constructor() {
    /**
     * tab id → attach in progress or done. A promise, not a flag, so two
     * commands racing on a fresh tab share one attach instead of the second
     * failing with "Another debugger is already attached".
     * @type {Map<number, Promise<void>>}
     */
    this._attachments = new Map();
    /** Dialogs and console messages of the attached tabs, fed by ConnectionState. */
    this.events = new PageEvents();
    /** Network requests of the attached tabs (networkRequests, settling), fed by ConnectionState. */
    this.network = new NetworkLog();
    /** The tools pages registered (WebMCP), per tab, fed by ConnectionState. */
    this.webmcp = new WebMcpTools();
    /** One-shot waits for an event a command causes (a drag's Input.dragIntercepted). */
    this.taps = new EventTaps();
    /** The child sessions of the attached tabs' frames of other sites, fed by ConnectionState. */
    this.frames = new FrameSessions();
    /** @type {Map<number, Record<string, string>>} emulateMedia's overrides per tab (Chrome drops them on detach) */
    this.media = new Map();
    /**
     * "tab id method" → how many mutes are open: events the extension causes itself (a
     * screenshot's screencast kick) that the client never asked for.
     * @type {Map<string, number>}
     */
    this._muted = new Map();
  }

  /**
   * Keeps a tab's `method` events from the client until the returned function is called.
   * Mutes nest; calling the returned function twice undoes only one.
   *
   * @param {number} tabId
   * @param {string} method
   * @returns {() => void}
   */
  mute(tabId, method) {
    const key = `${tabId} ${method}`;
    this._muted.set(key, (this._muted.get(key) ?? 0) + 1);
    let done = false;
    return () => {
      if (done)
        return;
      done = true;
      const left = (this._muted.get(key) ?? 1) - 1;
      if (left > 0)
        this._muted.set(key, left);
      else
        this._muted.delete(key);
    };
  }

  /** @param {number} tabId @param {string} method */
  isMuted(tabId, method) {
    return this._muted.has(`${tabId} ${method}`);
  }

  /** @param {number} tabId */
  isAttached(tabId) {
    return this._attachments.has(tabId);
  }

  /** @returns {number[]} */
  attachedTabs() {
    return [...this._attachments.keys()];
  }

  /** @param {number} tabId */
  attach(tabId) {
    let attachment = this._attachments.get(tabId);
    if (!attachment) {
      attachment = this._attach(tabId);
      this._attachments.set(tabId, attachment);
      attachment.catch(() => {
        if (this._attachments.get(tabId) === attachment)
          this._attachments.delete(tabId);
      });
    }
    return attachment;
  }

  /** @param {number} tabId */
  async _attach(tabId) {
    try {
      await chrome.debugger.attach({ tabId }, PROTOCOL_VERSION);
    } catch (error) {
      if (!/another debugger/i.test(String(error?.message ?? error)))
        throw new Error(attachFailureMessage(tabId, error));
      // Chrome keeps our attachments when it stops this service worker, and the
      // restarted worker has forgotten them. detach() only succeeds for our own
      // session, so it frees a stale one and leaves DevTools alone.
      try {
        await chrome.debugger.detach({ tabId });
        await chrome.debugger.attach({ tabId }, PROTOCOL_VERSION);
      } catch {
        throw new Error(attachFailureMessage(tabId, error));
      }
    }
    // Background tabs are not focused; without focus emulation, focus(),
    // :focus styles and typed text behave as if the user clicked elsewhere.
    await chrome.debugger.sendCommand({ tabId }, 'Emulation.setFocusEmulationEnabled', { enabled: true })
        .catch(() => {});
    // Dialog events (Page), console messages (Runtime, and the browser's own in Log) and requests (Network).
    // Bounded: on a tab that already shows a dialog these hang until it is answered, and attaching must not.
    // WebMCP (webmcp.js): the page's own tools as they come and go; "wasn't found" in a browser without it.
    await Promise.all(['Page.enable', 'Runtime.enable', 'Log.enable', 'Network.enable', 'WebMCP.enable'].map(method =>
      withTimeout(chrome.debugger.sendCommand({ tabId }, method, {}), ENABLE_TIMEOUT_MS, () => `${method} timed out`)
          .catch(() => {})));
    // In each new document: blob: URLs stay readable for a download's capture (downloads.js),
    // DOM changes are timed for settling (settle.js), and components' own ARIA is recorded
    // for the snapshot (snapshot.js).
    // The page's own tools (webmcp.js): changes reported through a binding, in this document too.
    const source = `${KEEP_BLOBS_SCRIPT};\n${DOM_WATCH_SCRIPT};\n${INTERNALS_SCRIPT};\n${WEBMCP_SCRIPT};`;
    for (const [method, params] of [
      ['Runtime.addBinding', { name: WEBMCP_BINDING }],
      ['Page.addScriptToEvaluateOnNewDocument', { source }],
      // Frames of other sites as child sessions (frame-sessions.js), for the snapshot and actions.
      ['Target.setAutoAttach', AUTO_ATTACH],
    ]) {
      await withTimeout(chrome.debugger.sendCommand({ tabId }, method, params),
          ENABLE_TIMEOUT_MS, () => `${method} timed out`).catch(() => {});
    }
    // Not awaited: behind a dialog it waits for the answer, and attaching must not.
    chrome.debugger.sendCommand({ tabId }, 'Runtime.evaluate', { expression: WEBMCP_SCRIPT }).catch(() => {});
  }

  /**
   * Sends one CDP command, attaching first if needed. If Chrome detached us
   * behind our back (the user dismissed the debugging bar, the tab crashed
   * and reloaded), attaches again once and retries.
   *
   * @param {number} tabId
   * @param {string} method
   * @param {object} [params]
   * @param {{timeoutMs?: number, sessionId?: string, behindDialog?: boolean}} [options]
   *   `behindDialog`: sent even while the page shows a dialog, for Chrome to run once it is
   *   answered (undoing what an action set up), rather than refused
   * @returns {Promise<any>}
   */
  async send(tabId, method, params = {}, { timeoutMs = DEFAULT_CDP_TIMEOUT_MS, sessionId, behindDialog = false } = {}) {
    for (let attempt = 0; ; attempt++) {
      await this.attach(tabId);
      const target = sessionId ? { tabId, sessionId } : { tabId };
      const mayBlock = !sessionId && !behindDialog && !WORK_DESPITE_DIALOG.has(method);
      const open = mayBlock ? this.events.dialog(tabId) : undefined;
      if (open)
        throw new DialogOpenError(tabId, open, false);
      let stopWatching = () => {};
      const dialogOpened = new Promise((_, reject) => {
        if (mayBlock)
          stopWatching = this.events.watchDialogs(tabId, dialog => reject(new DialogOpenError(tabId, dialog, true)));
      });
      try {
        return await withTimeout(
            Promise.race([chrome.debugger.sendCommand(target, method, params), dialogOpened]),
            timeoutMs,
            () => `CDP ${method} on tab ${tabId} got no answer within ${Math.round(timeoutMs / 1000)} s; ` +
                'the page may be hung or showing a dialog');
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (attempt === 0 && /not attached/i.test(message)) {
          this.forget(tabId);
          continue;
        }
        throw error;
      } finally {
        stopWatching();
      }
    }
  }

  /** Chrome already dropped the attachment (onDetach, tab closed). */
  forget(tabId) {
    this._attachments.delete(tabId);
    this.frames.detached(tabId);
    this.media?.delete(tabId);
    this.webmcp?.forget(tabId);
    this.events.detached(tabId);
    this.network.detached(tabId);
  }

  /** @param {number} tabId */
  async detach(tabId) {
    const attachment = this._attachments.get(tabId);
    if (!attachment)
      return;
    this._attachments.delete(tabId);
    this.events.detached(tabId);
    this.frames.detached(tabId);
    this.media?.delete(tabId);
    this.webmcp?.forget(tabId);
    try {
      await attachment;
      await chrome.debugger.detach({ tabId });
    } catch {
      // The tab is gone or never attached; either way nothing is left to release.
    }
  }

  /**
   * Chrome keeps an extension's debugger sessions when it stops the service
   * worker; the restarted worker knows nothing of them, and they keep the
   * "is debugging this browser" bar up. Detaching succeeds only for our own
   * sessions, so this leaves DevTools and other extensions alone.
   */
  static async detachLeftovers() {
    const targets = await chrome.debugger.getTargets();
    await Promise.all(targets
        .filter(target => target.attached && target.tabId !== undefined)
        .map(target => chrome.debugger.detach({ tabId: target.tabId }).catch(() => {})));
  }

  async detachAll() {
    await Promise.all(this.attachedTabs().map(tabId => this.detach(tabId)));
  }
}

/**
 * @param {number} tabId
 * @param {unknown} error
 */
function attachFailureMessage(tabId, error) {
  const reason = error instanceof Error ? error.message : String(error);
  if (/another debugger/i.test(reason))
    return `Cannot control tab ${tabId}: another debugger (DevTools or another extension) is attached to it; close DevTools on that tab or pick another tab`;
  if (/cannot access|cannot attach/i.test(reason))
    return `Cannot control tab ${tabId}: Chrome does not let extensions debug this page (chrome://, the Web Store, other extensions); navigate it to a web page or use another tab`;
  if (/no tab with/i.test(reason))
    return `tab ${tabId} does not exist (it may have been closed); call getTabs for the open tabs`;
  return `Cannot control tab ${tabId}: ${reason}`;
}

/**
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {() => string} message
 * @returns {Promise<T>}
 */
function withTimeout(promise, ms, message) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
