/**
 * The network requests of attached tabs, kept from CDP `Network.*` events in a bounded ring
 * per tab (method, URL, status, resource type, timing, and each one's headers and request
 * body, clipped, for `networkRequests {requestId}`); and how many are still in flight, which
 * is what "the page has settled" means for clicks and typing.
 *
 * Fed from `chrome.debugger.onEvent` (Network is enabled on attach, see
 * debugger-sessions.js). Events of child sessions (out-of-process iframes, workers) are
 * ignored, as in page-events.js: the tools speak of the tab's page.
 *
 * Pure: no `chrome.*`, so Node tests it directly.
 */

/** Requests kept per tab; older ones are dropped (and counted). */
export const REQUEST_LIMIT = 500;
/** Characters kept of one URL: data: URLs can be megabytes. */
export const URL_CLIP = 1_000;
/** Characters kept of one request's or response's headers, names and values together. */
export const HEADERS_CLIP = 8_000;
/** Characters kept of one request's body (a form or a JSON payload; an upload is clipped). */
export const POST_DATA_CLIP = 20_000;

/**
 * @typedef {object} RequestEntry
 * @property {string} requestId CDP's, for `Network.getResponseBody`
 * @property {number} [index] its number on the page now shown, from 1, as Playwright MCP
 *   numbers a page's requests (`browser_network_request {index}`); none for earlier pages'
 * @property {string} method
 * @property {string} url
 * @property {string} type CDP resource type: Document, Fetch, XHR, Script, Image, …
 * @property {number} [status]
 * @property {string} [statusText]
 * @property {string} [mimeType]
 * @property {number} startedAt epoch ms
 * @property {number} [durationMs] from the request to the end of its body (or the failure)
 * @property {number} [encodedBytes]
 * @property {string} [failure] net::ERR_… or "canceled"
 * @property {boolean} [preflight] a CORS preflight Chrome sent before the page's own request
 * @property {boolean} [worker] a worker's own script, whose answer only the worker hears
 * @property {boolean} [finished]
 * @property {number} [_ts] CDP monotonic seconds, for durations
 * @property {number} [_seq] the tab's count of requests when this one was sent, from 1: what
 *   its index is reckoned from, so an index stays the same request while older ones are dropped
 * @property {Record<string, string>} [_requestHeaders] clipped (HEADERS_CLIP)
 * @property {Record<string, string>} [_responseHeaders] clipped (HEADERS_CLIP)
 * @property {string} [_postData] the request's body, clipped (POST_DATA_CLIP)
 * @property {boolean} [_hasPostData] a body Chrome did not include (Network.getRequestPostData)
 */

/**
 * Headers as kept: string values, names and values together at most HEADERS_CLIP characters
 * (the rest counted under a last name of its own).
 *
 * @param {unknown} headers
 * @returns {Record<string, string>}
 */
export function clippedHeaders(headers) {
  /** @type {Record<string, string>} */
  const kept = {};
  if (!headers || typeof headers !== 'object')
    return kept;
  let size = 0;
  const entries = Object.entries(headers);
  for (const [index, [name, value]] of entries.entries()) {
    const text = String(value);
    size += name.length + text.length;
    if (size > HEADERS_CLIP) {
      kept['…'] = `${entries.length - index} more headers not kept`;
      break;
    }
    kept[name] = text;
  }
  return kept;
}

/**
 * `text` cut to `limit` characters, saying how many more there were.
 *
 * @param {string} text
 * @param {number} limit
 */
export function clipped(text, limit) {
  return text.length > limit ? `${text.slice(0, limit)}… [${text.length - limit} more characters]` : text;
}

/**
 * A request as listed: without the fields kept for the log's own use (`_…`).
 *
 * @param {RequestEntry} entry
 */
function publicFields(entry) {
  return /** @type {RequestEntry} */ (Object.fromEntries(Object.entries(entry).filter(([key]) => !key.startsWith('_'))));
}

/**
 * The sequence number the page now shown counts from: its document's request's, or the tab's
 * first when no navigation was seen since the debugger attached (the page loaded before it).
 */
function pageBase(tab) {
  return tab.pageStart?._seq ?? 1;
}

/** Response types that stream for as long as the page keeps them open. */
const STREAM_TYPES = new Set(['text/event-stream', 'multipart/x-mixed-replace']);
/** The events of a request's life that count as network activity for settling. */
const LIFECYCLE = new Set(['Network.requestWillBeSent', 'Network.responseReceived', 'Network.loadingFinished', 'Network.loadingFailed']);

