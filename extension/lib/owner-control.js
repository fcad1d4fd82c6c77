/**
 * The browser's owner stays in control of what assistants do here: who may
 * act (consent), which tabs each one holds (a tab group per assistant),
 * which sites none may touch, and what each did lately. Every forwarded
 * request passes through {@link OwnerControl.run}; the popup and the options
 * page read what it publishes and write decisions to storage or send
 * messages to the service worker.
 *
 * The decisions themselves are pure functions in consent.js,
 * blocked-sites.js and tab-groups.js; this class applies them with
 * `chrome.*`, which it touches only in methods, never at import.
 */

import { ASK_BEFORE_KEY, askRules, asksAnything, asksFor } from './ask-before.js';
import { blockedSiteError, blockingPattern, parseSitePatterns } from './blocked-sites.js';
import {
  ConsentKey, assistantKey, assistantName, consentDeniedError, consentPolicy, consentRequiredError, isAllowed, isDenied,
} from './consent.js';
import { DIRECT_CONNECTION } from './ids.js';
import { serverError } from './rpc.js';
import { AssistantGroups, pickGroupColor } from './tab-groups.js';

/** chrome.storage.local key of the options page's off-limits site patterns (string[]). */
export const BLOCKED_SITES_KEY = 'blockedSites';
/** chrome.storage.session key the popup reads; session so it survives a worker restart but not the browser. */
export const ASSISTANTS_KEY = 'assistants';
/** The popup shows this many recent actions per assistant: enough to see what it is doing, not a log. */
const RECENT_ACTIONS = 5;
/**
 * How long a command's entry among the popup's recent actions may wait to be written. Writing
 * storage and the badge are calls into the browser, and Chrome answers an extension's calls in
 * order: written before and after every command, they queued ahead of the command's own
 * (`chrome.tabs.get`, `chrome.debugger`) and made up half of a quick command's time in the
 * extension, about 2 ms (docs/BENCHMARKS.md, "Where the chain's fixed round trip went").
 * Coalesced, a run of commands writes once, and a person sees each within this.
 */
export const ACTIONS_PUBLISH_MS = 50;
const NOTIFICATION_PREFIX = 'consent:';
/** Notifications of hand-offs and ask-before prompts: this prefix and the request's id. */
const PERSON_NOTIFICATION_PREFIX = 'person:';
/** chrome.storage.session key of what waits for the person (hand-offs, ask-before prompts), which the popup shows. */
export const PERSON_REQUESTS_KEY = 'personRequests';
/** What the person may answer to each kind of request. */
const PERSON_ANSWERS = Object.freeze({ 'hand-off': ['done', 'cancelled'], ask: ['allowed', 'denied'] });
/** What decisions and the site list are read from. */
const STORED_KEYS = [ConsentKey.ALWAYS_ALLOWED, ConsentKey.ALLOW_ALL, ConsentKey.DENIED, BLOCKED_SITES_KEY, ASK_BEFORE_KEY];
/** Commands that may submit a form or pay: only these are checked against the ask-before rules. */
const ASKABLE = new Set(['click', 'type', 'pressKey', 'fillForm', 'callPageTool']);


/**
 * @typedef {object} Assistant one MCP connection, as the person sees it
 * @property {string} connectionId
 * @property {string | null} key what an "Always allow" is remembered under
 * @property {string} name
 * @property {{client_id?: string, client_name?: string}} identity
 * @property {number} since epoch ms of connection_opened (or first request)
 * @property {boolean} allowedOnce
 * @property {string} color its tab groups' colour
 * @property {{method: string, at: number}[]} actions most recent last
 * @property {Record<number, string>} takenBack tab id → why the assistant lost it
 * @property {number} [lostCurrent] its current tab, if that is the one it lost last
 * @property {boolean} [notified] a notification was shown for this connection
 */

