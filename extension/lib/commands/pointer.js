/**
 * The agent's mouse in a tab, and pressing it without the person's own pointer getting in
 * the way.
 *
 * A synthetic press activates the window of the tab it lands in (Chrome focuses the web
 * contents a mouse goes down in). On that activation Chrome also tells the page where the
 * person's real pointer is: the page sees a mousemove there. Between a press and its release
 * that turns a click into a drag (a slider, a sortable list) or closes the hover menu the
 * click was meant for, and the release lands elsewhere: in a headful Chrome, a menu opened by
 * `browser_hover` and its link clicked fired the click on `<html>`, and the answer said
 * `clicked: true`. So when another of the person's windows has the focus, the tab's window is
 * activated first, the page's pointer put back where the agent left it (a hover menu opens
 * again), and only then is the mouse pressed; the focus is handed back after, as before.
 */

/** @typedef {import('../commands.js').CommandContext} CommandContext */
/** @typedef {{x: number, y: number}} Point */

/** The watches still handing the focus back after earlier presses (see `pressing`). */
const focusWatches = /** @type {Set<() => void>} */ (new Set());

/** Where the agent's pointer was last put in each tab. */
const lastPointer = /** @type {Map<number, Point & {hover: boolean}>} */ (new Map());

/** A browser with no screen has no person's pointer to report: its presses need none of this. */
const HEADLESS = /HeadlessChrome/.test(globalThis.navigator?.userAgent ?? '');
/** How long the activation of the tab's window is waited for before pressing anyway. */
const ACTIVATION_WAIT_MS = 100;
/** After the activation: for Chrome's move to the person's pointer to reach the page first. */
const AFTER_ACTIVATION_MS = 30;
/** After the pointer is put back: for a menu that opens on hover to open again. */
const HOVER_BACK_MS = 50;
/** How long after a press the focus is watched and handed back (an activation can come late). */
const FOCUS_WATCH_MS = 1_000;

/**
 * Notes where the agent's pointer now is in a tab (after each move it makes).
 *
 * @param {number} tabId
 * @param {Point} point
 * @param {boolean} [hover] whether it was put there to hover (a menu may be open under it)
 */
export function notePointer(tabId, point, hover = false) {
  lastPointer.set(tabId, { x: point.x, y: point.y, hover });
}

// A closed tab's pointer is forgotten.
globalThis.chrome?.tabs?.onRemoved.addListener(tabId => lastPointer.delete(tabId));

/**
 * Runs `action` (the moves and presses of a click or a drag) with the tab's window active
 * and the page's pointer where the agent left it, then hands the focus back to the person's
 * window that had it. When the tab's window already has the focus, or no window of this
 * browser has it, `action` simply runs.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {() => Promise<void>} action
 */
export async function pressing(ctx, tabId, action) {
  const [focused, tab] = await Promise.all([
    chrome.windows.getLastFocused({ windowTypes: ['normal'] }).catch(() => undefined),
    chrome.tabs.get(tabId).catch(() => undefined),
  ]);
  if (HEADLESS || !focused?.focused || !tab || focused.id === tab.windowId)
    return action();
  // An earlier press's watch would hand the focus back in the middle of this one: a drag
  // right after another lost its button to the person's pointer as the focus went, and
  // SortableJS's second drag never started. This press hands it back when done.
  for (const stop of focusWatches)
    stop();
  const giveBack = () => chrome.windows.update(focused.id, { focused: true }).catch(() => {});
  // Whatever fails from here on (the tab closed under the move), the person gets the focus back.
  try {
    await activated(tab.windowId);
    // Only a hover leaves something open under the pointer that the activation's move closed.
    const back = lastPointer.get(tabId);
    if (back?.hover) {
      await ctx.debuggers.send(tabId, 'Input.dispatchMouseEvent', { type: 'mouseMoved', x: back.x, y: back.y });
      await sleep(HOVER_BACK_MS);
    }
    await action();
  } finally {
    await giveBack();
    // Where the activation above did not come in time, the press's own may come after the
    // answer: handed back too.
    const onFocusChanged = (/** @type {number} */ windowId) => {
      if (windowId === tab.windowId)
        giveBack();
    };
    const stop = () => {
      chrome.windows.onFocusChanged.removeListener(onFocusChanged);
      focusWatches.delete(stop);
    };
    chrome.windows.onFocusChanged.addListener(onFocusChanged);
    focusWatches.add(stop);
    setTimeout(stop, FOCUS_WATCH_MS);
  }
}

/**
 * Activates a window and waits until Chrome says it has the focus (at most
 * ACTIVATION_WAIT_MS), then a moment for what the activation sends the page.
 *
 * @param {number} windowId
 */
async function activated(windowId) {
  /** @type {(id: number) => void} */
  let onFocusChanged = () => {};
  const seen = new Promise(resolve => {
    onFocusChanged = id => {
      if (id === windowId)
        resolve(undefined);
    };
    chrome.windows.onFocusChanged.addListener(onFocusChanged);
    setTimeout(resolve, ACTIVATION_WAIT_MS);
  });
  try {
    await chrome.windows.update(windowId, { focused: true }).catch(() => {});
    await seen;
  } finally {
    chrome.windows.onFocusChanged.removeListener(onFocusChanged);
  }
  await sleep(AFTER_ACTIVATION_MS);
}

/** @param {number} ms */
function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}
