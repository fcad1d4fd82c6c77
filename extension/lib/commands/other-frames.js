/**
 * Frames of another origin: an embedded payment form, a video, a map, a sign-in widget. The
 * page's own world cannot read their documents, so the snapshot walked past them ("its
 * content is not in this snapshot"). Their content is read in the frame's own world instead,
 * through the debugger: a frame in the page's process (same site, another origin) by the
 * tab's session, a frame in a process of its own (another site) by the child session Chrome
 * attached for it (frame-sessions.js). In either, an isolated world named WORLD keeps that
 * frame's refs (`f3e5`: the top document's number for the frame, then the element), so an
 * action on such a ref runs there, its point moved by where the frame sits in the top page.
 */

import { exceptionText, serverError } from '../rpc.js';

/** The isolated world the extension reads and acts in, in each frame of another origin. */
const WORLD = 'mcp-relay';
/** How many frames of another origin one snapshot reads (a page of ads can hold dozens). */
export const OTHER_FRAMES_READ_MAX = 20;
/** How long a snapshot waits for one such frame (a frame whose page is busy is left out, said so). */
const FRAME_READ_TIMEOUT_MS = 2_000;

/**
 * The iframe element a frame number names in the top document's registry, if it is alive.
 * Runs in the page (shipped as source).
 *
 * @param {number} frame
 */
function iframeOf(frame) {
  const registry = window[Symbol.for('mcp-relay.refs')];
  const el = registry?.frameEls?.get(frame)?.deref();
  return el && el.isConnected ? el : null;
}

/**
 * Where an iframe's content sits in the top viewport (its box, border and padding), the
 * iframe first scrolled into view when `scroll`. Runs in the page, with {@link iframeOf}'s
 * answer.
 *
 * @param {Element | null} el
 * @param {boolean} scroll
 */
function contentOffset(el, scroll) {
  if (!el)
    return null;
  if (scroll)
    el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
  const rect = el.getBoundingClientRect();
  const css = getComputedStyle(el);
  return [rect.x + el.clientLeft + parseFloat(css.paddingLeft), rect.y + el.clientTop + parseFloat(css.paddingTop)];
}

/**
 * How to evaluate in frame `frame` of the top document (a frame of another origin): its
 * isolated world's context, in the tab's session or the frame's own. Null when the frame is
 * gone or cannot be reached.
 *
 * @param {any} ctx
 * @param {number} tabId
 * @param {number} frame
 * @param {number} [timeoutMs] how long to wait for the frame (a snapshot's bound)
 * @returns {Promise<{frame: number, contextId: number, sessionId?: string} | null>}
 */
export async function frameWorld(ctx, tabId, frame, timeoutMs = undefined) {
  const world = await worldOfIframe(ctx, tabId, `(${iframeOf.toString()})(${frame})`, timeoutMs);
  return world && { frame, ...world };
}

/**
 * The isolated world of the frame whose iframe element `expression` (run in the page's own
 * world) answers, or null when it answers none.
 *
 * @param {any} ctx
 * @param {number} tabId
 * @param {string} expression
 * @param {number} [timeoutMs]
 * @returns {Promise<{contextId: number, sessionId?: string} | null>}
 */
export async function worldOfIframe(ctx, tabId, expression, timeoutMs = undefined) {
  const { result } = await ctx.debuggers.send(tabId, 'Runtime.evaluate', { expression });
  if (!result?.objectId)
    return null;
  try {
    const { node } = await ctx.debuggers.send(tabId, 'DOM.describeNode', { objectId: result.objectId });
    const frameId = node?.frameId;
    if (!frameId)
      return null;
    const sessionId = ctx.debuggers.frames?.sessionOf(tabId, frameId);
    const { executionContextId } = await ctx.debuggers.send(tabId, 'Page.createIsolatedWorld',
        { frameId, worldName: WORLD }, { ...(sessionId ? { sessionId } : {}), ...(timeoutMs ? { timeoutMs } : {}) });
    return { contextId: executionContextId, ...(sessionId ? { sessionId } : {}) };
  } finally {
    ctx.debuggers.send(tabId, 'Runtime.releaseObject', { objectId: result.objectId }).catch(() => {});
  }
}

/**
 * Sends `method` to the world an evaluation belongs in: a frame of another origin's (its
 * context, in its session) or, with no world, the page's own.
 *
 * @param {any} ctx
 * @param {number} tabId
 * @param {{contextId: number, sessionId?: string} | null} world
 * @param {string} method
 * @param {object} params
 * @param {{timeoutMs?: number}} [options]
 */
export function sendIn(ctx, tabId, world, method, params, options = {}) {
  return ctx.debuggers.send(tabId, method, { ...params, ...(world ? { contextId: world.contextId } : {}) },
      { ...options, ...(world?.sessionId ? { sessionId: world.sessionId } : {}) });
}