export class OwnerControl {
  /**
   * @param {object} deps
   * @param {Promise<Record<string, unknown> | null>} deps.devConfig
   * @param {(connectionId: string, reason: string) => Promise<unknown>} deps.closeConnection
   * @param {(receipt: object) => Promise<unknown>} [deps.recordDecision] sends a receipt to the relay's audit trail
   */
  constructor({ devConfig, closeConnection, recordDecision = async () => {} }) {
    this._devConfig = devConfig;
    this._closeConnection = closeConnection;
    this._recordDecision = recordDecision;
    /** @type {Map<string, Assistant>} */
    this._assistants = new Map();
    this._groups = new AssistantGroups();
    /** Tabs we are grouping right now: their groupId events are ours, not the person's drag. */
    this._grouping = new Set();
    /**
     * Tabs already put in (or dragged into) an assistant's group. Never regrouped: one that left
     * its group was moved by the person, and putting it back would undo their drag.
     */
    this._grouped = new Set();
    /** @type {import('./connection-state.js').ConnectionState | null} */
    this._connections = null;
    this._userId = null;
    this._relayBadge = { text: '', color: '#80868b' };
    /** The badge as last set, so a publish that changes nothing on it makes no call. */
    this._badgeShown = '';
    /** A publish of recent actions waiting to be written (see ACTIONS_PUBLISH_MS). */
    this._publishTimer = undefined;
    this._policy = consentPolicy({}, null);
    this._blocked = [];
    /** @type {import('./ask-before.js').AskRules} */
    this._askRules = askRules(undefined);
    this.ready = this._load();
  }

  /** The books of tabs and debuggers the relay connections share. @param {import('./connection-state.js').ConnectionState} connections */
  attach(connections) {
    this._connections = connections;
    connections.person?.listen((request, change) => this._personChanged(request, change));
  }

  /** Reads decisions and site patterns, and the assistants a previous worker published. */
  async _load() {
    const devConfig = await this._devConfig;
    const stored = await chrome.storage.local.get(STORED_KEYS);
    this._applyStored(stored, devConfig);
    const { [ASSISTANTS_KEY]: previous } = await chrome.storage.session.get(ASSISTANTS_KEY);
    for (const saved of Array.isArray(previous) ? previous : []) {
      if (!this._assistants.has(saved.connectionId))
        this._assistants.set(saved.connectionId, { ...saved, takenBack: saved.takenBack ?? {} });
    }
  }

  /** @param {Record<string, unknown>} stored @param {Record<string, unknown> | null} devConfig */
  _applyStored(stored, devConfig) {
    this._policy = consentPolicy(stored, devConfig);
    const fromDev = Array.isArray(devConfig?.blockedSites) ? devConfig.blockedSites : [];
    const fromOptions = Array.isArray(stored[BLOCKED_SITES_KEY]) ? stored[BLOCKED_SITES_KEY] : [];
    this._blocked = parseSitePatterns([...fromDev, ...fromOptions]);
    this._askRules = askRules(stored[ASK_BEFORE_KEY], devConfig);
  }

  /** The options page or the popup changed a decision or the site list. */
  async reloadSettings() {
    await this.ready;
    const stored = await chrome.storage.local.get(STORED_KEYS);
    this._applyStored(stored, await this._devConfig);
    for (const assistant of this._assistants.values()) {
      if (this._isPending(assistant))
        this._notifyPending(assistant);
    }
    for (const tabId of await this._tabsOnBlockedSites())
      await this._takeBack(tabId, 'blocked');
    this._publish();
  }

  /** Revokes the stored decision and any "Allow once" of that assistant's live connections. @param {string} key */
  async revoke(key) {
    await this.ready;
    const { [ConsentKey.ALWAYS_ALLOWED]: always = {} } = await chrome.storage.local.get(ConsentKey.ALWAYS_ALLOWED);
    delete always[key];
    for (const assistant of this._assistants.values()) {
      if (assistant.key === key)
        assistant.allowedOnce = false;
    }
    await chrome.storage.local.set({ [ConsentKey.ALWAYS_ALLOWED]: always });
    await this.reloadSettings();
  }

  /**
   * What the relay's `status` says about the user this extension serves;
   * remembered decisions are per user. Also gives the badge its fallback.
   *
   * @param {import('./relay-supervisor.js').RelayState} state
   */
  relayStateChanged(state) {
    this._userId = state.userId ?? this._userId;
    this._relayBadge = {
      text: { authenticated: 'ON', connecting: '…', disconnected: '' }[state.state] ?? '',
      color: state.state === 'authenticated' ? '#188038' : '#80868b',
    };
    this._renderBadge();
  }

