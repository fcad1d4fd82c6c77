/**
 * What every command handler shares, and what the other command tables (playwright-commands.js,
 * page-tools.js, webmcp.js) use too: the tab a command acts on ({@link targetTab}, where the
 * per-connection rules live), running page-scripts.js functions in a tab, finding an element
 * the way a mouse would, and the sentences that say why an element could not be used.
 * It imports no command module but other-frames.js (which imports none), so every command
 * module can import it without a cycle.
 */

import { DialogOpenError } from '../debugger-sessions.js';
import { elementExpression, locateElement, pageExpression, pageState } from '../page-scripts.js';
import { exceptionText, invalidParams, serverError } from '../rpc.js';
import { describeTarget } from '../targets.js';
import { evaluateInFrame, frameOffset, worldOf } from './other-frames.js';

// A CDP exception's first line: in rpc.js, which other-frames.js reads it from too. The world
// an element target lives in (other-frames.js), for commands that evaluate on their element.
export { exceptionText, worldOf };

/** @typedef {import('../commands.js').CommandContext} CommandContext */

/** How often a wait (a navigation, waitFor) looks again. */
export const POLL_INTERVAL_MS = 100;

/** Optional on every command that acts on a page: defaults to the connection's current tab. */
export const TAB_ID = Object.freeze({ type: 'integer', min: 0 });

/**
 * The tab a command acts on: the one named by `tabId` (claimed for this
 * connection, refused if another owns it) or the connection's current tab.
 *
 * @param {CommandContext} ctx
 * @param {number | undefined} tabId
 * @returns {Promise<number>}
 */
export async function targetTab(ctx, tabId) {
  if (tabId !== undefined) {
    ctx.tabs.assertMayUse(ctx.connectionId, tabId);
    await tabInfo(ctx, tabId);
    ctx.tabs.claim(ctx.connectionId, tabId);
    return tabId;
  }
  const current = ctx.tabs.currentTab(ctx.connectionId);
  if (current === undefined)
    throw noCurrentTab();
  try {
    await tabInfo(ctx, current);
  } catch {
    ctx.tabs.dropTab(current);
    throw serverError(`The current tab (${current}) was closed; call createTab, or selectTab with a tabId from getTabs`);
  }
  return current;
}

export function noCurrentTab() {
  return serverError('This MCP connection has no current tab; call createTab, or selectTab with a tabId from getTabs');
}

/**
 * How old a read of the tab made by OwnerControl's checks for this very command may be and still
 * stand for a new one. Each `chrome.tabs.get` waits its turn behind the extension's other calls
 * into the browser, and right after a screenshot it was seen to take milliseconds where it
 * usually takes 0.3 ms, so each read saved is a wait saved (docs/BENCHMARKS.md, "Where the
 * chain's fixed round trip went"); a read this fresh is as good as one made now, and a tab
 * closed since fails the command with Chrome's own error.
 */
export const SEEN_TAB_FRESH_MS = 100;

/**
 * The tab (`chrome.tabs.get`), or the read OwnerControl just made of it for this command.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @returns {Promise<chrome.tabs.Tab>}
 */
export async function tabInfo(ctx, tabId) {
  const seen = ctx.seenTab;
  if (seen?.tab?.id === tabId && performance.now() - seen.at < SEEN_TAB_FRESH_MS)
    return seen.tab;
  return getTab(tabId);
}

/** @param {number} tabId */
export async function getTab(tabId) {
  try {
    return await chrome.tabs.get(tabId);
  } catch {
    throw serverError(`tab ${tabId} does not exist (it may have been closed); call getTabs for the open tabs`);
  }
}

/** @param {string} url */
export function checkUrl(url) {
  try {
    new URL(url);
  } catch {
    throw invalidParams(`parameter "url" must be an absolute URL such as https://example.com, got "${url}"`);
  }
}

/**
 * Runs a page-scripts function in the tab and returns its JSON result.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {Function} fn
 * @param {...unknown} args
 */
export async function evaluateFunction(ctx, tabId, fn, ...args) {
  return evaluateExpression(ctx, tabId, pageExpression(fn, ...args));
}

/**
 * Runs an expression built by page-scripts.js in the tab and returns its JSON result.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {string} expression
 * @param {{contextId: number, sessionId?: string} | null} [world] a frame of another origin's
 *   world (other-frames.js), for an expression about one of its elements
 */
export async function evaluateExpression(ctx, tabId, expression, world = null) {
  if (world)
    return evaluateInFrame(ctx, tabId, world, expression);
  const { result, exceptionDetails } = await ctx.debuggers.send(tabId, 'Runtime.evaluate', {
    expression,
    returnByValue: true,
    awaitPromise: true,
  });
  if (exceptionDetails)
    throw serverError(`Script failed in tab ${tabId}: ${exceptionText(exceptionDetails)}`);
  return result.value;
}

/**
 * Runs `fn` (a function's source, its `this` the element) on the input a file chooser was
 * opened for (page-events.js `FileChooser`), with `args`, and returns its JSON result; null
 * when that input is gone (its page navigated, the page removed it).
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {import('../page-events.js').FileChooser} chooser
 * @param {string} fn
 * @param {...unknown} args
 */
