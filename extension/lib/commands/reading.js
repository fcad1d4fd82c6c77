/**
 * Reading the page: snapshots (the outline with refs, or the older flat element list),
 * screenshots, console messages, and waiting for text to appear or go.
 */

import { CONSOLE_LIMIT as CONSOLE_KEPT } from '../page-events.js';
import { compiledOnce, findElementThen, pageShowsText, pageState, takeSnapshot } from '../page-scripts.js';
import { invalidParams, serverError } from '../rpc.js';
import {
  CAPTURE_DEADLINE_MS, CaptureStalledError, DEFAULT_MAX_DIMENSION, captureForModel,
} from '../screenshots.js';
import { captureTree, cutLines, formatOutline } from '../snapshot.js';
import { matchesText } from '../locators.js';
import { describeTarget, elementTarget } from '../targets.js';
import { frameOffset, readOtherFrames, shiftBoxes } from './other-frames.js';
import { elementError, evaluateExpression, evaluateFunction, messageOf, poll, rethrowDialog, tabInfo, targetTab, worldOf } from './shared.js';

/** @typedef {import('../commands.js').CommandContext} CommandContext */

/** A screenshot's layout query; the rest of CAPTURE_DEADLINE_MS is for the capture. */
const METRICS_TIMEOUT_MS = 2_000;
/** Per debugger sessions, the tabs whose frame was not the tab's own size: measured and clipped from then on (screenshots.js). */
const clippedTabs = new WeakMap();

/** Snapshot limits: enough for a model to act on, small enough for one WebSocket frame. */
const SNAPSHOT_LIMITS = Object.freeze({ maxTextLength: 20_000, maxElements: 500 });

/** Outline snapshots (snapshot.js): the walk stops after this many elements. */
export const OUTLINE_MAX_NODES = 200_000;
/** `captureTree`, compiled by each page once (page-scripts.js `compiledOnce`). */
export const CAPTURE_TREE = compiledOnce(captureTree);

/**
 * The page's tree: the top document's, with the frames of another origin it walked past read
 * in their own worlds (other-frames.js), so every frame's elements have refs.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {{maxNodes: number, boxes?: boolean}} limits
 */
export async function capturePage(ctx, tabId, limits) {
  const captured = await evaluateExpression(ctx, tabId, `${CAPTURE_TREE}(${JSON.stringify(limits)})`);
  return readOtherFrames(ctx, tabId, captured, limits, CAPTURE_TREE);
}

/**
 * The outline is returned whole (the bridge cuts it into parts a model can read); this cap
 * only keeps a pathological page from making one answer unbounded, and says so in a note.
 */
export const OUTLINE_MAX_CHARS = 2_000_000;

/** waitFor: how long by default, and at most (under the relay's and the bridge's 60 s request timeouts). */
export const WAIT_DEFAULT_MS = 10_000;
export const WAIT_MAX_MS = 30_000;

/** @param {CommandContext} ctx */
export async function waitFor(ctx, { text, textGone, time, timeout, tabId }) {
  if (text === undefined && textGone === undefined && time === undefined)
    throw invalidParams('waitFor needs "text", "textGone" or "time"');
  if (time !== undefined && (text !== undefined || textGone !== undefined))
    throw invalidParams('give either "time", or "text"/"textGone", not both');
  const id = await targetTab(ctx, tabId);
  const started = Date.now();
  if (time !== undefined) {
    await new Promise(resolve => setTimeout(resolve, time * 1000));
    return { tabId: id, waited: time };
  }
  const limitMs = timeout === undefined ? WAIT_DEFAULT_MS : timeout * 1000;
  const wanted = [
    ...(text !== undefined ? [`"${text}" to appear`] : []),
    ...(textGone !== undefined ? [`"${textGone}" to disappear`] : []),
  ].join(' and ');
  const shows = wanted => evaluateExpression(ctx, id, `(${pageShowsText.toString()})(${matchesText.toString()}, ${JSON.stringify(wanted)})`)
      .catch(rethrowDialog);
  await poll(started + limitMs, async () => {
    const shown = text === undefined || await shows(text) === true;
    const gone = textGone === undefined || await shows(textGone) === false;
    return shown && gone;
  }, () => `waited ${limitMs / 1000} s (the timeout) for ${wanted} in tab ${id}, in vain; ` +
      `take a snapshot to see the page, or wait longer with "timeout" (at most ${WAIT_MAX_MS / 1000} s)`);
  return { tabId: id, found: true, ...(text !== undefined ? { text } : {}), ...(textGone !== undefined ? { textGone } : {}), waitedMs: Date.now() - started };
}