export class NetworkLog {
  /** @param {{limit?: number}} [options] */
  constructor({ limit = REQUEST_LIMIT } = {}) {
    this._limit = limit;
    /** @type {Map<number, {entries: RequestEntry[], byId: Map<string, RequestEntry>, dropped: number, inFlight: Set<string>, lastActivity: number, lastStart: number, loadingFrames: Set<string>}>} */
    this._tabs = new Map();
  }

  /**
   * One `chrome.debugger.onEvent`.
   *
   * @param {{tabId?: number, sessionId?: string}} source
   * @param {string} method
   * @param {any} params
   * @param {number} [now] epoch ms, for tests
   */
  handle(source, method, params, now = Date.now()) {
    const tabId = source?.tabId;
    if (tabId === undefined || source.sessionId)
      return;
    // Frames loading (a navigation from its start, before its first request, to its load
    // event): settling waits for them too (settle.js).
    // The main frame committed a new document: requests of the old one (its frames too)
    // that Chrome will never report finished are no longer in flight.
    if (method === 'Page.frameNavigated' && params?.frame && !params.frame.parentId && params.type !== 'BackForwardCacheRestore') {
      const tab = this._tab(tabId);
      for (const id of tab.inFlight) {
        const entry = tab.byId.get(id);
        if (!entry || entry._loader !== params.frame.loaderId)
          tab.inFlight.delete(id);
      }
      // The old document's frames are gone with it, loading or not.
      for (const frameId of tab.loadingFrames) {
        if (frameId !== params.frame.id)
          tab.loadingFrames.delete(frameId);
      }
      // Where the page now shown begins: its document's own request (sent before the commit).
      tab.pageStart = tab.entries.find(entry => entry._loader === params.frame.loaderId && entry.type === 'Document') ?? null;
      return;
    }
    if (method === 'Page.frameDetached') {
      const tab = this._tabs.get(tabId);
      tab?.loadingFrames.delete(params?.frameId);
      // A frame gone, or moved to a process of its own (reason "swap": a frame of another
      // site, site isolation's out-of-process iframe): this target never hears the end of
      // the requests it had started, its document's above all, so they are not in flight
      // here any more. (A navigation that kept a frame of another site waited out the 3 s
      // bound for that one request, and answered "Still loading".)
      for (const id of tab?.inFlight ?? []) {
        if (tab.byId.get(id)?._frame === params?.frameId)
          tab.inFlight.delete(id);
      }
      return;
    }
    if (method === 'Page.frameStartedLoading' || method === 'Page.frameStoppedLoading') {
      const tab = this._tab(tabId);
      tab.lastActivity = now;
      if (method === 'Page.frameStartedLoading' && typeof params?.frameId === 'string')
        tab.loadingFrames.add(params.frameId);
      else
        tab.loadingFrames.delete(params?.frameId);
      return;
    }
    if (!method.startsWith('Network.'))
      return;
    const id = params?.requestId;
    if (typeof id !== 'string')
      return;
    const tab = this._tab(tabId);
    // A request's start, answer or end is activity; a stream's chunks (dataReceived, an event
    // source's messages) are not: they say nothing about whether the page has settled.
    if (LIFECYCLE.has(method))
      tab.lastActivity = now;
    switch (method) {
      case 'Network.requestWillBeSent': {
        const previous = tab.byId.get(id);
        // A redirect reuses the requestId: the hop before it ends with the redirect's status.
        if (previous && params.redirectResponse) {
          previous.status = params.redirectResponse.status;
          previous.statusText = params.redirectResponse.statusText;
          this._finish(tab, id, previous, params.timestamp);
        }
        const url = String(params.request?.url ?? '');
        /** @type {RequestEntry} */
        const entry = {
          requestId: id,
          method: String(params.request?.method ?? 'GET'),
          url: clipped(url, URL_CLIP),
          type: String(params.type ?? 'Other'),
          startedAt: typeof params.wallTime === 'number' ? Math.round(params.wallTime * 1000) : now,
          _ts: params.timestamp,
          _loader: params.loaderId,
          _frame: params.frameId,
          _at: now,
          _seq: ++tab.seq,
          _requestHeaders: clippedHeaders(params.request?.headers),
          ...(typeof params.request?.postData === 'string' ? { _postData: clipped(params.request.postData, POST_DATA_CLIP) }
            : params.request?.hasPostData ? { _hasPostData: true } : {}),
          ...(params.initiator?.type === 'preflight' ? { preflight: true } : {}),
        };
        // A worker's own script: the browser fetches it for the worker (an id of the browser's,
        // not the page's `pid.n`, and no initiator on the page), and tells its answer and end
        // to the worker alone. The page never hears it finish, so it is not in flight: Node-RED's
        // editor starts Monaco's worker when a node opens, and the double click that opened one
        // waited out the 3 s bound ("Still loading … 1 request in flight"), the list saying
        // "pending" for good.
        const forWorker = entry.type === 'Script' && params.initiator?.type === 'other' && !/^\d+\.\d+$/.test(id);
        if (forWorker)
          entry.worker = true;
        tab.byId.set(id, entry);
        if (!forWorker)
          tab.inFlight.add(id);
        tab.lastStart = now;
        tab.entries.push(entry);
        const excess = tab.entries.length - this._limit;
        if (excess > 0) {
          for (const gone of tab.entries.splice(0, excess)) {
            if (tab.byId.get(gone.requestId) === gone)
              tab.byId.delete(gone.requestId);
          }
          tab.dropped += excess;
        }
        return;
      }
      case 'Network.responseReceived': {
        const entry = tab.byId.get(id);
        if (!entry)
          return;
        entry.status = params.response?.status;
        entry.statusText = params.response?.statusText;
        entry.mimeType = params.response?.mimeType;
        entry._responseHeaders = clippedHeaders(params.response?.headers);
        if (params.type)
          entry.type = String(params.type);
        // An event source is a stream by nature: once answered it is open, not loading
        // (Playwright MCP waits for its answer alone too).
        if (entry.type === 'EventSource')
          tab.inFlight.delete(id);
        // A fetch answered as a stream (Gradio's heartbeat, a chat's streamed reply) or a
        // camera's endless multipart image may stay open for the page's life. A navigation
        // does not wait for one (see `quiet`'s `streams`); an action still waits for the
        // stream it opened, which is often the answer the model is after.
        else if (STREAM_TYPES.has(String(entry.mimeType ?? '').split(';')[0].trim().toLowerCase()))
          entry._stream = true;
        return;
      }
      case 'Network.loadingFinished': {
        const entry = tab.byId.get(id);
        if (entry)
          entry.encodedBytes = params.encodedDataLength;
        this._finish(tab, id, entry, params.timestamp);
        return;
      }
      case 'Network.loadingFailed': {
        const entry = tab.byId.get(id);
        if (entry)
          entry.failure = params.canceled ? 'canceled' : String(params.errorText ?? 'failed');
        this._finish(tab, id, entry, params.timestamp);
        return;
      }
      default:
    }
  }

