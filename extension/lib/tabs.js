/**
 * Which MCP connection owns which tab, and which tab each connection is on.
 *
 * Several MCP clients can share one browser through the relay. Each gets its
 * own "current tab" so that `click` from one never lands in another's page,
 * and a tab one of them created or selected is refused to the others until
 * that connection ends. Ending a connection un-owns its tabs but leaves them
 * open: they are the user's tabs, and the user may still be reading them.
 *
 * Pure: plain Maps, no `chrome.*`. The caller reports tab closures and
 * connection ends; this registry only keeps the books.
 */

/** Thrown when a connection reaches for a tab another live connection owns. */
export class TabOwnedError extends Error {
  /** @param {number} tabId */
  constructor(tabId) {
    super(`tab ${tabId} belongs to another MCP connection; use a tab from getTabs that is not owned, or createTab`);
    this.name = 'TabOwnedError';
    this.tabId = tabId;
  }
}

export class TabOwnership {
  constructor() {
    /** @type {Map<number, string>} tab id → owning connection id */
    this._ownerByTab = new Map();
    /** @type {Map<string, number>} connection id → the tab its commands act on by default */
    this._currentByConnection = new Map();
    /**
     * Tabs an agent opened (createTab), as opposed to the person's tabs an agent was given:
     * browser_close may close the former and must never close the latter.
     * @type {Set<number>}
     */
    this._openedByAgent = new Set();
    /**
     * The tab whose page opened each tab an action opened (`window.open`, a `target=_blank`
     * link): where the connection carries on when that page closes its own tab (Django
     * admin's "add another" pop-up closes itself once saved).
     * @type {Map<number, number>}
     */
    this._openerOf = new Map();
  }

  /** @param {number} tabId @param {number} openerTabId */
  setOpener(tabId, openerTabId) {
    this._openerOf.set(tabId, openerTabId);
  }

  /** @param {number} tabId */
  markOpenedByAgent(tabId) {
    this._openedByAgent.add(tabId);
  }

  /** @param {number} tabId */
  openedByAgent(tabId) {
    return this._openedByAgent.has(tabId);
  }

  /** @param {number} tabId @returns {string | undefined} */
  ownerOf(tabId) {
    return this._ownerByTab.get(tabId);
  }

  /** @param {string} connectionId @returns {number | undefined} */
  currentTab(connectionId) {
    return this._currentByConnection.get(connectionId);
  }

  /** @param {string} connectionId @returns {number[]} */
  tabsOf(connectionId) {
    const tabs = [];
    for (const [tabId, owner] of this._ownerByTab) {
      if (owner === connectionId)
        tabs.push(tabId);
    }
    return tabs;
  }

  /** Connections that own a tab or have a current tab. */
  connections() {
    return new Set([...this._ownerByTab.values(), ...this._currentByConnection.keys()]);
  }

  /**
   * Refuses if another connection owns the tab.
   *
   * @param {string} connectionId
   * @param {number} tabId
   * @throws {TabOwnedError}
   */
  assertMayUse(connectionId, tabId) {
    const owner = this._ownerByTab.get(tabId);
    if (owner !== undefined && owner !== connectionId)
      throw new TabOwnedError(tabId);
  }

  /**
   * Makes the tab the connection's own (without changing its current tab).
   *
   * @param {string} connectionId
   * @param {number} tabId
   * @throws {TabOwnedError}
   */
  claim(connectionId, tabId) {
    this.assertMayUse(connectionId, tabId);
    this._ownerByTab.set(tabId, connectionId);
  }

  /**
   * Claims the tab and makes it the target of the connection's tab-less commands.
   *
   * @param {string} connectionId
   * @param {number} tabId
   * @throws {TabOwnedError}
   */
  select(connectionId, tabId) {
    this.claim(connectionId, tabId);
    this._currentByConnection.set(connectionId, tabId);
  }

  /**
   * Forgets a tab that no longer exists (closed by the user or by closeTab).
   *
   * @param {number} tabId
   * @returns {string | undefined} the connection that owned it
   */
  dropTab(tabId) {
    const owner = this._ownerByTab.get(tabId);
    this._ownerByTab.delete(tabId);
    this._openedByAgent.delete(tabId);
    const opener = this._openerOf.get(tabId);
    this._openerOf.delete(tabId);
    for (const [connectionId, current] of this._currentByConnection) {
      if (current !== tabId)
        continue;
      // Back to the page that opened it, where the work it was opened for goes on.
      if (opener !== undefined && this._ownerByTab.get(opener) === connectionId)
        this._currentByConnection.set(connectionId, opener);
      else
        this._currentByConnection.delete(connectionId);
    }
    return owner;
  }

  /**
   * Un-owns every tab of an ended connection.
   *
   * @param {string} connectionId
   * @returns {number[]} the tabs it owned, so the caller can detach debuggers from them
   */
  release(connectionId) {
    const tabs = this.tabsOf(connectionId);
    for (const tabId of tabs)
      this._ownerByTab.delete(tabId);
    this._currentByConnection.delete(connectionId);
    return tabs;
  }

  /**
   * Releases every connection not in `liveConnectionIds` (the relay's `status`
   * list), except the ones in `keep` (the direct pseudo-connection, which the
   * relay never lists).
   *
   * @param {Iterable<string>} liveConnectionIds
   * @param {Iterable<string>} [keep]
   * @returns {Map<string, number[]>} released connection → the tabs it owned
   */
  retainOnly(liveConnectionIds, keep = []) {
    const live = new Set([...liveConnectionIds, ...keep]);
    const released = new Map();
    for (const connectionId of this.connections()) {
      if (!live.has(connectionId))
        released.set(connectionId, this.release(connectionId));
    }
    return released;
  }
}