export async function onChooserInput(ctx, tabId, chooser, fn, ...args) {
  const group = 'mcp-relay-file-chooser';
  try {
    const { object } = await ctx.debuggers.send(tabId, 'DOM.resolveNode', { backendNodeId: chooser.backendNodeId, objectGroup: group });
    if (!object?.objectId)
      return null;
    const { result, exceptionDetails } = await ctx.debuggers.send(tabId, 'Runtime.callFunctionOn', {
      objectId: object.objectId, functionDeclaration: fn, arguments: args.map(value => ({ value })), returnByValue: true,
    });
    return exceptionDetails ? null : result?.value ?? null;
  } catch {
    return null;
  } finally {
    ctx.debuggers.send(tabId, 'Runtime.releaseObjectGroup', { objectGroup: group }).catch(() => {});
  }
}

/**
 * Where a mouse would act on an element: see `locateElement`.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {import('./targets.js').ElementTarget | string} target a ref or selector (a bare string is a selector)
 */
export async function locate(ctx, tabId, target, options = {}) {
  // An element of a frame of another origin: located in that frame, its point moved by where
  // the frame sits in the page (scrolled into view first); the mouse acts on the page, and
  // Chrome hands the events to the frame under them.
  const world = await worldOf(ctx, tabId, target);
  const offset = world ? await frameOffset(ctx, tabId, world.frame, true) : null;
  const located = await locateWhenReady(expression => evaluateExpression(ctx, tabId, expression, world), target, options);
  if (offset && typeof located?.x === 'number')
    return { ...located, x: located.x + offset[0], y: located.y + offset[1] };
  return located;
}

/** How long an element command waits for its element to become enabled, visible or uncovered. */
export const ACTIONABLE_WAIT_MS = 3_000;
/** How long it keeps trying an element placed off-screen (a page still scrolling or animating). */
const OFF_SCREEN_WAIT_MS = 500;
export const ACTIONABLE_POLL_MS = 100;

/**
 * Where a mouse would act on an element (`locateElement`: scrolled into view first), waiting
 * a bounded time for what usually passes by itself: a disabled element being enabled, an
 * overlay or animation going away, an element being shown. Then a clear error saying what
 * was waited for.
 *
 * @param {(expression: string) => Promise<any>} evaluate runs an expression in the tab
 * @param {import('./targets.js').ElementTarget | string} target
 * @param {{requireEnabled?: boolean}} [options]
 */
export async function locateWhenReady(evaluate, target, options = {}) {
  const started = Date.now();
  for (;;) {
    const located = await evaluate(elementExpression(locateElement, target, options));
    if (!located?.error)
      return located;
    const waited = Date.now() - started;
    const limit = located.error === 'off-screen' ? OFF_SCREEN_WAIT_MS : ACTIONABLE_WAIT_MS;
    if (!['disabled', 'covered', 'not-visible', 'off-screen', 'moving'].includes(located.error) || waited >= limit)
      throw elementError({ ...located, waitedMs: waited }, target);
    await new Promise(resolve => setTimeout(resolve, ACTIONABLE_POLL_MS));
  }
}

/**
 * @param {{error: string, message?: string, element?: string, cover?: string}} failure from a page script
 * @param {import('./targets.js').ElementTarget | string} target
 */
