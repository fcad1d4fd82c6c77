/**
 * One WebSocket to the relay: authentication, dispatch of what the relay
 * sends, and forwarding of CDP events back to the MCP connection that owns
 * the tab. Reconnecting is not its business: RelaySupervisor makes a new
 * RelayConnection for every socket and hands each the same ConnectionState,
 * because MCP connections can outlive a socket (see connection-state.js).
 */

// ---------------------------------------------------------------------------
// Wire types. The extension is the passive side: it answers requests and
// sends only notifications (build_info, forwardCDPEvent), never requests.

/**
 * A request from the relay. `id` is `proxy:<n>` for the relay's own requests
 * (authenticate) and `conn-<uuid>:<client id>` for forwarded MCP requests.
 * @typedef {{jsonrpc: '2.0', id: string|number, method: string, params?: object}} RpcRequest
 */
/** @typedef {{jsonrpc: '2.0', method: string, params?: object}} RpcNotification */
/**
 * Every reply carries the request's exact id and exactly one of result/error.
 * @typedef {{jsonrpc: '2.0', id: string|number|null, result?: object, error?: {code: number, message: string}}} RpcReply
 */
/**
 * Our answer to `authenticate`. The token appears under both spellings
 * because relays in the wild read one or the other; `client_id` lets the
 * relay give this browser the same extension id after every reconnect.
 * @typedef {{name: string, accessToken: string, access_token: string, client_id: string, version: string}} AuthenticateResult
 */
/** @typedef {{user_id: string, extension_id: string, client_id?: string}} AuthenticatedParams */
/** @typedef {{connected: boolean, peer_count: number, timestamp: string, connection_ids?: string[]}} StatusParams */
/** @typedef {{connection_id: string, reason?: string}} ConnectionClosedParams */
/** @typedef {{requestId: string|number, reason?: string}} CancelledParams */
/** @typedef {{reason?: string}} ShutdownParams */
/**
 * A CDP event of a tab, addressed with a top-level `connectionId` so the relay
 * can route it to the MCP connection that owns the tab (omitted for the direct
 * pseudo-connection, which has no relay-side id).
 * @typedef {{jsonrpc: '2.0', method: 'forwardCDPEvent', params: {tabId: number, method: string, params: object, sessionId?: string}, connectionId?: string}} ForwardCDPEvent
 */

import { runCommand } from './commands.js';
import { DIRECT_CONNECTION, connectionIdOf } from './ids.js';
import { ErrorCode, RpcError, errorReply, notification, resultReply } from './rpc.js';

/** How long the relay gets to answer one of our own requests; it answers close_connection at once. */
const REQUEST_TIMEOUT_MS = 5_000;

/**
 * @typedef {object} Credentials
 * @property {string} name browser name shown to MCP users
 * @property {string} token the JWT
 * @property {string} clientId stable per browser profile
 * @property {string} version manifest version
 */

/**
 * @typedef {object} RelayEvents what the supervisor wants to hear about
 * @property {(params: AuthenticatedParams) => void} onAuthenticated
 * @property {(params: StatusParams) => void} onStatus
 * @property {(reason: string) => void} onShutdownNotice
 * @property {(event: {code: number, reason: string, opened: boolean}) => void} onClose
 * @property {(reply: RpcReply) => void} onOrphanReply a command finished after this socket
 *   closed; the relay matches replies by extension, not socket, so a newer socket may carry it
 */

export class RelayConnection {
  /**
   * @param {string} url full ws(s)://…/extension URL
   * @param {Credentials} credentials
   * @param {import('./connection-state.js').ConnectionState} state shared across sockets
   * @param {RelayEvents} events
   */
  constructor(url, credentials, state, events) {
    this.url = url;
    this._credentials = credentials;
    this._state = state;
    this._events = events;
    /** Whether `open` fired, to tell "could not connect" from "connection lost". */
    this._opened = false;
    /** Set by the relay's `authenticated`; orphaned replies may only go out after it. */
    this.authenticated = false;
    /** Set once this socket has answered the relay's `authenticate`; it never answers twice. */
    this._authenticateAnswered = false;
    this._closed = false;
    /** @type {Map<string, {resolve: Function, reject: Function, timer: any}>} our own requests (close_connection) by id */
    this._requests = new Map();
    this._nextRequest = 0;

    this._onDebuggerEvent = this._onDebuggerEvent.bind(this);
    chrome.debugger.onEvent.addListener(this._onDebuggerEvent);

    this._ws = new WebSocket(url);
    this._ws.onopen = () => this._onOpen();
    this._ws.onmessage = event => this._onMessage(event);
    this._ws.onclose = event => this._onSocketClosed(event.code, event.reason);
    // An error is always followed by close, which carries the useful information.
    this._ws.onerror = () => {};
  }

