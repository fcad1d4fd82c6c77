/**
 * Keeps one RelayConnection alive for as long as the user wants one:
 * connects with the current settings, reconnects with backoff after any drop,
 * keeps the MV3 service worker awake while connected, decides when MCP
 * connection state from an earlier socket is stale, and publishes the state
 * the popup and options page show.
 */

import { Backoff } from './backoff.js';
import { ConnectionState } from './connection-state.js';
import { RelayConnection } from './relay-connection.js';
import { resolveRelayUrl } from './settings.js';

/**
 * Chrome suspends an idle extension service worker after 30 s, and the
 * relay's WebSocket-level pings never reach JavaScript, so they do not count
 * as activity. Any extension API call resets the idle timer; one every 20 s
 * keeps the worker (and the socket) alive while connected.
 */
const HEARTBEAT_INTERVAL_MS = 20_000;

/**
 * After `authenticated`, how long to wait for a `status` that vouches for MCP
 * connections carried over from an earlier socket. The relay sends that
 * status right behind `authenticated` when it kept them; silence means it
 * started afresh and they are gone.
 */
const STATUS_WAIT_MS = 2_000;

/**
 * After a drop, how long owned tabs keep their debugger sessions while we
 * try to get back. Longer and the "being debugged" bar lingers on tabs
 * nobody can drive; shorter and a quick reconnect loses the MCP clients' tabs.
 */
const RECONNECT_GRACE_MS = 15_000;

/** Replies finished between sockets wait this long for the next one; the relay times requests out anyway. */
const ORPHAN_REPLY_TTL_MS = 60_000;
const MAX_ORPHAN_REPLIES = 100;

/**
 * @typedef {object} RelayState what the popup and options page render
 * @property {'disconnected'|'connecting'|'authenticated'} state
 * @property {string|null} relayUrl
 * @property {string|null} extensionId assigned by the relay in `authenticated`
 * @property {string|null} userId
 * @property {number} peerCount MCP connections, from `status`
 * @property {string[]} connectionIds
 * @property {string|null} lastError
 * @property {number|null} nextRetryAt epoch ms
 * @property {boolean} fromDevConfig
 * @property {number} updatedAt
 */

export class RelaySupervisor {
  /**
   * @param {object} deps
   * @param {() => Promise<import('./settings.js').Settings>} deps.loadSettings
   * @param {() => Promise<string>} deps.loadClientId
   * @param {string} deps.version manifest version, sent in build_info and authenticate
   * @param {(state: RelayState) => void} deps.publish
   * @param {Backoff} [deps.backoff] injectable for tests
   * @param {{statusWaitMs?: number, reconnectGraceMs?: number}} [deps.timing] injectable for tests
   * @param {import('./owner-control.js').OwnerControl} [deps.owner] the browser owner's rules for forwarded requests
   */
  constructor({ loadSettings, loadClientId, version, publish, backoff, timing = {}, owner }) {
    this._loadSettings = loadSettings;
    this._loadClientId = loadClientId;
    this._version = version;
    this._publish = publish;
    this._statusWaitMs = timing.statusWaitMs ?? STATUS_WAIT_MS;
    this._reconnectGraceMs = timing.reconnectGraceMs ?? RECONNECT_GRACE_MS;
    /** MCP connections' tabs and debugger sessions; shared by every socket of this worker. */
    this._connections = new ConnectionState();
    if (owner) {
      this._connections.owner = owner;
      owner.attach(this._connections);
    }
    /**
     * Releases every MCP connection's state unless a `status` arrives first
     * (see STATUS_WAIT_MS and RECONNECT_GRACE_MS).
     */
    this._releaseTimer = null;
    /** @type {{reply: object, at: number}[]} replies waiting for the next authenticated socket */
    this._orphanReplies = [];
    /** @type {RelayConnection | null} the live socket, if any */
    this._connection = null;
    /** Pending reconnect; while set, the watchdog alarm must not dial early. */
    this._retryTimer = null;
    this._heartbeat = null;
    /**
     * Bumped by every (re)start. A connect that finished loading settings after
     * a newer start began is stale and must not open a second socket.
     */
    this._generation = 0;
    /** True while settings load for a connect, so the watchdog does not start a second one. */
    this._connecting = false;
    this._backoff = backoff ?? new Backoff({ initialMs: 1000, maxMs: 30_000 });
    /** Kept until the close that follows, so the popup says why the relay left. */
    this._shutdownReason = null;
    /** @type {RelayState} */
    this._state = {
      state: 'disconnected', relayUrl: null, extensionId: null, userId: null, peerCount: 0,
      connectionIds: [], lastError: null, nextRetryAt: null, fromDevConfig: false, updatedAt: Date.now(),
    };
  }

