/**
 * Downloads across machines (issue 23, item 5): a file an agent's action downloads is
 * captured in memory for the agent's connection instead of landing in the person's
 * Downloads folder, and the bridge takes it (`takeDownload`) to write it where it runs.
 *
 * How a download is known to be the agent's: Chrome reports `Page.downloadWillBegin` only to
 * the debugger session of the tab that started it, and this extension is attached only to
 * tabs its MCP connections own. `chrome.downloads` sees every download but not its tab; its
 * `onDeterminingFilename` holds a download until the extension answers, so a download whose
 * URL an agent tab announced is cancelled and erased there, before it is written; any other
 * download (the person's, in their own tabs) is let through untouched. The bytes are then
 * fetched again by the extension: `http(s)` from the service worker (host permission, the
 * browser's cookies), `blob:` in the page that made it, `data:` decoded.
 *
 * This module is the pure bookkeeping (Node-tested); the chrome.* and CDP wiring is in
 * connection-state.js and page-tools.js.
 */

/** How long an agent tab's announced download waits for Chrome's download item, and back. */
export const MATCH_WINDOW_MS = 5_000;
/** Captured bytes kept per download at most (they live in the service worker's memory). */
export const MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024;
/** How long a revoked blob: URL of an agent tab stays readable (see KEEP_BLOBS_SCRIPT). */
const BLOB_GRACE_MS = 10_000;
/** Downloads kept per connection that nobody took; the oldest go first. */
export const MAX_KEPT = 50;

/**
 * @typedef {object} DownloadRow what results and listDownloads show
 * @property {string} id
 * @property {string} url
 * @property {string} filename
 * @property {string} mimeType
 * @property {number} bytes
 * @property {'in_progress'|'complete'|'failed'} state
 * @property {string} [error]
 */

export class DownloadBook {
  constructor() {
    /** Announced by agent tabs, not yet matched: {tabId, connectionId, guid, url, filename, at}. */
    this._announced = [];
    /** @type {Map<string, {connectionId: string, tabId: number, startedAt: number, row: DownloadRow, data?: string, done: Promise<void>, settle: () => void}>} */
    this._items = new Map();
    this._next = 0;
  }

  /**
   * An agent tab's `Page.downloadWillBegin`.
   *
   * @param {number} tabId
   * @param {string} connectionId the tab's owner
   * @param {{guid?: string, url?: string, suggestedFilename?: string}} params
   * @param {number} [now]
   */
  announce(tabId, connectionId, params, now = Date.now()) {
    this._prune(now);
    if (typeof params?.url !== 'string')
      return;
    this._announced.push({
      tabId, connectionId, guid: params.guid, url: params.url, filename: safeName(params.suggestedFilename), at: now,
    });
  }

  /**
   * Whether Chrome's download item is one an agent tab announced; if so it is taken off the
   * announced list (each announcement matches one item).
   *
   * @param {{url?: string, finalUrl?: string}} item a chrome.downloads.DownloadItem
   * @param {number} [now]
   * @returns {{tabId: number, connectionId: string, url: string, filename: string} | undefined}
   */
  claim(item, now = Date.now()) {
    this._prune(now);
    const index = this._announced.findIndex(a => a.url === item.url || a.url === item.finalUrl);
    if (index < 0)
      return undefined;
    return this._announced.splice(index, 1)[0];
  }

  /**
   * Whether `tabId` started a download at or after `since` (announced, or captured already).
   *
   * @param {number} tabId
   * @param {number} since epoch ms
   */
  startedIn(tabId, since) {
    return this._announced.some(a => a.tabId === tabId && a.at >= since)
      || [...this._items.values()].some(item => item.tabId === tabId && item.startedAt >= since);
  }

  /** Whether any agent tab announced a download not yet matched (worth waiting for Chrome's item). */
  hasAnnounced(now = Date.now()) {
    this._prune(now);
    return this._announced.length > 0;
  }

