/**
 * What this browser keeps for each MCP connection the relay routes to it:
 * owned tabs, the current tab, and the debugger sessions on those tabs.
 *
 * It outlives any one relay socket on purpose. The relay keys connections by
 * extension identity (user + client_id), not by socket: when a new socket of
 * ours arrives before the relay noticed the old one die, the connections and
 * their pending requests carry over, and the relay says so with a `status`
 * listing them. So a socket drop does not wipe this state; `status` confirms
 * or prunes it, and RelaySupervisor releases everything when no status
 * vouches for it in time.
 *
 * Owns the chrome.tabs / chrome.debugger listeners that keep these books
 * right; RelayConnection owns only the one that forwards CDP events to its
 * socket.
 */

import { DebuggerSessions } from './debugger-sessions.js';
import { DownloadBook, fetchDownload, safeName } from './downloads.js';
import { DIRECT_CONNECTION } from './ids.js';
import { PersonRequests } from './person-requests.js';
import { TabOwnership } from './tabs.js';

/** How long a download waits for an agent tab's announcement while agent tabs are attached. */
const DOWNLOAD_CLAIM_WAIT_MS = 300;

export class ConnectionState {
  constructor() {
    this.tabs = new TabOwnership();
    this.debuggers = new DebuggerSessions();
    /** Downloads the connections' actions started in their tabs, captured (downloads.js). */
    this.downloads = new DownloadBook();
    /** Hand-offs and ask-before prompts waiting for the person (person-requests.js). */
    this.person = new PersonRequests();
    /** @type {import('./owner-control.js').OwnerControl | null} the owner's rules; the service worker installs them */
    this.owner = null;
    this._onTabRemoved = this._onTabRemoved.bind(this);
    this._onDebuggerDetach = this._onDebuggerDetach.bind(this);
    this._onDebuggerEvent = this._onDebuggerEvent.bind(this);
    chrome.tabs.onRemoved.addListener(this._onTabRemoved);
    chrome.debugger.onDetach.addListener(this._onDebuggerDetach);
    chrome.debugger.onEvent.addListener(this._onDebuggerEvent);
    this._onDeterminingFilename = this._onDeterminingFilename.bind(this);
    chrome.downloads?.onDeterminingFilename.addListener(this._onDeterminingFilename);
  }

  /**
   * @param {string} connectionId
   * @returns {import('./commands.js').CommandContext}
   */
  contextFor(connectionId) {
    return { connectionId, tabs: this.tabs, debuggers: this.debuggers, downloads: this.downloads, person: this.person };
  }

  /**
   * The connection a tab's CDP event belongs to: its owner, if we are
   * attached to it and the event is not one the extension caused itself.
   *
   * @param {number} tabId
   * @param {string} [method]
   * @returns {string | undefined}
   */
  eventRecipient(tabId, method) {
    if (method !== undefined && this.debuggers.isMuted(tabId, method))
      return undefined;
    return this.debuggers.isAttached(tabId) ? this.tabs.ownerOf(tabId) : undefined;
  }


  /** An MCP connection ended: detach from its tabs and un-own them (they stay open). */
  release(connectionId) {
    this.person.withdrawAll(connectionId);
    for (const tabId of this.tabs.release(connectionId))
      this.debuggers.detach(tabId);
    this.downloads.forgetConnection(connectionId);
  }

  /**
   * Keeps the connections the relay listed in `status` (and the direct
   * pseudo-connection, which the relay never lists); releases the rest.
   *
   * @param {string[]} liveConnectionIds
   */
  retainOnly(liveConnectionIds) {
    for (const tabIds of this.tabs.retainOnly(liveConnectionIds, [DIRECT_CONNECTION]).values()) {
      for (const tabId of tabIds)
        this.debuggers.detach(tabId);
    }
    this.downloads.retainOnly([...liveConnectionIds, DIRECT_CONNECTION]);
  }

