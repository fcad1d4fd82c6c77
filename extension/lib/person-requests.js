/**
 * What an assistant waits on the person for (issue 29):
 * - a hand-off: a step only the person can do (a login, a second factor, a CAPTCHA, a consent
 *   screen), done by the person in the assistant's tab, then "Done" or "Cancel" in the popup;
 * - an ask-before: a consequential step (submitting a form, a purchase) the person asked to see
 *   first, answered "Allow" or "Deny" in the popup.
 *
 * The assistant's call does not stay open while the person acts: the relay and the bridge time
 * requests out after 60 s, and a hand-off may take half an hour. So a hand-off is opened by
 * one short call and waited for by more short calls ({@link PersonRequests.wait}, at most
 * AWAIT_MAX_MS each), which the bridge repeats until the answer comes, sending the MCP host
 * progress notifications meanwhile. The record outlives any one call: a poll after a reconnect
 * still finds it by its id.
 *
 * Pure bookkeeping (timers only): the popup, the badge and the notification are OwnerControl's.
 */

/** A hand-off waits this long when the call names no timeout. */
export const HAND_OFF_DEFAULT_SECONDS = 300;
/** …and at most this long: a person who went away should not hold a tab for ever. */
export const HAND_OFF_MAX_SECONDS = 1_800;
/** One wait for the answer: well under the relay's and the bridge's 60 s request timeouts. */
export const AWAIT_MAX_MS = 30_000;
/** Answered requests are kept this long, for a poll that comes after a reconnect. */
const ANSWERED_KEPT_MS = 10 * 60_000;

/** @typedef {'hand-off'|'ask'} PersonRequestKind */
/** @typedef {'waiting'|'done'|'cancelled'|'allowed'|'denied'|'timed-out'|'withdrawn'} PersonRequestStatus */

/**
 * @typedef {object} PersonRequest
 * @property {string} id unguessable: holding it is what lets a call wait for the answer
 * @property {string} [key] what an ask is about (connection, tab, action), so the same action waits on the same prompt
 * @property {PersonRequestKind} kind
 * @property {PersonRequestStatus} status
 * @property {string} connectionId the assistant's MCP connection
 * @property {string} assistant its name, as the person knows it
 * @property {number} tabId
 * @property {string} reason a hand-off: what the assistant asks the person to do; an ask: what it is about to do, in words
 * @property {string} [summary] what the audit receipt says it was about, without the page's own words (an ask's element label is page content)
 * @property {{url: string, title: string}} page the tab when the request was made
 * @property {number} openedAt epoch ms
 * @property {number} deadline epoch ms
 * @property {number} [answeredAt] epoch ms
 * @property {'host'} [answeredVia] set when the person answered in the MCP host rather than in the popup
 */

export class PersonRequests {
  /**
   * @param {{now?: () => number, newId?: () => string}} [deps]
   */
  constructor({ now = Date.now, newId = () => crypto.randomUUID() } = {}) {
    this._now = now;
    this._newId = newId;
    /** @type {Map<string, PersonRequest>} */
    this._requests = new Map();
    /** @type {Map<string, Set<() => void>>} who waits for each request's answer */
    this._waiters = new Map();
    /** @type {Map<string, ReturnType<typeof setTimeout>>} */
    this._timers = new Map();
    /** @type {Set<(request: PersonRequest, change: 'opened'|'answered') => void>} */
    this._listeners = new Set();
  }