export function elementError(failure, target) {
  const named = describeTarget(target);
  switch (failure.error) {
    case 'invalid-selector': {
      const selector = typeof target === 'string' ? target : target.selector;
      const kind = /^(?:xpath=|\(*\/\/)/.test(selector) ? 'XPath' : 'CSS selector';
      return invalidParams(`parameter "selector" is not a valid ${kind}: ${selector}`);
    }
    case 'not-found':
      return serverError(`No element matches ${named}; take a snapshot to see the page's elements`);
    case 'stale-ref':
      return serverError(failure.never ? unknownRefMessage(failure) : staleRefMessage(failure));
    case 'in-canvas':
      return serverError(`Element ${named} (${failure.element}) is part of what a canvas${failure.canvas ? ` [ref=${failure.canvas}]` : ''} ` +
          'draws (its fallback content, with no place on the screen of its own), so a mouse cannot be pointed at it; ' +
          'browser_click focuses it, as the page\'s own keyboard users reach it, and keys then act on it (Enter edits a grid\'s cell)');
    case 'not-visible':
      return serverError(`Element ${named} (${failure.element}) is not visible (no size, hidden, or not taking pointer events)${waitedText(failure)}, ` +
          'so it cannot be clicked or hovered; take a snapshot to see what is shown');
    case 'moving':
      return serverError(`Element ${named} (${failure.element}) kept moving${waitedText(failure)} (the page scrolling or animating it), ` +
          'so where a click would land cannot be known; wait for the page to settle (browser_wait_for) and try again');
    case 'covered':
      return serverError(`Element ${named} (${failure.element}) is covered by another element, ${failure.cover}, at its centre${waitedText(failure)}; ` +
          'a click there would land on that element: close or dismiss it first (a dialog, banner or overlay)' +
          (failure.modal ? `; ${failure.modal}` : ''));
    case 'off-screen':
      return serverError(`Element ${named} (${failure.element}) is outside the page's visible area even after scrolling to it ` +
          `(its centre is at ${failure.at.x},${failure.at.y}; the viewport is ${failure.viewport.width}×${failure.viewport.height}): ` +
          'the page places it off-screen, as skip links that show only on keyboard focus are, so a mouse cannot reach it. ' +
          'Press Tab to focus it, or use the element it leads to');
    case 'not-editable':
      if (failure.slider)
        return serverError(`Element ${named} is a slider (a <${failure.element}> with role=slider), which takes a number: type the number to move it to, as its arrow keys do`);
      return serverError(`Element ${named} is a <${failure.element}>, which does not accept text; target an input, textarea or contenteditable element`);
    case 'takes-no-text':
      return serverError(`Element ${named} is an ${failure.element}, which takes no typed text; ${failure.instead}`);
    case 'malformed':
      return serverError(`Element ${named} (${failure.element}) takes a valid value in the form ${failure.form}, ` +
          `not ${JSON.stringify(failure.text)}; nothing was changed (its value is still ${JSON.stringify(failure.value)})`);
    case 'disabled':
      return serverError(`Element ${named}${failure.element ? ` (${failure.element})` : ''} is ${failure.readOnly ? 'read-only' : 'disabled'}` +
          `${failure.waitedMs !== undefined ? ` and stayed so for ${(failure.waitedMs / 1000).toFixed(1)} s` : ''}; ` +
          (failure.readOnly
            ? 'the page fills it itself (a date picker keeps its field read-only: click it and pick from the calendar it shows), ' +
              'or enables it once something else is done first: take a snapshot to see what'
            : 'the page enables it once something else is done first (a required field, a checkbox): take a snapshot to see what'));
    default:
      return serverError(`Element ${named}: ${failure.error}`);
  }
}

/** @param {{waitedMs?: number}} failure */
function waitedText(failure) {
  return failure.waitedMs ? ` (waited ${(failure.waitedMs / 1000).toFixed(1)} s for that to change)` : '';
}

/** How every refusal of a gone ref begins (by-locator.js tells a locator's lost element by it). */
export function staleRefStart(ref) {
  return `Ref ${ref} does not name an element on the page any more`;
}

/**
 * The refusal of a ref that no longer names a live element. Nothing was done: the model
 * decides what to act on. It is told what the ref named (`was`) and, when the page drew one
 * element of that role and name in its place (`successor`, page-scripts.js), that one's ref,
 * so it need not read the whole page again to go on.
 *
 * @param {{ref: string, was?: {role: string, name?: string}, successor?: string, alike?: number}} failure
 */
export function staleRefMessage({ ref, was, successor, alike }) {
  const what = was ? `${was.role}${was.name ? ` ${JSON.stringify(was.name)}` : ''}` : '';
  const start = `${staleRefStart(ref)} (${what ? `it was ${what}; ` : ''}it was removed or replaced, ` +
      'or the page changed since the snapshot that listed it), so nothing was done; ';
  if (successor)
    return `${start}the page now shows ${what} [ref=${successor}] in its place (pages draw parts again as they update): ` +
        'act on that ref if it is the one meant, or take a new snapshot (browser_snapshot)';
  return `${start}${alike ? `the page now shows ${alike} elements like it (${what}); ` : ''}` +
      'take a new snapshot (browser_snapshot) and use a ref from it';
}

/**
 * The refusal of a ref no snapshot of the page gave: from another tab, from before the page
 * loaded again, or one past the last the snapshots gave (a subtree or depth-limited snapshot
 * gives refs only to what it shows).
 *
 * @param {{ref: string, snapshotTaken?: boolean, last?: string}} failure
 */
export function unknownRefMessage({ ref, snapshotTaken, last }) {
  const given = !snapshotTaken
    ? 'no snapshot was taken of this page since it loaded'
    : last ? `its snapshots gave refs up to ${last}` : 'its snapshots gave no refs in that frame';
  return `Ref ${ref} was never given on this page (${given}; a ref from another tab or from before the page ` +
      'loaded again names nothing here), so nothing was done; take a snapshot (browser_snapshot) and use a ref from it';
}

/** @param {CommandContext} ctx @param {number} tabId */
export async function pageInfo(ctx, tabId) {
  try {
    const { url, title } = await evaluateFunction(ctx, tabId, pageState);
    return { url, title };
  } catch {
    const tab = await getTab(tabId);
    return { url: tab.url || '', title: tab.title || '' };
  }
}

/**
 * @param {number} deadline epoch ms
 * @param {() => Promise<boolean>} done
 * @param {() => string} timeoutMessage
 */
export async function poll(deadline, done, timeoutMessage) {
  while (!(await done())) {
    if (Date.now() >= deadline)
      throw serverError(timeoutMessage());
    await new Promise(resolve => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

/** @param {unknown} error */
export function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}


/** Page scripts fail while a document is replaced (retried by the poll); a dialog ends the wait. */
export function rethrowDialog(error) {
  if (error instanceof DialogOpenError)
    throw error;
  return null;
}