  // -------------------------------------------------------------------------
  // Hooks from RelayConnection

  /** @param {{connection_id: string, client_id?: string, client_name?: string}} params */
  async connectionOpened(params) {
    if (typeof params?.connection_id !== 'string')
      return;
    await this.ready;
    const identity = {};
    if (typeof params.client_id === 'string')
      identity.client_id = params.client_id;
    if (typeof params.client_name === 'string')
      identity.client_name = params.client_name;
    const assistant = this._newAssistant(params.connection_id, identity);
    if (this._isPending(assistant))
      this._notifyPending(assistant);
    this._publish();
  }

  /** @param {string} connectionId */
  connectionClosed(connectionId) {
    if (!this._assistants.delete(connectionId))
      return;
    this._groups.removeConnection(connectionId);
    chrome.notifications?.clear(NOTIFICATION_PREFIX + connectionId).catch(() => {});
    this._publish();
  }

  /** The relay's `status` lists the live connections; forget the rest. @param {string[]} liveConnectionIds */
  retainOnly(liveConnectionIds) {
    const live = new Set([...liveConnectionIds, DIRECT_CONNECTION]);
    for (const connectionId of [...this._assistants.keys()]) {
      if (!live.has(connectionId))
        this.connectionClosed(connectionId);
    }
  }

  /**
   * Runs one forwarded request on the owner's terms: refused until allowed,
   * refused on a tab the owner took back or on an off-limits site, recorded
   * for the popup, and its tabs put in the assistant's group afterwards.
   *
   * @param {import('./commands.js').CommandContext} ctx
   * @param {string} method
   * @param {any} params
   * @param {(ctx: object, method: string, params: unknown) => Promise<object>} runCommand
   */
  async run(ctx, method, params, runCommand) {
    await this.ready;
    const assistant = this._assistants.get(ctx.connectionId) ?? this._newAssistant(ctx.connectionId, {});
    if (isDenied(this._policy, assistant))
      throw consentDeniedError(assistant.name);
    if (!this._isAllowed(assistant)) {
      this._notifyPending(assistant);
      throw consentRequiredError(assistant.name);
    }
    assistant.actions = [...assistant.actions, { method, at: Date.now() }].slice(-RECENT_ACTIONS);
    this._publishSoon();
    const { tabId: target, seenTab } = await this._checkReach(ctx, assistant, params ?? {});
    let result;
    try {
      const askBefore = this._asksOn(method, target, seenTab);
      result = await runCommand({ ...ctx, assistantName: assistant.name, askBefore, seenTab }, method, params);
    } catch (error) {
      // The tab went off limits or out of the group while the command ran (Chrome says "Detached…").
      if (target !== undefined && ctx.tabs.ownerOf(target) === undefined && assistant.takenBack[target])
        throw takenBackError(target, assistant.takenBack[target]);
      // "No current tab" because the owner took it: say that, so the assistant does not guess.
      const lost = assistant.lostCurrent;
      if (lost !== undefined && ctx.tabs.currentTab(ctx.connectionId) === undefined && /no current tab/.test(String(error?.message)))
        throw takenBackError(lost, assistant.takenBack[lost] ?? 'ungrouped');
      throw error;
    }
    if (ctx.tabs.currentTab(ctx.connectionId) !== undefined)
      delete assistant.lostCurrent;
    const landedOn = typeof result?.url === 'string' ? result.url : undefined;
    if (blockingPattern(this._blocked, landedOn)) {
      // A redirect or a script took the tab where it may not be: it is no longer the assistant's.
      const tabId = Number.isInteger(result.tabId) ? result.tabId : ctx.tabs.currentTab(ctx.connectionId);
      if (tabId !== undefined)
        await this._takeBack(tabId, 'blocked');
      throw blockedSiteError(landedOn, tabId);
    }
    if (Array.isArray(result?.tabs))
      result = { ...result, tabs: result.tabs.map(tab => this._redacted(tab)) };
    await this._groupTabs(assistant).catch(error => console.warn('[mcp-relay] could not group tabs:', error));
    this._publishSoon();
    return result;
  }