  /**
   * A captured download starts: its bytes are being fetched.
   *
   * @param {{connectionId: string, tabId: number, url: string, filename: string, mimeType?: string}} start
   * @param {number} [now]
   * @returns {string} its id
   */
  start({ connectionId, tabId, url, filename, mimeType = '' }, now = Date.now()) {
    const id = `download-${++this._next}`;
    let settle = () => {};
    const done = new Promise(resolve => {
      settle = resolve;
    });
    this._items.set(id, {
      connectionId, tabId, startedAt: now, done, settle,
      row: { id, url: clipUrl(url), filename: filename || 'download', mimeType, bytes: 0, state: 'in_progress' },
    });
    const own = [...this._items.entries()].filter(([, item]) => item.connectionId === connectionId);
    for (const [oldId] of own.slice(0, Math.max(0, own.length - MAX_KEPT)))
      this._items.delete(oldId);
    return id;
  }

  /** @param {string} id @param {string} base64 @param {number} bytes @param {string} [mimeType] */
  complete(id, base64, bytes, mimeType) {
    const item = this._items.get(id);
    if (!item)
      return;
    item.data = base64;
    item.row.bytes = bytes;
    item.row.state = 'complete';
    if (mimeType && !item.row.mimeType)
      item.row.mimeType = mimeType;
    item.settle();
  }

  /** @param {string} id @param {string} error */
  fail(id, error) {
    const item = this._items.get(id);
    if (!item)
      return;
    item.row.state = 'failed';
    item.row.error = error;
    item.settle();
  }

  /**
   * The connection's downloads begun in `tabId` at or after `since`, once each has finished
   * or `waitMs` passed (a long one is reported in progress; listDownloads shows it later).
   *
   * @param {string} connectionId
   * @param {number} tabId
   * @param {number} since epoch ms
   * @param {number} waitMs
   * @returns {Promise<DownloadRow[]>}
   */
  async startedSince(connectionId, tabId, since, waitMs) {
    const items = [...this._items.values()].filter(item =>
      item.connectionId === connectionId && item.tabId === tabId && item.startedAt >= since);
    if (items.length) {
      let timer;
      await Promise.race([
        Promise.all(items.map(item => item.done)),
        new Promise(resolve => {
          timer = setTimeout(resolve, waitMs);
        }),
      ]);
      clearTimeout(timer);
    }
    return items.map(item => ({ ...item.row }));
  }

  /** @param {string} connectionId @returns {DownloadRow[]} */
  list(connectionId) {
    return [...this._items.values()].filter(item => item.connectionId === connectionId).map(item => ({ ...item.row }));
  }

  /**
   * Hands a complete download over and forgets it.
   *
   * @param {string} connectionId
   * @param {string} id
   * @param {number} [maxBytes]
   * @returns {{ok: true, download: {id: string, filename: string, mimeType: string, bytes: number, data: string}}
   *   | {ok: false, reason: 'unknown'|'in_progress'|'failed'|'too-large', row?: DownloadRow}}
   */
  take(connectionId, id, maxBytes) {
    const item = this._items.get(id);
    if (!item || item.connectionId !== connectionId)
      return { ok: false, reason: 'unknown' };
    const row = { ...item.row };
    if (row.state === 'in_progress')
      return { ok: false, reason: 'in_progress', row };
    this._items.delete(id);
    if (row.state === 'failed')
      return { ok: false, reason: 'failed', row };
    if (maxBytes !== undefined && row.bytes > maxBytes)
      return { ok: false, reason: 'too-large', row };
    return { ok: true, download: { id, filename: row.filename, mimeType: row.mimeType, bytes: row.bytes, data: item.data ?? '' } };
  }

  /**
   * Keeps only the downloads of these connections (the relay's `status` listed them).
   *
   * @param {Iterable<string>} connectionIds
   */
  retainOnly(connectionIds) {
    const keep = new Set(connectionIds);
    for (const connectionId of new Set([...this._items.values()].map(item => item.connectionId))) {
      if (!keep.has(connectionId))
        this.forgetConnection(connectionId);
    }
  }

  /** The connection ended: what it did not take is dropped. */
  forgetConnection(connectionId) {
    for (const [id, item] of this._items) {
      if (item.connectionId === connectionId)
        this._items.delete(id);
    }
    this._announced = this._announced.filter(a => a.connectionId !== connectionId);
  }

  _prune(now) {
    this._announced = this._announced.filter(a => now - a.at <= MATCH_WINDOW_MS);
  }
}

/**
 * A file name without directories or control characters (it names a file on another machine).
 *
 * @param {unknown} name
 */