  /**
   * The tab's kept requests, oldest first, without internal fields.
   *
   * @param {number} tabId
   * @param {{sincePage?: boolean}} [options] `sincePage`: only the page now shown
   * @returns {{requests: RequestEntry[], dropped: number, earlier: number}} `earlier`: requests
   *   of earlier pages left out (with `sincePage`; they then include the dropped ones)
   */
  requests(tabId, { sincePage = false } = {}) {
    const tab = this._tabs.get(tabId);
    if (!tab)
      return { requests: [], dropped: 0, earlier: 0 };
    // With sincePage, only the page now shown: from its document's request on (all that is
    // kept, when that request has been dropped from the ring or was never seen).
    const from = sincePage && tab.pageStart ? Math.max(0, tab.entries.indexOf(tab.pageStart)) : 0;
    const base = pageBase(tab);
    const requests = tab.entries.slice(from).map(entry => {
      const shown = publicFields(entry);
      if (entry._seq >= base)
        shown.index = entry._seq - base + 1;
      return shown;
    });
    return { requests, dropped: from > 0 ? 0 : tab.dropped, earlier: from + (from > 0 ? tab.dropped : 0) };
  }

  /**
   * How the server answered the document of the page now shown (its last hop, after any
   * redirects), once its response has come; `null` when it has not, or was not seen.
   *
   * @param {number} tabId
   * @returns {{status: number, statusText: string} | null}
   */
  pageStatus(tabId) {
    const tab = this._tabs.get(tabId);
    const loader = tab?.pageStart?._loader;
    if (!loader)
      return null;
    const hops = tab.entries.filter(entry => entry._loader === loader && entry.type === 'Document');
    const last = hops[hops.length - 1];
    return typeof last?.status === 'number' ? { status: last.status, statusText: String(last.statusText ?? '') } : null;
  }

