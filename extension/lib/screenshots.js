/**
 * Screenshots for a model: how large, and how to get one from a tab that
 * Chrome may not be painting.
 *
 * Pure: the CDP calls come in as a `send` function, so Node tests drive the
 * stall, the kick and the retry with a fake.
 *
 * Size: models look at images of at most about 1568 px on the longest side
 * (larger ones are scaled down before the model sees them, at the cost of
 * the bytes and the time). So the capture itself is scaled (CDP's `clip.scale`)
 * until the longest side is at most `maxDimension` device pixels; a smaller
 * page is never scaled up.
 *
 * Stalls: `Page.captureScreenshot` answers only once the renderer produced a
 * frame. A tab Chrome does not paint (a background tab of its window, a
 * renderer throttled after input) may never produce one. The extension keeps
 * its tabs painting (each agent tab is the front tab of a window of its own,
 * with focus emulation on), and this module bounds what is left: one
 * capture attempt, then a `Page.startScreencast` kick (which makes the
 * compositor produce frames) and one retry, and an error a model can act on
 * before {@link CAPTURE_DEADLINE_MS}.
 *
 * Speed ({@link captureForModel}): a viewport shown as it is (the usual case, no emulated
 * size, one device pixel per CSS pixel) is captured as the frame Chrome already has: no
 * `Page.getLayoutMetrics` first and no `clip`. A `clip`, even one equal to the viewport at
 * scale 1, makes Chrome emulate a viewport of that size and wait for a frame rendered for it;
 * without it the capture is 2–20 ms faster, and the layout query's round trip (3–8 ms, over
 * 100 ms on a huge page whose layout is dirty) is saved. That frame is only right when it is
 * exactly the tab's own size: under an emulated viewport larger than the window (browser_resize)
 * Chrome fills the rows below the window with a copy of the top. So a frame of any other size
 * (emulation, a device pixel ratio above 1, a viewport above `maxDimension`) is taken again the
 * measured way (layout query, `clip`, scale), and the caller remembers such a tab so its next
 * screenshots go that way at once.
 */

/** The longest side, in pixels, of a screenshot unless `maxDimension` says otherwise. */
export const DEFAULT_MAX_DIMENSION = 1568;
/** A capture answers (with an image or an error) within this time. */
export const CAPTURE_DEADLINE_MS = 5_000;
/** How long after the kick its screencast frames are still kept from the client. */
export const KICK_TAIL_MS = 250;

/** How long the first capture may take before the kick and the retry. */
export const FIRST_ATTEMPT_MS = 1_500;
/** Kept free at the end of the deadline for the reply to leave in time. */
const DEADLINE_MARGIN_MS = 300;

/**
 * @typedef {object} Metrics what `Page.getLayoutMetrics` says, in CSS pixels
 * @property {{pageX: number, pageY: number, clientWidth: number, clientHeight: number}} viewport
 * @property {{width: number, height: number}} content
 * @property {number} devicePixelRatio device pixels per CSS pixel
 */

/**
 * The part of `Page.getLayoutMetrics` the capture needs.
 *
 * @param {any} layout the CDP result
 * @returns {Metrics}
 */
export function layoutMetrics(layout) {
  const viewport = layout.cssVisualViewport ?? layout.visualViewport;
  const content = layout.cssContentSize ?? layout.contentSize;
  // visualViewport is in device pixels, cssVisualViewport in CSS pixels (Chrome ≥ 92).
  const devicePixelRatio = layout.cssVisualViewport && layout.visualViewport?.clientWidth
    ? layout.visualViewport.clientWidth / layout.cssVisualViewport.clientWidth
    : 1;
  return { viewport, content, devicePixelRatio: devicePixelRatio > 0 ? devicePixelRatio : 1 };
}

/**
 * The scale that brings a `width`×`height` CSS-pixel area, rendered at
 * `devicePixelRatio`, to at most `maxDimension` pixels on its longest side.
 * Never above 1.
 *
 * @param {number} width
 * @param {number} height
 * @param {number} devicePixelRatio
 * @param {number} maxDimension
 */
export function scaleFor(width, height, devicePixelRatio, maxDimension) {
  const longest = Math.max(width, height) * devicePixelRatio;
  if (!(longest > maxDimension))
    return 1;
  // Chrome rounds the scaled size to whole pixels; aim half a pixel low so it never rounds past.
  return (maxDimension - 0.5) / longest;
}

/**
 * The `Page.captureScreenshot` params for a screenshot request, and the
 * pixel size the image will have.
 *
 * @param {{format?: string, quality?: number, fullPage?: boolean, maxDimension?: number}} request
 * @param {Metrics} metrics
 * @returns {{params: object, width: number, height: number}}
 */