  /** Connects now with fresh settings, dropping any socket or pending retry. */
  restart() {
    this._generation += 1;
    this._clearRetry();
    this._backoff.reset();
    if (this._connection) {
      this._connection.close(1000, 'settings changed');
      this._connection = null;
      this._stopHeartbeat();
    }
    // Closing our only socket on purpose ends every MCP connection at the relay.
    this._cancelRelease();
    this._orphanReplies = [];
    this._connections.releaseAll();
    this._update({ state: 'disconnected', extensionId: null, peerCount: 0, connectionIds: [], nextRetryAt: null });
    return this._connect(this._generation);
  }

  /**
   * Asks the relay to end one MCP connection (the popup's Stop, or Deny).
   *
   * @param {string} connectionId
   * @param {string} reason the relay tells the MCP client "Stopped by the browser's owner: <reason>"
   */
  closeConnection(connectionId, reason) {
    if (!this._connection)
      return Promise.reject(new Error('Not connected to the relay'));
    return this._connection.request('close_connection', { connection_id: connectionId, reason });
  }

  /**
   * Sends the relay the receipt of the person's answer to an assistant's hand-off or ask-before
   * prompt, for its audit trail (`record_decision`).
   *
   * @param {{connection_id: string, kind: 'hand-off'|'ask-before', outcome: string, site?: string, tab_id?: number, waited_ms?: number, summary?: string, via?: 'host'}} receipt
   */
  recordDecision(receipt) {
    if (!this._connection)
      return Promise.reject(new Error('Not connected to the relay'));
    return this._connection.request('record_decision', receipt);
  }

  /** Closes everything and forgets every timer; for tests and extension shutdown. */
  async stop() {
    this._generation += 1;
    this._clearRetry();
    this._cancelRelease();
    this._stopHeartbeat();
    this._connection?.close(1000, 'extension stopping');
    this._connection = null;
    await this._connections.dispose();
  }

  /**
   * The watchdog alarm's check. A service worker that Chrome stopped anyway
   * loses its timers; when the alarm wakes it, this dials again instead of
   * waiting for a timer that no longer exists.
   */
  ensureConnected() {
    if (this._connection || this._retryTimer !== null || this._connecting)
      return;
    this._connect(this._generation);
  }

  /** @param {number} generation */
  async _connect(generation) {
    this._connecting = true;
    try {
      const settings = await this._loadSettings();
      if (generation !== this._generation || this._connection)
        return;
      this._update({ fromDevConfig: settings.fromDevConfig });
      if (!settings.enabled) {
        this._update({ state: 'disconnected', lastError: null, nextRetryAt: null });
        return;
      }
      let url;
      try {
        url = resolveRelayUrl(settings);
      } catch (error) {
        // A malformed URL will not heal by retrying; wait for the user to fix it.
        this._update({ state: 'disconnected', relayUrl: null, lastError: error.message });
        return;
      }
      if (!url) {
        this._update({ state: 'disconnected', relayUrl: null, lastError: 'No relay URL: set one in Options, or use a token that carries a connection_url claim' });
        return;
      }
      if (!settings.token) {
        this._update({ state: 'disconnected', relayUrl: url, lastError: 'No access token: paste one in Options' });
        return;
      }
      const clientId = await this._loadClientId();
      if (generation !== this._generation || this._connection)
        return;
      this._update({ state: 'connecting', relayUrl: url, nextRetryAt: null });
      this._shutdownReason = null;
      this._connection = new RelayConnection(url, {
        name: settings.name, token: settings.token, clientId, version: this._version,
      }, this._connections, {
        onAuthenticated: params => this._onAuthenticated(params),
        onStatus: params => this._onStatus(params),
        onShutdownNotice: reason => { this._shutdownReason = reason || 'relay shutting down'; },
        onClose: event => this._onClose(event),
        onOrphanReply: reply => this._onOrphanReply(reply),
      });
      this._startHeartbeat();
    } catch (error) {
      this._update({ state: 'disconnected', lastError: `Could not start a connection: ${error.message}` });
      this._scheduleRetry();
    } finally {
      this._connecting = false;
    }
  }