  /**
   * Refuses before anything runs: a URL to open that is off limits, a tab the
   * owner took back, or a tab that shows an off-limits site.
   *
   * @param {import('./commands.js').CommandContext} ctx
   * @param {Assistant} assistant
   * @param {Record<string, unknown>} params
   * @returns {Promise<{tabId?: number, seenTab?: {tab: chrome.tabs.Tab, at: number}}>} the tab the
   *   command will act on, when known, and the read of it made here, which the command reuses
   *   rather than asking Chrome again (shared.js `tabInfo`)
   */
  async _checkReach(ctx, assistant, params) {
    if (typeof params.url === 'string' && blockingPattern(this._blocked, params.url))
      throw blockedSiteError(params.url);
    const named = Number.isInteger(params.tabId) ? /** @type {number} */ (params.tabId) : undefined;
    const current = ctx.tabs.currentTab(ctx.connectionId);
    if (named !== undefined && assistant.takenBack[named] && ctx.tabs.ownerOf(named) === undefined)
      throw takenBackError(named, assistant.takenBack[named]);
    const tabId = named ?? current;
    if (tabId === undefined)
      return {};
    const tab = await chrome.tabs.get(tabId).catch(() => undefined);
    const at = performance.now();
    const url = tab?.url || tab?.pendingUrl;
    if (blockingPattern(this._blocked, url)) {
      await this._takeBack(tabId, 'blocked');
      throw blockedSiteError(url, tabId);
    }
    if (assistant.takenBack[tabId]) {
      const { [tabId]: _, ...rest } = assistant.takenBack;
      assistant.takenBack = rest;
    }
    return { tabId, ...(tab ? { seenTab: { tab, at } } : {}) };
  }

  /**
   * What the person asked to approve first on the tab's site, for a command that could submit
   * a form or pay.
   *
   * @param {string} method
   * @param {number | undefined} tabId
   * @param {{tab: chrome.tabs.Tab}} [seenTab] that tab, as _checkReach just read it
   */
  _asksOn(method, tabId, seenTab) {
    if (!ASKABLE.has(method) || tabId === undefined || !asksAnything(this._askRules))
      return undefined;
    return asksFor(this._askRules, seenTab?.tab.url || seenTab?.tab.pendingUrl);
  }

  /** getTabs shows a blocked tab as present, but not what it shows. @param {{url?: string, title?: string}} tab */
  _redacted(tab) {
    return blockingPattern(this._blocked, tab.url) ? { ...tab, url: '', title: '(off limits)' } : tab;
  }

  // -------------------------------------------------------------------------
  // Hooks from chrome.* events (registered in background.js)

  /** @param {number} tabId @param {chrome.tabs.TabChangeInfo} change */
  async tabUpdated(tabId, change) {
    await this.ready;
    if (change.url !== undefined && blockingPattern(this._blocked, change.url) && this._ownerOf(tabId) !== undefined) {
      await this._takeBack(tabId, 'blocked');
      return;
    }
    // Our own grouping moves tabs into groups; leaving every group (-1) is never ours.
    if (change.groupId === undefined || (this._grouping.has(tabId) && change.groupId !== -1))
      return;
    // At once, before a command in flight could put the tab back into the group. A closing tab
    // leaves its group too; tabRemoved forgets that it was "taken back".
    const move = this._groups.classifyMove(this._ownerOf(tabId), change.groupId);
    if (move.kind === 'taken' || move.kind === 'moved')
      await this._takeBack(tabId, 'ungrouped', { ungroup: false });
    if (move.kind === 'given' || move.kind === 'moved')
      this._give(tabId, move.to);
  }

  /** A closed tab was not taken back, it is gone: the assistant hears "no current tab" as before. @param {number} tabId */
  tabRemoved(tabId) {
    this._grouped.delete(tabId);
    for (const assistant of this._assistants.values()) {
      if (assistant.lostCurrent === tabId)
        delete assistant.lostCurrent;
      if (assistant.takenBack[tabId]) {
        const { [tabId]: _, ...rest } = assistant.takenBack;
        assistant.takenBack = rest;
      }
    }
    this._publish();
  }

  /** The person closed the group (its tabs close too) or Chrome removed it empty. @param {number} groupId */
  groupRemoved(groupId) {
    this._groups.removeGroup(groupId);
  }