/**
 * Evaluates `expression` in a frame's world and returns its JSON result.
 *
 * @param {any} ctx
 * @param {number} tabId
 * @param {{contextId: number, sessionId?: string}} world
 * @param {string} expression
 * @param {number} [timeoutMs] how long to wait for its answer (a snapshot's bound)
 */
export async function evaluateInFrame(ctx, tabId, world, expression, timeoutMs = undefined) {
  const { result, exceptionDetails } = await sendIn(ctx, tabId, world, 'Runtime.evaluate',
      { expression, returnByValue: true, awaitPromise: true }, timeoutMs ? { timeoutMs } : {});
  if (exceptionDetails)
    throw serverError(`Script failed in a frame of tab ${tabId}: ${exceptionText(exceptionDetails)}`);
  return result.value;
}

/**
 * Where frame `frame`'s content sits in the top viewport, `[x, y]`, or null when its iframe
 * is gone.
 *
 * @param {any} ctx
 * @param {number} tabId
 * @param {number} frame
 * @param {boolean} [scroll] scroll the iframe into view first (before an action)
 */
export async function frameOffset(ctx, tabId, frame, scroll = false) {
  const { result } = await ctx.debuggers.send(tabId, 'Runtime.evaluate',
      { expression: `(${contentOffset.toString()})((${iframeOf.toString()})(${frame}), ${scroll})`, returnByValue: true });
  return Array.isArray(result?.value) ? result.value : null;
}

/**
 * The world a ref lives in when it is a frame of another origin's (`f3e5` where frame 3 is
 * one): null for every other target, which the page's own world resolves.
 *
 * @param {any} ctx
 * @param {number} tabId
 * @param {unknown} target an element target ({ref} or {selector}) or a selector string
 */
export async function worldOf(ctx, tabId, target) {
  const ref = target && typeof target === 'object' && 'ref' in target ? String(target.ref) : null;
  const frame = ref && /^f(\d+)e\d+$/.exec(ref);
  if (!frame)
    return null;
  // Not a ref of the page's own world (a same-origin frame's is), and its frame is one.
  const { result } = await ctx.debuggers.send(tabId, 'Runtime.evaluate', {
    expression: `window[Symbol.for('mcp-relay.refs')]?.byRef.has(${JSON.stringify(ref)}) === false && ` +
        `(${iframeOf.toString()})(${Number(frame[1])}) !== null`,
    returnByValue: true,
  });
  if (result?.value !== true)
    return null;
  const world = await frameWorld(ctx, tabId, Number(frame[1]));
  if (!world)
    throw serverError(`Ref ${ref} is in a frame that is no longer on the page; take a new snapshot (browser_snapshot) and use a ref from it`);
  return world;
}

/**
 * Moves the boxes of a frame's elements (`box: [x, y, width, height]`, in the frame's viewport)
 * by where the frame's content sits in the page's.
 *
 * @param {object[]} items
 * @param {number} dx
 * @param {number} dy
 */
export function shiftBoxes(items, dx, dy) {
  for (const item of items ?? []) {
    if (item.box)
      item.box = [Math.round(item.box[0] + dx), Math.round(item.box[1] + dy), item.box[2], item.box[3]];
    shiftBoxes(item.children, dx, dy);
  }
}

/**
 * Fills in the content of the frames of another origin a capture walked past: each read in
 * its own world with `capture` (the snapshot's captureTree, as source), its refs that frame's,
 * its boxes moved by where the frame sits. A frame that cannot be read keeps its note.
 *
 * @param {any} ctx
 * @param {number} tabId
 * @param {{tree: object[]}} captured from captureTree in the top document
 * @param {{maxNodes: number, boxes?: boolean}} limits
 * @param {string} capture
 */
export async function readOtherFrames(ctx, tabId, captured, limits, capture) {
  const holes = [];
  const find = items => {
    for (const item of items ?? []) {
      if (item.otherOrigin !== undefined)
        holes.push(item);
      find(item.children);
    }
  };
  find(captured.tree);
  for (const [index, node] of holes.entries()) {
    const frame = node.otherOrigin;
    delete node.otherOrigin;
    if (index >= OTHER_FRAMES_READ_MAX) {
      node.note = `frame of another origin: not read (only the first ${OTHER_FRAMES_READ_MAX} are); snapshot its iframe as a target to read it`;
      continue;
    }
    try {
      const world = await frameWorld(ctx, tabId, frame, FRAME_READ_TIMEOUT_MS);
      if (!world)
        continue;
      const inner = await evaluateInFrame(ctx, tabId, world, `${capture}(${JSON.stringify({ ...limits, frame })})`, FRAME_READ_TIMEOUT_MS);
      if (limits.boxes) {
        const [dx, dy] = (await frameOffset(ctx, tabId, frame)) ?? [0, 0];
        shiftBoxes(inner.tree, dx, dy);
      }
      delete node.note;
      if (inner.tree.length)
        node.children = inner.tree;
    } catch {
      node.note = 'frame of another origin: its content could not be read';
    }
  }
  return captured;
}