/** @param {CommandContext} ctx */
export async function consoleMessages(ctx, { onlyErrors = false, sincePage = false, tabId }) {
  const id = await targetTab(ctx, tabId);
  // Recording starts with the attachment; attach now so later messages are kept.
  await ctx.debuggers.attach(id);
  // sincePage: only the page now shown (as Playwright MCP lists them), earlier pages counted.
  const { messages, dropped, earlier } = ctx.debuggers.events.consoleMessages(id, { onlyErrors, sincePage });
  return {
    tabId: id,
    messages,
    ...(sincePage ? { earlier } : {}),
    ...(dropped ? { dropped, note: `${dropped} older messages were dropped: only the last ${CONSOLE_KEPT} of each tab are kept` } : {}),
  };
}

/**
 * A screenshot sized for a model (see screenshots.js), answered within
 * CAPTURE_DEADLINE_MS: an image, or an error saying why and what to do.
 *
 * @param {CommandContext} ctx
 */
export async function screenshot(ctx, { format = 'png', quality, fullPage = false, maxDimension = DEFAULT_MAX_DIMENSION, tabId }) {
  if (quality !== undefined && format === 'png')
    throw invalidParams('parameter "quality" applies only to format "jpeg" or "webp"');
  const started = Date.now();
  const id = await targetTab(ctx, tabId);
  const clipped = clippedTabs.get(ctx.debuggers) ?? clippedTabs.set(ctx.debuggers, new Set()).get(ctx.debuggers);
  const tab = clipped.has(id) ? undefined : await tabInfo(ctx, id).catch(() => undefined);
  let shot;
  try {
    shot = await captureForModel((method, params, options) => ctx.debuggers.send(id, method, params, options),
        { format, quality, fullPage, maxDimension }, {
          deadlineMs: CAPTURE_DEADLINE_MS - (Date.now() - started),
          metricsTimeoutMs: METRICS_TIMEOUT_MS,
          tabSize: tab && { width: tab.width, height: tab.height },
          muteKick: () => ctx.debuggers.mute(id, 'Page.screencastFrame'),
        });
  } catch (error) {
    // A page stuck in a dialog or a long script does not even answer the layout query.
    if (error instanceof CaptureStalledError || /no answer within/.test(messageOf(error)))
      throw serverError(await stalledAdvice(id, Date.now() - started, error instanceof CaptureStalledError));
    throw error;
  }
  if (!shot.asIs && !fullPage)
    clipped.add(id);
  const { data, width, height, attempts } = shot;
  return { tabId: id, data, mimeType: `image/${format}`, format, width, height, attempts };
}

/**
 * Why a tab produced no frame, and what the model can do about it.
 *
 * @param {number} tabId
 * @param {number} ms how long the capture waited
 * @param {boolean} answered whether the page answered (a capture produced no frame) rather than not at all
 */
async function stalledAdvice(tabId, ms, answered) {
  const seconds = (ms / 1000).toFixed(1);
  const tab = await chrome.tabs.get(tabId).catch(() => undefined);
  const window = tab ? await chrome.windows.get(tab.windowId).catch(() => undefined) : undefined;
  let why = 'the page did not answer or paint: it may be busy running script, or showing a dialog ' +
      '(alert, confirm) that waits for an answer';
  if (tab && !tab.active)
    why = `it is a background tab of window ${tab.windowId}, and Chrome may not paint tabs that are not in front`;
  else if (window?.state === 'minimized')
    why = `its window ${tab?.windowId} is minimized, and Chrome may not paint minimized windows`;
  return `Screenshot of tab ${tabId} failed: ${answered ? 'no frame' : 'no answer from the page'} within ${seconds} s; ${why}. ` +
      'To read the page, take a snapshot (it needs no painting). For a screenshot, open the page in a tab of your ' +
      'own with createTab (in mcp-relay bridge: browser_tabs with action "new" and the url), which gets a window ' +
      'of its own that keeps painting; or bring this tab to the front with activateTab (the person will see it).';
}