  /** @param {import('./relay-connection.js').AuthenticatedParams} params */
  _onAuthenticated(params) {
    // Only an accepted token proves the settings good; a socket that opens and is
    // closed with 1008 must keep backing off.
    this._backoff.reset();
    this._update({
      state: 'authenticated', extensionId: params.extension_id ?? null, userId: params.user_id ?? null, lastError: null,
    });
    this._scheduleRelease(this._statusWaitMs);
    const fresh = this._orphanReplies.filter(({ at }) => Date.now() - at < ORPHAN_REPLY_TTL_MS);
    this._orphanReplies = [];
    for (const { reply } of fresh)
      this._connection?.sendReply(reply);
  }

  /** @param {import('./relay-connection.js').StatusParams} params */
  _onStatus(params) {
    // RelayConnection already pruned the connections the status no longer lists.
    this._cancelRelease();
    this._update({ peerCount: Number(params.peer_count) || 0, connectionIds: params.connection_ids ?? [] });
  }

  /** @param {object} reply */
  _onOrphanReply(reply) {
    if (this._connection?.authenticated && this._connection.isOpen) {
      this._connection.sendReply(reply);
      return;
    }
    this._orphanReplies.push({ reply, at: Date.now() });
    if (this._orphanReplies.length > MAX_ORPHAN_REPLIES)
      this._orphanReplies.shift();
  }

  /** @param {number} delayMs */
  _scheduleRelease(delayMs) {
    this._cancelRelease();
    this._releaseTimer = setTimeout(() => {
      this._releaseTimer = null;
      this._connections.releaseAll();
    }, delayMs);
  }

  _cancelRelease() {
    if (this._releaseTimer !== null)
      clearTimeout(this._releaseTimer);
    this._releaseTimer = null;
  }

  /** @param {{code: number, reason: string, opened: boolean}} event */
  _onClose({ code, reason, opened }) {
    this._connection = null;
    this._stopHeartbeat();
    this._update({
      state: 'disconnected', extensionId: null, peerCount: 0, connectionIds: [],
      lastError: this._closeMessage(code, reason, opened),
    });
    // Not postponed by repeated failures: a relay that keeps refusing must not keep tabs under debugging forever.
    if (this._releaseTimer === null)
      this._scheduleRelease(this._reconnectGraceMs);
    this._scheduleRetry();
  }

  /** @param {number} code @param {string} reason @param {boolean} opened */
  _closeMessage(code, reason, opened) {
    if (code === 1008)
      return `Relay refused this extension: ${reason || 'policy violation (is the token valid?)'}`;
    if (code === 1001 || this._shutdownReason)
      return `Relay went away: ${reason || this._shutdownReason || 'shutting down'}`;
    if (!opened)
      return `Cannot reach ${this._state.relayUrl}; is the relay running and the URL right?`;
    return `Connection to the relay lost (code ${code}${reason ? `: ${reason}` : ''})`;
  }

  _scheduleRetry() {
    this._clearRetry();
    const delay = this._backoff.next();
    const generation = this._generation;
    this._update({ nextRetryAt: Date.now() + delay });
    this._retryTimer = setTimeout(() => {
      this._retryTimer = null;
      this._connect(generation);
    }, delay);
  }

  _clearRetry() {
    if (this._retryTimer !== null)
      clearTimeout(this._retryTimer);
    this._retryTimer = null;
  }

  _startHeartbeat() {
    this._stopHeartbeat();
    this._heartbeat = setInterval(() => {
      chrome.runtime.getPlatformInfo().catch(() => {});
    }, HEARTBEAT_INTERVAL_MS);
  }

  _stopHeartbeat() {
    if (this._heartbeat !== null)
      clearInterval(this._heartbeat);
    this._heartbeat = null;
  }

  /** @param {Partial<RelayState>} changes */
  _update(changes) {
    this._state = { ...this._state, ...changes, updatedAt: Date.now() };
    this._publish(this._state);
  }
}