  /** A button of a consent notification. @param {string} notificationId @param {number} buttonIndex */
  async notificationButton(notificationId, buttonIndex) {
    if (!notificationId.startsWith(NOTIFICATION_PREFIX))
      return;
    await this.decide(notificationId.slice(NOTIFICATION_PREFIX.length), buttonIndex === 0 ? 'once' : 'deny');
  }

  /**
   * The person's answer to a hand-off ("Done", "Cancel") or an ask-before prompt ("Allow",
   * "Deny") from the popup.
   *
   * @param {string} id
   * @param {string} answer
   */
  async answerPerson(id, answer) {
    const book = this._connections?.person;
    const request = book?.get(id);
    if (!request)
      throw new Error('That request is no longer waiting');
    if (!PERSON_ANSWERS[request.kind]?.includes(answer))
      throw new Error(`"${answer}" is not an answer to a ${request.kind}`);
    if (request.status !== 'waiting')
      throw new Error(`That request already ended (${request.status})`);
    book.answer(id, answer);
  }

  /**
   * Brings a request's tab to the front of its window, and the window to the front: only when
   * the person asks for it (a click on the notification, "Show the tab" in the popup), never
   * by itself, so the person is not pulled away from what they were doing.
   *
   * @param {string} id
   */
  async showPersonTab(id) {
    const request = this._connections?.person.get(id);
    if (!request)
      throw new Error('That request is no longer waiting');
    const tab = await chrome.tabs.update(request.tabId, { active: true });
    await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {});
  }

  /** A click on a notification (its body, not a button). @param {string} notificationId */
  async notificationClicked(notificationId) {
    if (notificationId.startsWith(PERSON_NOTIFICATION_PREFIX))
      await this.showPersonTab(notificationId.slice(PERSON_NOTIFICATION_PREFIX.length));
  }

  /**
   * A hand-off or prompt opened (a notification, the badge, the popup) or ended (all cleared).
   *
   * @param {import('./person-requests.js').PersonRequest} request
   * @param {'opened'|'answered'} change
   */
  _personChanged(request, change) {
    // The receipt first: nothing the notification API does may keep it from the audit trail.
    if (change === 'answered')
      this._sendReceipt(request);
    try {
      this._notifyPerson(request, change);
    } catch (error) {
      console.info('[mcp-relay] no notification (the popup still asks):', error?.message);
    }
    this._publish();
  }

  /**
   * Shows an opened request as a notification (one click brings its tab forward), or takes an
   * answered one's away. Chrome may throw at once rather than reject (headless, a policy).
   *
   * @param {import('./person-requests.js').PersonRequest} request
   * @param {'opened'|'answered'} change
   */
  _notifyPerson(request, change) {
    const id = PERSON_NOTIFICATION_PREFIX + request.id;
    if (change === 'answered') {
      chrome.notifications?.clear(id).catch(() => {});
      return;
    }
    const handOff = request.kind === 'hand-off';
    chrome.notifications?.create(id, {
      type: 'basic',
      iconUrl: chrome.runtime.getURL('ui/icon-128.png'),
      title: handOff ? `${request.assistant} needs you for a step` : `${request.assistant} asks before it acts`,
      message: handOff
        ? `${request.reason}. Click here to see the tab, do the step there, then click Done in the mcp-relay popup.`
        : `It is about to ${request.reason} on ${hostOf(request.page.url)}. Allow or Deny in the mcp-relay popup.`,
      requireInteraction: true,
      priority: 2,
    }).catch(error => console.info('[mcp-relay] no notification (the popup still asks):', error?.message));
  }

  /**
   * The receipt of a hand-off or an ask-before answer for the relay's audit trail: who (the
   * connection), what (the kind, its outcome, the assistant's reason or the kind of step),
   * where (the site and tab), when (the relay stamps it), how long it waited, and `via: "host"`
   * when the person answered in the MCP host instead of the popup. Never the page's content: an
   * ask's element label stays out.
   *
   * @param {import('./person-requests.js').PersonRequest} request
   */
  _sendReceipt(request) {
    const receipt = {
      connection_id: request.connectionId,
      kind: request.kind === 'hand-off' ? 'hand-off' : 'ask-before',
      outcome: request.status,
      site: siteOf(request.page.url),
      tab_id: request.tabId,
      waited_ms: Math.max(0, (request.answeredAt ?? Date.now()) - request.openedAt),
      summary: request.kind === 'hand-off' ? request.reason : (request.summary ?? ''),
      ...(request.answeredVia ? { via: request.answeredVia } : {}),
    };
    this._recordDecision(receipt).catch(error => console.info('[mcp-relay] no receipt in the relay\'s audit trail:', error?.message));
  }

  /**
   * The person's answer from the popup or a notification.
   *
   * @param {string} connectionId
   * @param {'once'|'always'|'deny'} decision
   */
  async decide(connectionId, decision) {
    await this.ready;
    const assistant = this._assistants.get(connectionId);
    if (!assistant)
      throw new Error('That assistant is no longer connected');
    chrome.notifications?.clear(NOTIFICATION_PREFIX + connectionId).catch(() => {});
    if (decision === 'deny') {
      assistant.allowedOnce = false;
      if (assistant.key !== null)
        await this._remember(assistant.key, ConsentKey.DENIED, { name: assistant.name, clientId: assistant.identity.client_id ?? null, deniedAt: Date.now() });
      await this.stop([connectionId], 'the browser\'s owner denied this assistant');
      return;
    }
    assistant.allowedOnce = true;
    if (decision === 'always' && assistant.key !== null)
      await this._remember(assistant.key, ConsentKey.ALWAYS_ALLOWED, { name: assistant.name, clientId: assistant.identity.client_id ?? null, allowedAt: Date.now() });
    else if (assistant.key !== null)
      // "Allow once" on a denied assistant forgets the denial: its later connections ask again.
      await this._remember(assistant.key, null);
    this._publish();
  }

  /**
   * Ends assistants' connections at the relay (the popup's Stop). Their tabs
   * stay open, un-owned; the relay's connection_closed does the releasing.
   *
   * @param {string[] | 'all'} which
   * @param {string} reason shown to the assistant after "Stopped by the browser's owner: "
   */
  async stop(which, reason) {
    const ids = which === 'all' ? [...this._assistants.keys()] : which;
    const results = await Promise.allSettled(ids.filter(id => id !== DIRECT_CONNECTION)
      .map(id => this._closeConnection(id, reason)));
    const failed = results.find(result => result.status === 'rejected');
    if (failed)
      throw failed.reason;
  }

  // -------------------------------------------------------------------------
  // Internals

  /** @param {string} connectionId @param {{client_id?: string, client_name?: string}} identity */
  _newAssistant(connectionId, identity) {
    const existing = this._assistants.get(connectionId);
    /** @type {Assistant} */
    const assistant = {
      connectionId,
      key: assistantKey(this._userId, identity),
      name: assistantName(identity),
      identity,
      since: existing?.since ?? Date.now(),
      allowedOnce: existing?.allowedOnce ?? false,
      color: existing?.color ?? pickGroupColor([...this._assistants.values()].map(a => a.color)),
      actions: existing?.actions ?? [],
      takenBack: existing?.takenBack ?? {},
    };
    this._assistants.set(connectionId, assistant);
    return assistant;
  }

  /**
   * Stores one decision for an assistant identity (`into` the allowed or the
   * denied book, and out of the other), or with `into` null only clears it from
   * the denied one; then applies it at once, not only through storage.onChanged,
   * since the next request may come before that event.
   *
   * @param {string} key
   * @param {string | null} into ConsentKey.ALWAYS_ALLOWED, ConsentKey.DENIED or null
   * @param {object} [entry]
   */
  async _remember(key, into, entry) {
    const books = await chrome.storage.local.get([ConsentKey.ALWAYS_ALLOWED, ConsentKey.DENIED]);
    const allowed = { ...books[ConsentKey.ALWAYS_ALLOWED] };
    const denied = { ...books[ConsentKey.DENIED] };
    if (into === null && !Object.hasOwn(denied, key))
      return;
    delete allowed[key];
    delete denied[key];
    if (into === ConsentKey.ALWAYS_ALLOWED)
      allowed[key] = entry;
    else if (into === ConsentKey.DENIED)
      denied[key] = entry;
    await chrome.storage.local.set(into === null ? { [ConsentKey.DENIED]: denied } : { [ConsentKey.ALWAYS_ALLOWED]: allowed, [ConsentKey.DENIED]: denied });
    await this.reloadSettings();
  }

  /** @param {Assistant} assistant */
  _isAllowed(assistant) {
    return isAllowed(this._policy, assistant);
  }

  /** Waiting for the person's answer: neither allowed nor denied before. @param {Assistant} assistant */
  _isPending(assistant) {
    return !this._isAllowed(assistant) && !isDenied(this._policy, assistant);
  }

  /** @param {number} tabId */
  _ownerOf(tabId) {
    return this._connections?.tabs.ownerOf(tabId);
  }

  /**
   * Takes a tab out of its assistant's reach: un-owned, debugger detached,
   * out of the group, and remembered so the assistant's next call to it gets
   * a clear error instead of "no such tab".
   *
   * @param {number} tabId
   * @param {'blocked'|'ungrouped'} why
   * @param {{ungroup?: boolean}} [options]
   */
  async _takeBack(tabId, why, { ungroup = true } = {}) {
    const owner = this._ownerOf(tabId);
    if (owner === undefined || !this._connections)
      return;
    const assistant = this._assistants.get(owner);
    const wasCurrent = this._connections.tabs.currentTab(owner) === tabId;
    this._grouped.delete(tabId);
    // All books first, before any await: a command in flight, or the next one, must see the tab gone.
    this._connections.tabs.dropTab(tabId);
    if (assistant) {
      assistant.takenBack = { ...assistant.takenBack, [tabId]: why };
      if (wasCurrent)
        assistant.lostCurrent = tabId;
    }
    await this._connections.debuggers.detach(tabId).catch(() => {});
    if (ungroup) {
      this._grouping.add(tabId);
      await chrome.tabs.ungroup(tabId).catch(() => {}).finally(() => this._grouping.delete(tabId));
    }
    this._publish();
  }

  /** The person dragged an unowned tab into an assistant's group. @param {number} tabId @param {string} connectionId */
  _give(tabId, connectionId) {
    const assistant = this._assistants.get(connectionId);
    if (!assistant || !this._connections)
      return;
    this._connections.tabs.claim(connectionId, tabId);
    this._grouped.add(tabId);
    const { [tabId]: _, ...rest } = assistant.takenBack;
    assistant.takenBack = rest;
    this._publish();
  }

  /** @returns {Promise<number[]>} owned tabs that show an off-limits site */
  async _tabsOnBlockedSites() {
    if (!this._connections || this._blocked.length === 0)
      return [];
    const owned = [...this._connections.tabs.connections()].flatMap(id => this._connections.tabs.tabsOf(id));
    const tabs = await Promise.all(owned.map(id => chrome.tabs.get(id).catch(() => undefined)));
    return tabs.filter(tab => tab && blockingPattern(this._blocked, tab.url || tab.pendingUrl)).map(tab => tab.id);
  }

  /**
   * Puts every tab the assistant holds into its group in that tab's window,
   * creating the group (named and coloured) the first time.
   *
   * @param {Assistant} assistant
   */
  async _groupTabs(assistant) {
    if (!this._connections || !chrome.tabGroups)
      return;
    for (const tabId of this._connections.tabs.tabsOf(assistant.connectionId)) {
      // Grouped once is never regrouped (see _grouped): no need to look the tab up again.
      if (this._grouped.has(tabId))
        continue;
      const tab = await chrome.tabs.get(tabId).catch(() => undefined);
      if (!tab || tab.windowId === undefined)
        continue;
      const groupId = this._groups.groupIn(assistant.connectionId, tab.windowId);
      // The person may have taken it back while we looked it up.
      if (this._grouped.has(tabId) || this._ownerOf(tabId) !== assistant.connectionId)
        continue;
      this._grouped.add(tabId);
      if (groupId !== undefined && tab.groupId === groupId)
        continue;
      this._grouping.add(tabId);
      try {
        if (groupId !== undefined) {
          await chrome.tabs.group({ tabIds: tabId, groupId });
        } else {
          const created = await chrome.tabs.group({ tabIds: tabId, createProperties: { windowId: tab.windowId } });
          this._groups.add(created, assistant.connectionId, tab.windowId);
          await chrome.tabGroups.update(created, { title: assistant.name, color: assistant.color, collapsed: false });
        }
      } finally {
        this._grouping.delete(tabId);
      }
    }
  }

  /** @param {Assistant} assistant */
  _notifyPending(assistant) {
    if (assistant.notified)
      return;
    assistant.notified = true;
    chrome.notifications?.create(NOTIFICATION_PREFIX + assistant.connectionId, {
      type: 'basic',
      iconUrl: chrome.runtime.getURL('ui/icon-128.png'),
      title: `${assistant.name} asks to use this browser`,
      message: 'It can open tabs, read pages and act in them. Allow it here, or choose "Always allow" in the mcp-relay popup.',
      buttons: [{ title: 'Allow' }, { title: 'Deny' }],
      requireInteraction: true,
      priority: 2,
    }).catch(error => console.info('[mcp-relay] no notification (the popup still asks):', error?.message));
    this._publish();
  }

  /**
   * Badge: what waits for the person first (a hand-off or an ask-before prompt: "1!" in red),
   * then pending consent ("1?" in amber), else the number of active assistants, else the relay state.
   */
  _renderBadge() {
    const assistants = [...this._assistants.values()];
    const pending = assistants.filter(a => this._isPending(a)).length;
    const active = assistants.filter(a => this._isAllowed(a)).length;
    const waiting = this._connections?.person?.waiting().length ?? 0;
    const badge = waiting > 0 ? { text: `${waiting}!`, color: '#d93025' }
      : pending > 0 ? { text: `${pending}?`, color: '#e37400' }
      : active > 0 ? { text: String(active), color: '#1a73e8' }
        : this._relayBadge;
    const shown = `${badge.text}\n${badge.color}`;
    if (shown === this._badgeShown)
      return;
    this._badgeShown = shown;
    chrome.action.setBadgeText({ text: badge.text }).catch(() => {});
    chrome.action.setBadgeBackgroundColor({ color: badge.color }).catch(() => {});
  }

  /** Publishes within ACTIONS_PUBLISH_MS, once for however many calls come before then. */
  _publishSoon() {
    if (this._publishTimer === undefined)
      this._publishTimer = setTimeout(() => this._publish(), ACTIONS_PUBLISH_MS);
  }

  /** Writes what the popup shows (and a restarted worker reads back), now. */
  _publish() {
    clearTimeout(this._publishTimer);
    this._publishTimer = undefined;
    const list = [...this._assistants.values()].map(assistant => ({
      connectionId: assistant.connectionId,
      key: assistant.key,
      name: assistant.name,
      identity: assistant.identity,
      since: assistant.since,
      allowedOnce: assistant.allowedOnce,
      allowed: this._isAllowed(assistant),
      denied: isDenied(this._policy, assistant),
      color: assistant.color,
      actions: assistant.actions,
      takenBack: assistant.takenBack,
      tabs: this._connections?.tabs.tabsOf(assistant.connectionId) ?? [],
    }));
    const person = (this._connections?.person?.waiting() ?? []).map(request => ({
      id: request.id,
      kind: request.kind,
      assistant: request.assistant,
      tabId: request.tabId,
      reason: request.reason,
      page: request.page,
      openedAt: request.openedAt,
      deadline: request.deadline,
    }));
    chrome.storage.session.set({ [ASSISTANTS_KEY]: list, [PERSON_REQUESTS_KEY]: person }).catch(() => {});
    this._renderBadge();
  }
}

/** A page's host for a receipt (no path or query: those can be content). @param {string} url */
function siteOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/** A page's site in words for a notification ("shop.example"), or the URL when it has no host. @param {string} url */
function hostOf(url) {
  try {
    return new URL(url).host || url;
  } catch {
    return url || 'this page';
  }
}

/** @param {number} tabId @param {string} why */
function takenBackError(tabId, why) {
  return serverError(why === 'blocked'
    ? `tab ${tabId} was taken out of your reach: it went to a site the browser's owner has put off limits`
    : `tab ${tabId} was taken back by the browser's owner (moved out of your tab group); use createTab, or a tab from getTabs that is not owned`);
}