export function captureParams({ format = 'png', quality, fullPage = false, maxDimension = DEFAULT_MAX_DIMENSION }, metrics) {
  const area = fullPage
    ? { x: 0, y: 0, width: Math.ceil(metrics.content.width), height: Math.ceil(metrics.content.height) }
    : {
        x: metrics.viewport.pageX,
        y: metrics.viewport.pageY,
        width: metrics.viewport.clientWidth,
        height: metrics.viewport.clientHeight,
      };
  const scale = scaleFor(area.width, area.height, metrics.devicePixelRatio, maxDimension);
  const params = { format, clip: { ...area, scale } };
  if (quality !== undefined)
    params.quality = quality;
  if (fullPage)
    params.captureBeyondViewport = true;
  const pixels = (/** @type {number} */ css) => Math.max(1, Math.round(css * metrics.devicePixelRatio * scale));
  return { params, width: pixels(area.width), height: pixels(area.height) };
}

/**
 * A screenshot for a model: the frame as it is when it has exactly the size of the tab
 * (`tabSize`, what `chrome.tabs.get` says; not given: not tried) and fits `maxDimension`, and
 * the request is not `fullPage`; else the layout query and a capture clipped to the viewport,
 * scaled to fit. Both within {@link captureWithRetry}'s bounds.
 *
 * @param {(method: string, params?: object, options?: {timeoutMs?: number}) => Promise<any>} send
 * @param {{format?: string, quality?: number, fullPage?: boolean, maxDimension?: number}} request
 * @param {{deadlineMs?: number, metricsTimeoutMs?: number, tabSize?: {width?: number, height?: number},
 *   muteKick?: () => () => void}} [options]
 * @returns {Promise<{data: string, attempts: number, width: number, height: number, asIs: boolean}>}
 *   `asIs`: the frame as it was served (false: it had to be measured and clipped)
 */
export async function captureForModel(send, request, {
  deadlineMs = CAPTURE_DEADLINE_MS,
  metricsTimeoutMs,
  tabSize,
  muteKick,
} = {}) {
  const started = Date.now();
  const { format = 'png', quality, fullPage = false, maxDimension = DEFAULT_MAX_DIMENSION } = request;
  const left = () => deadlineMs - (Date.now() - started);
  if (!fullPage && tabSize?.width && tabSize.height && Math.max(tabSize.width, tabSize.height) <= maxDimension) {
    const params = quality === undefined ? { format } : { format, quality };
    const { data, attempts } = await captureWithRetry(send, params, { deadlineMs: left(), muteKick });
    const size = imageSize(headOfBase64(data));
    if (size?.width === tabSize.width && size.height === tabSize.height)
      return { data, attempts, ...size, asIs: true };
  }
  const layout = await send('Page.getLayoutMetrics', {}, { timeoutMs: metricsTimeoutMs });
  const planned = captureParams(request, layoutMetrics(layout));
  const { data, attempts } = await captureWithRetry(send, planned.params, { deadlineMs: left(), muteKick });
  const size = imageSize(headOfBase64(data)) ?? { width: planned.width, height: planned.height };
  return { data, attempts, ...size, asIs: false };
}

/**
 * Width and height of a PNG, JPEG or WebP image, read from its header.
 *
 * @param {Uint8Array} bytes at least the first few kilobytes of the image
 * @returns {{width: number, height: number} | null} null when the header is not understood
 */
export function imageSize(bytes) {
  const u16be = (/** @type {number} */ at) => (bytes[at] << 8) | bytes[at + 1];
  const u32be = (/** @type {number} */ at) => ((bytes[at] << 24) >>> 0) + (bytes[at + 1] << 16) + (bytes[at + 2] << 8) + bytes[at + 3];
  const u16le = (/** @type {number} */ at) => bytes[at] | (bytes[at + 1] << 8);
  const u24le = (/** @type {number} */ at) => bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16);
  const ascii = (/** @type {number} */ at, /** @type {number} */ length) => String.fromCharCode(...bytes.subarray(at, at + length));
  // PNG: signature, then the IHDR chunk with width and height.
  if (bytes.length >= 24 && bytes[0] === 0x89 && ascii(1, 3) === 'PNG' && ascii(12, 4) === 'IHDR')
    return { width: u32be(16), height: u32be(20) };
  // JPEG: walk the segments to the first start-of-frame.
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8) {
    let at = 2;
    while (at + 9 < bytes.length) {
      if (bytes[at] !== 0xff)
        return null;
      const marker = bytes[at + 1];
      if (marker === 0xff) {
        at += 1;
        continue;
      }
      const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
      if (isFrame)
        return { width: u16be(at + 7), height: u16be(at + 5) };
      at += 2 + u16be(at + 2);
    }
    return null;
  }
  // WebP: RIFF container with a VP8, VP8L or VP8X chunk first.
  if (bytes.length >= 30 && ascii(0, 4) === 'RIFF' && ascii(8, 4) === 'WEBP') {
    const chunk = ascii(12, 4);
    if (chunk === 'VP8 ')
      return { width: u16le(26) & 0x3fff, height: u16le(28) & 0x3fff };
    if (chunk === 'VP8L') {
      const bits = bytes[21] | (bytes[22] << 8) | (bytes[23] << 16) | (bytes[24] << 24);
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    if (chunk === 'VP8X')
      return { width: u24le(24) + 1, height: u24le(27) + 1 };
  }
  return null;
}