  /** @param {(request: PersonRequest, change: 'opened'|'answered') => void} listener */
  listen(listener) {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  /**
   * @param {{kind: PersonRequestKind, key?: string, summary?: string, connectionId: string, assistant: string, tabId: number, reason: string,
   *   page: {url: string, title: string}, timeoutMs: number}} request
   * @returns {PersonRequest}
   */
  open({ kind, key, summary, connectionId, assistant, tabId, reason, page, timeoutMs }) {
    this._prune();
    const openedAt = this._now();
    /** @type {PersonRequest} */
    const request = {
      id: this._newId(), kind, ...(key === undefined ? {} : { key }), ...(summary === undefined ? {} : { summary }), status: 'waiting', connectionId, assistant, tabId, reason, page, openedAt, deadline: openedAt + timeoutMs,
    };
    this._requests.set(request.id, request);
    const timer = setTimeout(() => this._expire(request.id), timeoutMs);
    timer.unref?.();
    this._timers.set(request.id, timer);
    this._tell(request, 'opened');
    return { ...request };
  }

  /**
   * The person's answer (or the assistant's withdrawal). Only a waiting request is answered;
   * a second answer changes nothing.
   *
   * @param {string} id
   * @param {Exclude<PersonRequestStatus, 'waiting'>} status
   * @param {{via?: 'host'}} [how] `via: 'host'`: given in the MCP host, not in the popup
   * @returns {PersonRequest | undefined} the request as it now is
   */
  answer(id, status, { via } = {}) {
    const request = this._requests.get(id);
    if (!request)
      return undefined;
    if (request.status === 'waiting') {
      if (via)
        request.answeredVia = via;
      this._settle(request, status);
    }
    return { ...request };
  }

  /**
   * The latest request opened under `key` (answered ones are kept ten minutes).
   *
   * @param {string} key
   * @returns {PersonRequest | undefined}
   */
  lastByKey(key) {
    const found = [...this._requests.values()].filter(request => request.key === key).at(-1);
    return found ? this.get(found.id) : undefined;
  }

  /** @param {string} id */
  get(id) {
    const request = this._requests.get(id);
    if (request?.status === 'waiting' && this._now() >= request.deadline)
      this._settle(request, 'timed-out');
    return request ? { ...request } : undefined;
  }

  /**
   * Waits up to `ms` (and never past the request's deadline) for the answer.
   *
   * @param {string} id
   * @param {number} ms
   * @returns {Promise<PersonRequest | undefined>} the request as it then is (`waiting` if no answer came)
   */
  async wait(id, ms) {
    const request = this.get(id);
    if (!request || request.status !== 'waiting')
      return request;
    const untilDeadline = request.deadline - this._now();
    const until = Math.min(ms, untilDeadline);
    await new Promise(resolve => {
      const done = () => {
        clearTimeout(timer);
        this._waiters.get(id)?.delete(done);
        resolve(undefined);
      };
      const timer = setTimeout(done, Math.max(0, until));
      if (!this._waiters.has(id))
        this._waiters.set(id, new Set());
      this._waiters.get(id).add(done);
    });
    // A wait bound by the deadline ends at it: a timer may fire a millisecond before the clock
    // reads the deadline, and the request must not then come back still waiting.
    if (untilDeadline <= ms)
      this._expire(id);
    return this.get(id);
  }

  /**
   * The waiting hand-off of a tab: while the person has it, the assistant's other calls on it
   * are refused (commands.js).
   *
   * @param {number | undefined} tabId
   * @returns {PersonRequest | undefined}
   */
  handOffOn(tabId) {
    if (tabId === undefined)
      return undefined;
    for (const request of this._requests.values()) {
      if (request.kind === 'hand-off' && request.tabId === tabId && this.get(request.id)?.status === 'waiting')
        return { ...request };
    }
    return undefined;
  }

  /** Every request still waiting, oldest first: what the popup shows. @returns {PersonRequest[]} */
  waiting() {
    return [...this._requests.values()].filter(r => this.get(r.id)?.status === 'waiting').map(r => ({ ...r }));
  }

  /** The requests of a connection that went away are withdrawn. @param {string} connectionId */
  withdrawAll(connectionId) {
    for (const request of this._requests.values()) {
      if (request.connectionId === connectionId && request.status === 'waiting')
        this._settle(request, 'withdrawn');
    }
  }

  /** @param {string} id */
  _expire(id) {
    const request = this._requests.get(id);
    if (request?.status === 'waiting')
      this._settle(request, 'timed-out');
  }

  /** @param {PersonRequest} request @param {Exclude<PersonRequestStatus, 'waiting'>} status */
  _settle(request, status) {
    request.status = status;
    request.answeredAt = this._now();
    clearTimeout(this._timers.get(request.id));
    this._timers.delete(request.id);
    for (const wake of [...(this._waiters.get(request.id) ?? [])])
      wake();
    this._waiters.delete(request.id);
    this._tell(request, 'answered');
  }

  _prune() {
    const now = this._now();
    for (const [id, request] of this._requests) {
      if (request.status !== 'waiting' && now - (request.answeredAt ?? now) > ANSWERED_KEPT_MS)
        this._requests.delete(id);
    }
  }

  /** @param {PersonRequest} request @param {'opened'|'answered'} change */
  _tell(request, change) {
    for (const listener of this._listeners) {
      try {
        listener({ ...request }, change);
      } catch (error) {
        console.warn('[mcp-relay] person request listener:', error);
      }
    }
  }
}