  /**
   * The last document request the tab sent at or after `since` (a navigation's, or its last
   * redirect hop), to say why a navigation that never committed did not: its `status` is
   * undefined until an answer came, `failure` set when it failed.
   *
   * @param {number} tabId
   * @param {number} since
   * @returns {RequestEntry | undefined}
   */
  lastDocument(tabId, since) {
    const entries = this._tabs.get(tabId)?.entries ?? [];
    for (let i = entries.length - 1; i >= 0 && entries[i]._at >= since; i--) {
      if (entries[i].type === 'Document')
        return entries[i];
    }
    return undefined;
  }

  /**
   * The kept request numbered `index` on the page now shown (as `requests` numbers them), or
   * why there is none.
   *
   * @param {number} tabId
   * @param {number} index from 1
   * @returns {{requestId: string, hop: RequestEntry, redirected: boolean} | {missing: string}}
   *   `redirected`: an earlier hop of a redirect, whose requestId the next hop took over
   */
  byIndex(tabId, index) {
    const tab = this._tabs.get(tabId);
    const seq = tab ? pageBase(tab) + index - 1 : 0;
    // The ring holds consecutive numbers, oldest first.
    const entry = tab?.entries.length ? tab.entries[seq - (tab.entries[0]._seq ?? 0)] : undefined;
    if (entry?._seq === seq)
      return { requestId: entry.requestId, hop: entry, redirected: tab.byId.get(entry.requestId) !== entry };
    const count = tab ? tab.seq - pageBase(tab) + 1 : 0;
    if (index > count)
      return { missing: `the page now shown has ${count === 1 ? '1 request' : `${Math.max(count, 0)} requests`}` };
    return { missing: `it is no longer kept: only the last ${this._limit} requests of each tab are` };
  }

  /**
   * One kept request in full: its list fields, and what was kept of its headers and body.
   * `hop`: that entry itself (a redirect's earlier hop shares its requestId with the next).
   *
   * @param {number} tabId
   * @param {string} requestId
   * @param {RequestEntry} [hop]
   */
  details(tabId, requestId, hop) {
    const tab = this._tabs.get(tabId);
    const entry = hop ?? tab?.byId.get(requestId);
    if (!entry)
      return null;
    const request = publicFields(entry);
    if (tab && entry._seq >= pageBase(tab))
      request.index = entry._seq - pageBase(tab) + 1;
    return {
      request,
      requestHeaders: entry._requestHeaders ?? {},
      responseHeaders: entry._responseHeaders,
      postData: entry._postData,
      hasPostData: Boolean(entry._hasPostData),
    };
  }

  /**
   * How the tab's network is now: requests in flight, and since when nothing happened.
   *
   * @param {number} tabId
   * @param {number} [now]
   * @param {{since?: number, streams?: boolean}} [options] `since`: only requests started then
   *   or later count as in flight (an action's own: a long poll the page had open before it is
   *   not its doing); `streams: false`: a request already answered as a stream does not count
   */
  quiet(tabId, now = Date.now(), { since, streams = true } = {}) {
    const tab = this._tabs.get(tabId);
    if (!tab)
      return { inFlight: 0, quietForMs: Infinity, sinceStartMs: Infinity, loading: false };
    let inFlight = tab.inFlight.size;
    if (since !== undefined || !streams) {
      inFlight = 0;
      for (const id of tab.inFlight) {
        const entry = tab.byId.get(id);
        if (!((entry?._at ?? now) < (since ?? -Infinity)) && (streams || !entry?._stream))
          inFlight++;
      }
    }
    return {
      inFlight,
      quietForMs: now - tab.lastActivity,
      sinceStartMs: now - tab.lastStart,
      loading: tab.loadingFrames.size > 0,
    };
  }

  /**
   * The debugger let go of the tab: requests in flight will never be reported finished, so
   * they would keep the tab "busy" forever.
   */
  detached(tabId) {
    this._tabs.get(tabId)?.inFlight.clear();
    this._tabs.get(tabId)?.loadingFrames.clear();
  }

  /** The tab is gone. */
  forget(tabId) {
    this._tabs.delete(tabId);
  }

  /** @param {number} tabId */
  _tab(tabId) {
    let tab = this._tabs.get(tabId);
    if (!tab) {
      tab = { entries: [], byId: new Map(), seq: 0, dropped: 0, inFlight: new Set(), lastActivity: 0, lastStart: 0, loadingFrames: new Set(), pageStart: null };
      this._tabs.set(tabId, tab);
    }
    return tab;
  }

  _finish(tab, id, entry, timestamp) {
    tab.inFlight.delete(id);
    if (!entry)
      return;
    entry.finished = true;
    if (typeof timestamp === 'number' && typeof entry._ts === 'number')
      entry.durationMs = Math.round((timestamp - entry._ts) * 1000);
  }
}