/**
 * `format: "outline"` is the snapshot with refs (snapshot.js), which the
 * bridge asks for; without it, the older flat list of elements with CSS
 * selectors, which direct clients of the relay already read.
 *
 * @param {CommandContext} ctx
 */
export async function snapshot(ctx, { format, depth, interactive = false, boxes = false, ref, selector, tabId }) {
  const scoped = ref !== undefined || selector !== undefined;
  // A subtree exists only in the outline; asking for one implies it.
  const shape = format ?? (scoped ? 'outline' : 'elements');
  if (scoped && shape !== 'outline')
    throw invalidParams('parameters "ref" and "selector" (a subtree) need format "outline"');
  const target = scoped ? elementTarget({ ref, selector }) : undefined;
  const id = await targetTab(ctx, tabId);
  if (shape === 'elements')
    return { tabId: id, ...(await evaluateFunction(ctx, id, takeSnapshot, SNAPSHOT_LIMITS)) };
  return { tabId: id, ...(await outlineOf(ctx, id, { depth, interactive, boxes, target })) };
}

/**
 * The page (or, with `target`, one element's subtree, the element first at indent 0) as
 * outline text with refs. Whole: the bridge cuts it into parts; only a pathological page
 * meets OUTLINE_MAX_CHARS, cut there at a whole line with a note.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {{depth?: number, interactive?: boolean, boxes?: boolean, target?: import('./targets.js').ElementTarget}} options
 *   `boxes`: each element's box in the viewport, `[box=x,y,width,height]` (Playwright MCP's)
 * @returns {Promise<{url: string, title: string, snapshot: string, note?: string}>}
 */
export async function outlineOf(ctx, tabId, { target, boxes = false, ...options }) {
  const limits = { maxNodes: OUTLINE_MAX_NODES, ...(boxes ? { boxes: true } : {}) };
  let captured;
  if (target) {
    // A subtree inside a frame of another origin is read in that frame's world.
    const world = await worldOf(ctx, tabId, target);
    const inWorld = world ? { ...limits, frame: world.frame } : limits;
    const expression = `(${findElementThen.toString()})((el, limits) => ${CAPTURE_TREE}(limits, el), ` +
        `${JSON.stringify(target)}, ${JSON.stringify(inWorld)})`;
    captured = await evaluateExpression(ctx, tabId, expression, world);
    if (captured?.error)
      throw elementError(captured, target);
    if (world) {
      // The header names the tab's page, not the frame's.
      const { url, title } = await evaluateFunction(ctx, tabId, pageState);
      Object.assign(captured, { url, title });
      if (boxes) {
        const [dx, dy] = (await frameOffset(ctx, tabId, world.frame)) ?? [0, 0];
        shiftBoxes(captured.tree, dx, dy);
      }
    }
  } else {
    captured = await capturePage(ctx, tabId, limits);
  }
  const cut = cutLines(formatOutline(captured.tree, options), OUTLINE_MAX_CHARS);
  const notes = [];
  if (captured.modal) {
    const { ref, name } = captured.modal;
    notes.push(`A modal dialog is open, dialog${name ? ` ${JSON.stringify(name)}` : ''}${ref ? ` [ref=${ref}]` : ''}: ` +
        'the page behind it takes no clicks or typing until it is closed');
  }
  if (target && captured.tree.length === 0)
    notes.push(`The element ${describeTarget(target)} is not rendered (hidden, or aria-hidden), so its subtree is empty`);
  else if (!cut.text && options.interactive)
    notes.push('Nothing here a person can act on (no link, button or field is shown); snapshot without "interactive" to read the text');
  else if (!cut.text)
    notes.push('Nothing is shown here: the page is blank, or everything on it is hidden');
  if (cut.cut) {
    notes.push(`The snapshot was cut after ${cut.shownLines} of ${cut.totalLines} lines (${OUTLINE_MAX_CHARS} characters, ` +
        'the safety cap); take a subtree (ref or selector), "depth" or "interactive": true to see the rest');
  }
  if (captured.nodesTruncated) {
    notes.push(`The page has more than ${captured.nodesTruncated} elements; only the first were read. ` +
        'Use a subtree (ref or selector), "interactive": true or "depth" to see less at a time');
  }
  return {
    url: captured.url,
    title: captured.title,
    snapshot: cut.text,
    ...(notes.length ? { note: notes.join('. ') } : {}),
  };
}
