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
import { DIRECT_CONNECTION } from './ids.js';
import { TabOwnership } from './tabs.js';

export class ConnectionState {
  constructor() {
    this.tabs = new TabOwnership();
    this.debuggers = new DebuggerSessions();
    /** @type {import('./owner-control.js').OwnerControl | null} the owner's rules; the service worker installs them */
    this.owner = null;
    this._onTabRemoved = this._onTabRemoved.bind(this);
    this._onDebuggerDetach = this._onDebuggerDetach.bind(this);
    this._onDebuggerEvent = this._onDebuggerEvent.bind(this);
    chrome.tabs.onRemoved.addListener(this._onTabRemoved);
    chrome.debugger.onDetach.addListener(this._onDebuggerDetach);
    chrome.debugger.onEvent.addListener(this._onDebuggerEvent);
  }

  /**
   * @param {string} connectionId
   * @returns {import('./commands.js').CommandContext}
   */
  contextFor(connectionId) {
    return { connectionId, tabs: this.tabs, debuggers: this.debuggers };
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
    for (const tabId of this.tabs.release(connectionId))
      this.debuggers.detach(tabId);
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
  }

  /** Nobody is connected any more: detach every debugger, un-own every tab. */
  releaseAll() {
    this.tabs.retainOnly([]);
    return this.debuggers.detachAll();
  }

  /** Removes exactly the listeners the constructor added. */
  dispose() {
    chrome.tabs.onRemoved.removeListener(this._onTabRemoved);
    chrome.debugger.onDetach.removeListener(this._onDebuggerDetach);
    chrome.debugger.onEvent.removeListener(this._onDebuggerEvent);
    return this.releaseAll();
  }

  /** Dialogs and console messages, kept for the tools that report them. */
  _onDebuggerEvent(source, method, params) {
    this.debuggers.events.handle(source, method, params);
    this.debuggers.network.handle(source, method, params);
    this.debuggers.taps.handle(source, method, params);
  }

  /** @param {number} tabId */
  _onTabRemoved(tabId) {
    this.debuggers.forget(tabId);
    this.debuggers.events.forget(tabId);
    this.debuggers.network.forget(tabId);
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