  /** Nobody is connected any more: detach every debugger, un-own every tab. */
  releaseAll() {
    this.tabs.retainOnly([]);
    this.downloads.retainOnly([]);
    return this.debuggers.detachAll();
  }

  /** Removes exactly the listeners the constructor added. */
  dispose() {
    chrome.tabs.onRemoved.removeListener(this._onTabRemoved);
    chrome.debugger.onDetach.removeListener(this._onDebuggerDetach);
    chrome.debugger.onEvent.removeListener(this._onDebuggerEvent);
    chrome.downloads?.onDeterminingFilename.removeListener(this._onDeterminingFilename);
    return this.releaseAll();
  }

  /** Dialogs and console messages, kept for the tools that report them. */
  _onDebuggerEvent(source, method, params) {
    this.debuggers.events.handle(source, method, params);
    this.debuggers.network.handle(source, method, params);
    this.debuggers.taps.handle(source, method, params);
    this.debuggers.frames?.handle(source, method, params);
    this.debuggers.webmcp?.handle(source, method, params);
    // Only tabs we are attached to report this, and we attach only to tabs a connection owns.
    if (method === 'Page.downloadWillBegin' && source.tabId !== undefined && !source.sessionId) {
      const owner = this.tabs.ownerOf(source.tabId);
      if (owner !== undefined)
        this.downloads.announce(source.tabId, owner, params);
    }
  }

  /**
   * Chrome holds every download here until an extension answers. One an agent tab announced
   * is cancelled and erased before it is written (it never reaches the person's Downloads
   * folder or list), and its bytes are fetched for the agent's connection. Any other is let
   * through at once, or, while some agent tab is attached (its announcement may still be on
   * its way), after at most DOWNLOAD_CLAIM_WAIT_MS.
   *
   * @param {chrome.downloads.DownloadItem} item
   * @param {(suggestion?: object) => void} suggest
   */
  _onDeterminingFilename(item, suggest) {
    const decide = async () => {
      let claimed = this.downloads.claim(item);
      const until = Date.now() + DOWNLOAD_CLAIM_WAIT_MS;
      while (!claimed && this.debuggers.attachedTabs().length > 0 && Date.now() < until) {
        await new Promise(resolve => setTimeout(resolve, 20));
        claimed = this.downloads.claim(item);
      }
      if (!claimed) {
        suggest();
        return;
      }
      await chrome.downloads.cancel(item.id).catch(() => {});
      suggest();
      await chrome.downloads.erase({ id: item.id }).catch(() => {});
      const id = this.downloads.start({
        connectionId: claimed.connectionId,
        tabId: claimed.tabId,
        url: claimed.url,
        filename: claimed.filename || safeName(item.filename),
        mimeType: item.mime || '',
      });
      try {
        const got = await fetchDownload(this.debuggers, claimed.tabId, item.finalUrl || claimed.url);
        this.downloads.complete(id, got.base64, got.bytes, got.mimeType);
      } catch (error) {
        this.downloads.fail(id, error instanceof Error ? error.message : String(error));
      }
    };
    decide().catch(() => {
      try {
        suggest();
      } catch {
        // Already answered.
      }
    });
    return true;
  }

  /** @param {number} tabId */
  _onTabRemoved(tabId) {
    this.debuggers.forget(tabId);
    this.debuggers.events.forget(tabId);
    this.debuggers.network.forget(tabId);
    this.debuggers.webmcp?.forget(tabId);
    this.tabs.dropTab(tabId);
  }

  /** @param {chrome.debugger.Debuggee} source @param {string} reason */
  _onDebuggerDetach(source, reason) {
    if (source.tabId === undefined)
      return;
    if (reason === 'canceled_by_user')
      console.info(`[mcp-relay] the user dismissed the debugging bar on tab ${source.tabId}; the next command re-attaches`);
    this.debuggers.forget(source.tabId);
  }
}