  get isOpen() {
    return this._ws.readyState === WebSocket.OPEN;
  }

  /**
   * Closes the socket on purpose (settings changed, switch turned off).
   * Removes exactly the listener the constructor added.
   */
  close(code = 1000, reason = 'extension disconnected') {
    if (this._closed)
      return;
    this._ws.onclose = null;
    this._ws.close(code, reason);
    this._cleanUp();
  }

  /**
   * Sends the relay a request of our own (only `close_connection` so far) and
   * resolves with its result. Ids start with `ext:`, which no forwarded
   * request carries, so a reply cannot be mistaken for anything else.
   *
   * @param {string} method
   * @param {object} params
   * @param {number} [timeoutMs]
   * @returns {Promise<any>}
   */
  request(method, params, timeoutMs = REQUEST_TIMEOUT_MS) {
    if (!this.authenticated || !this.isOpen)
      return Promise.reject(new Error('Not connected to the relay'));
    const id = `ext:${++this._nextRequest}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this._requests.delete(id);
        reject(new Error(`The relay did not answer ${method} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this._requests.set(id, { resolve, reject, timer });
      this._send({ jsonrpc: '2.0', id, method, params });
    });
  }

  /** @param {RpcReply} reply */
  _settleRequest(reply) {
    const pending = this._requests.get(reply.id);
    this._requests.delete(reply.id);
    clearTimeout(pending.timer);
    if (reply.error)
      pending.reject(new RpcError(reply.error.code, reply.error.message));
    else
      pending.resolve(reply.result);
  }

  _cleanUp() {
    for (const { reject, timer } of this._requests.values()) {
      clearTimeout(timer);
      reject(new Error('The connection to the relay closed before it answered'));
    }
    this._requests.clear();
    this._closed = true;
    chrome.debugger.onEvent.removeListener(this._onDebuggerEvent);
  }

  /**
   * Sends a reply produced while another socket was current.
   *
   * @param {RpcReply} reply
   */
  sendReply(reply) {
    this._send(reply);
  }

  _onOpen() {
    this._opened = true;
    // Not a request: the relay keeps control of the handshake, this only tells it what it is talking to.
    this._send(notification('build_info', { version: this._credentials.version, name: this._credentials.name }));
  }

  /** @param {number} code @param {string} reason */
  _onSocketClosed(code, reason) {
    if (this._closed)
      return;
    this._cleanUp();
    this._events.onClose({ code, reason, opened: this._opened });
  }

  /** @param {MessageEvent} event */
  _onMessage(event) {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch (error) {
      this._send(errorReply(null, new RpcError(ErrorCode.PARSE_ERROR, `Parse error: ${error.message}`)));
      return;
    }
    this._dispatch(message);
  }

  /**
   * Everything the relay can send, in one place: its own request
   * (authenticate), its notifications, and forwarded MCP requests.
   *
   * @param {any} message
   */
  _dispatch(message) {
    if (!message || typeof message !== 'object' || Array.isArray(message)) {
      this._send(errorReply(null, new RpcError(ErrorCode.INVALID_REQUEST, 'Invalid Request: expected a JSON object')));
      return;
    }
    const hasId = message.id !== undefined && message.id !== null;
    if (typeof message.method !== 'string' && hasId && this._requests.has(message.id)) {
      this._settleRequest(message);
      return;
    }
    if (typeof message.method !== 'string') {
      // A reply to nothing we sent: there is nothing to match it to.
      if (hasId && !('result' in message) && !('error' in message))
        this._send(errorReply(message.id, new RpcError(ErrorCode.INVALID_REQUEST, 'Invalid Request: "method" must be a string')));
      return;
    }
    if (!hasId) {
      this._onNotification(message.method, message.params ?? {});
      return;
    }
    if (message.method === 'authenticate') {
      this._answerAuthenticate(message.id);
      return;
    }
    this._runForwarded(message);
  }

  /**
   * The token leaves the browser only here, and only to the relay itself: the relay's own
   * requests carry `proxy:` ids (which MCP clients may not use), it asks once per socket, and
   * never after `authenticated`. Anything else named `authenticate` is a forwarded request in
   * disguise, and answering it would hand the token to whoever sent it.
   *
   * @param {unknown} id
   */
  _answerAuthenticate(id) {
    const fromRelay = typeof id === 'string' && id.startsWith('proxy:');
    if (!fromRelay || this._authenticateAnswered || this.authenticated) {
      this._send(errorReply(id, new RpcError(ErrorCode.INVALID_REQUEST,
        'Invalid Request: authenticate is answered once per socket, to the relay only')));
      return;
    }
    this._authenticateAnswered = true;
    this._send(resultReply(id, this._authenticateResult()));
  }

  /** @returns {AuthenticateResult} */
  _authenticateResult() {
    const { name, token, clientId, version } = this._credentials;
    return { name, accessToken: token, access_token: token, client_id: clientId, version };
  }

  /** @param {RpcRequest} request */
  async _runForwarded(request) {
    const ctx = this._state.contextFor(connectionIdOf(request.id));
    let reply;
    // The browser's owner decides first (consent, taken-back tabs, off-limits sites); see owner-control.js.
    const run = this._state.owner ? (...args) => this._state.owner.run(...args, runCommand) : runCommand;
    try {
      reply = resultReply(request.id, await run(ctx, request.method, request.params));
    } catch (error) {
      reply = errorReply(request.id, error);
    }
    if (this._closed || !this.isOpen)
      this._events.onOrphanReply(reply);
    else
      this._send(reply);
  }

  /**
   * @param {string} method
   * @param {any} params
   */
  _onNotification(method, params) {
    switch (method) {
      case 'authenticated':
        this.authenticated = true;
        this._events.onAuthenticated(/** @type {AuthenticatedParams} */ (params));
        return;
      case 'status': {
        const status = /** @type {StatusParams} */ (params);
        if (Array.isArray(status.connection_ids)) {
          this._state.retainOnly(status.connection_ids);
          this._state.owner?.retainOnly(status.connection_ids);
        }
        this._events.onStatus(status);
        return;
      }
      case 'connection_opened':
        // Who the new MCP client says it is, so the owner can allow it; older relays never send it.
        this._state.owner?.connectionOpened(params);
        return;
      case 'connection_closed':
        if (typeof params.connection_id === 'string') {
          this._state.release(params.connection_id);
          this._state.owner?.connectionClosed(params.connection_id);
        }
        return;
      case 'notifications/cancelled':
        // Chrome cannot abort a CDP command halfway, so the command runs to its end and is
        // answered exactly once; the relay drops answers nobody waits for.
        console.info('[mcp-relay] request cancelled by the MCP client:', params.requestId, params.reason ?? '');
        return;
      case 'shutdown':
        // The relay closes with 1001 right after; the supervisor reconnects from onClose.
        this._events.onShutdownNotice(typeof params.reason === 'string' ? params.reason : '');
        return;
      default:
        console.info('[mcp-relay] ignoring notification', method);
    }
  }

  /**
   * @param {chrome.debugger.DebuggerSession} source
   * @param {string} method
   * @param {object} params
   */
  _onDebuggerEvent(source, method, params) {
    if (source.tabId === undefined)
      return;
    const owner = this._state.eventRecipient(source.tabId, method);
    // An un-owned tab's events have nobody to go to.
    if (owner === undefined)
      return;
    /** @type {ForwardCDPEvent} */
    const event = {
      jsonrpc: '2.0',
      method: 'forwardCDPEvent',
      params: { tabId: source.tabId, method, params: params ?? {} },
    };
    if (source.sessionId)
      event.params.sessionId = source.sessionId;
    if (owner !== DIRECT_CONNECTION)
      event.connectionId = owner;
    this._send(event);
  }

  /** @param {object} message */
  _send(message) {
    if (this._ws.readyState !== WebSocket.OPEN) {
      console.warn('[mcp-relay] socket not open; dropping', message);
      return;
    }
    this._ws.send(JSON.stringify(message));
  }
}