/**
 * The first bytes of base64 `data`, decoded: enough for {@link imageSize}.
 *
 * @param {string} data base64
 * @param {number} [bytes]
 */
export function headOfBase64(data, bytes = 4096) {
  const chars = Math.ceil(bytes / 3) * 4;
  const binary = atob(data.slice(0, Math.min(chars, data.length - (data.length % 4))));
  return Uint8Array.from(binary, c => c.charCodeAt(0));
}

/**
 * Thrown when the capture cannot complete in time.
 */
export class CaptureStalledError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'CaptureStalledError';
  }
}

/**
 * Captures with a bounded wait: one attempt of at most `firstAttemptMs`,
 * then (if it stalled) a screencast kick and one retry, all before
 * `deadlineMs`. A stalled attempt cannot be cancelled; its late answer is
 * ignored.
 *
 * @param {(method: string, params?: object) => Promise<any>} send one CDP command to the tab
 * @param {object} params for `Page.captureScreenshot`
 * @param {{deadlineMs?: number, firstAttemptMs?: number, stalledMessage?: (ms: number) => string, muteKick?: () => () => void}} [options]
 *   `muteKick` keeps the kick's screencast frames from the client: called before the kick, the
 *   function it returns is called a moment after it (frames can trail the stop).
 * @returns {Promise<{data: string, attempts: number, kicked: boolean}>}
 */
export async function captureWithRetry(send, params, {
  deadlineMs = CAPTURE_DEADLINE_MS,
  firstAttemptMs = FIRST_ATTEMPT_MS,
  stalledMessage = ms => `the page produced no frame within ${ms} ms`,
  muteKick = () => () => {},
} = {}) {
  const started = Date.now();
  const budget = deadlineMs - DEADLINE_MARGIN_MS;
  const first = send('Page.captureScreenshot', params);
  const answer = await within(first, Math.min(firstAttemptMs, budget));
  if (answer.done)
    return { data: answer.value.data, attempts: 1, kicked: false };
  // Stalled: make the compositor produce frames, then ask again. Whichever
  // capture answers first wins (the first one may just have been slow).
  const unmute = muteKick();
  await within(kick(send), Math.max(0, budget - (Date.now() - started)));
  setTimeout(unmute, KICK_TAIL_MS);
  const retry = send('Page.captureScreenshot', params);
  const either = Promise.race([first, retry]);
  const second = await within(either, Math.max(0, budget - (Date.now() - started)));
  if (second.done)
    return { data: second.value.data, attempts: 2, kicked: true };
  throw new CaptureStalledError(stalledMessage(Date.now() - started));
}

/**
 * A short screencast: starting it makes Chrome produce a compositor frame
 * even for a page it had stopped painting. Tiny frames, stopped at once.
 *
 * @param {(method: string, params?: object) => Promise<any>} send
 */
async function kick(send) {
  try {
    await send('Page.startScreencast', { format: 'jpeg', quality: 1, maxWidth: 32, maxHeight: 32, everyNthFrame: 1 });
    await new Promise(resolve => setTimeout(resolve, 50));
    await send('Page.stopScreencast');
  } catch {
    // The retry says whether the kick helped.
  }
}

/**
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @returns {Promise<{done: true, value: T} | {done: false}>} rejects when `promise` does in time
 */
function within(promise, ms) {
  let timer;
  const timeout = new Promise(resolve => {
    timer = setTimeout(() => resolve({ done: false }), ms);
  });
  return Promise.race([promise.then(value => ({ done: true, value })), timeout])
      .finally(() => clearTimeout(timer));
}