export function safeName(name) {
  const base = String(name ?? '').split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return clean === '.' || clean === '..' ? '' : clean.slice(0, 200);
}

/** @param {string} url a data: URL can be megabytes; rows show its start */
function clipUrl(url) {
  return url.length > 300 ? `${url.slice(0, 300)}…` : url;
}

/**
 * Base64 of bytes, in chunks (String.fromCharCode with a huge spread overflows the stack).
 *
 * @param {Uint8Array} bytes
 */
export function toBase64(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/**
 * The bytes and type of a `data:` URL.
 *
 * @param {string} url
 * @returns {{base64: string, bytes: number, mimeType: string}}
 */
export function decodeDataUrl(url) {
  const comma = url.indexOf(',');
  if (!url.startsWith('data:') || comma < 0)
    throw new Error('not a data: URL');
  const meta = url.slice(5, comma);
  const body = url.slice(comma + 1);
  const mimeType = meta.split(';')[0] || 'text/plain';
  let bytes;
  if (/;base64$/i.test(meta)) {
    const binary = atob(decodeURIComponent(body));
    bytes = Uint8Array.from(binary, c => c.charCodeAt(0));
  } else {
    bytes = new TextEncoder().encode(decodeURIComponent(body));
  }
  return { base64: toBase64(bytes), bytes: bytes.length, mimeType };
}

/**
 * Keeps `blob:` URLs an agent tab revokes readable for a few seconds, so a download made
 * with `a.click(); URL.revokeObjectURL(url)` can still be fetched. Evaluated in agent tabs
 * only (on attach, and in each new document).
 */
export const KEEP_BLOBS_SCRIPT = `(() => {
  const key = Symbol.for('mcp-relay.keep-blobs');
  if (URL[key]) return;
  const revoke = URL.revokeObjectURL;
  Object.defineProperty(URL, key, { value: true });
  URL.revokeObjectURL = function revokeObjectURL(url) { setTimeout(() => revoke.call(URL, url), ${BLOB_GRACE_MS}); };
})()`;

/**
 * Fetches a captured download's bytes again, as the page could: `data:` decoded, `blob:`
 * read in the page that made it, `http(s)` fetched by the service worker with the browser's
 * cookies for the site (host permission; no CORS in the way).
 *
 * @param {{send: (tabId: number, method: string, params: object) => Promise<any>}} debuggers the tab's CDP (DebuggerSessions)
 * @param {number} tabId
 * @param {string} url
 * @returns {Promise<{base64: string, bytes: number, mimeType: string}>}
 */
export async function fetchDownload(debuggers, tabId, url) {
  if (url.startsWith('data:'))
    return decodeDataUrl(url);
  if (url.startsWith('blob:')) {
    const expression = `fetch(${JSON.stringify(url)}).then(r => r.blob()).then(b => new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve({ dataUrl: reader.result, size: b.size, type: b.type });
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(b);
    }))`;
    const { result, exceptionDetails } = await debuggers.send(tabId, 'Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (exceptionDetails)
      throw new Error(`the page no longer holds ${url} (${exceptionDetails.exception?.description?.split('\n')[0] ?? exceptionDetails.text})`);
    const { dataUrl, size, type } = result.value;
    return { base64: String(dataUrl).slice(String(dataUrl).indexOf(',') + 1), bytes: size, mimeType: type };
  }
  if (!/^https?:/i.test(url))
    throw new Error(`downloads from ${url.split(':')[0]}: URLs cannot be fetched again`);
  const response = await fetch(url, { credentials: 'include' });
  if (!response.ok)
    throw new Error(`fetching it again answered HTTP ${response.status} ${response.statusText}`);
  const length = Number(response.headers.get('content-length'));
  if (length > MAX_DOWNLOAD_BYTES)
    throw new Error(`it is ${length} bytes, more than the ${MAX_DOWNLOAD_BYTES} this extension keeps`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes.length > MAX_DOWNLOAD_BYTES)
    throw new Error(`it is ${bytes.length} bytes, more than the ${MAX_DOWNLOAD_BYTES} this extension keeps`);
  return { base64: toBase64(bytes), bytes: bytes.length, mimeType: (response.headers.get('content-type') ?? '').split(';')[0].trim() };
}
