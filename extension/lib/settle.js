/**
 * Waiting that does not guess (issue 14, item 6; issue 23, item 6): after a click, typing, a
 * key press or a navigation, answer once the page has settled, so the model's next look sees
 * the result rather than the moment before it, and not a moment later than the evidence
 * allows. "Settled" is measured, not slept:
 *
 * - the network: no request of the tab in flight, no frame loading (Page.frameStartedLoading
 *   to Page.frameStoppedLoading, so a navigation counts from its start, before its first
 *   request), and QUIET_MS without a request starting or ending;
 * - after an action, ACTION_GRACE_MS first: a request or navigation the action causes is
 *   reported by Chrome a moment after the action's input events;
 * - after a navigation whose load event has fired, nothing started for QUIET_MS suffices
 *   (requests that ended just before the load event say nothing about what comes next), and
 *   requests open since before the load count for LOAD_STRAGGLERS_MS only (a long poll or a
 *   stream the page opened while loading does not hold every navigation to the bound);
 * - an action waits for the requests it set off, not for those the page had open before it;
 *   an event source counts until it is answered (it is a stream by nature), so does, for a
 *   navigation, a fetch answered as a stream (`text/event-stream`: Gradio's heartbeat held
 *   each navigation to SETTLE_MAX_MS), and a stream's chunks are not activity;
 * - the DOM: no mutation for DOM_QUIET_MS (DOM_QUIET_LOADED_MS after a load event; an observer the extension adds to agent tabs'
 *   documents, DOM_WATCH_SCRIPT), waited for at most DOM_WAIT_MAX_MS, so a page that animates
 *   forever is not held;
 * - after an action, the page's own motion: a CSS transition or animation that will end within
 *   ANIMATION_END_MAX_MS (a modal's backdrop fading in, after which the page shows the modal;
 *   the modal sliding in; a menu opening) is waited for, up to ANIMATION_WAIT_MAX_MS after the
 *   network settled. Before, a click on Bootstrap's "Refund order" answered during the
 *   backdrop's 150 ms fade and the next snapshot showed no dialog. A transition or animation
 *   of colours or shadows only (a button's hover, rustdoc's highlight of the section a link
 *   leads to) moves and shows nothing and is not waited for, nor is a ripple (a wordless
 *   element that takes no pointer events: MUI's runs 550 ms on every button pressed, and held
 *   each click that long), nor is an animation that never
 *   ends (a spinner) or ends later than the bound (a long progress bar).
 *
 * Bounded by SETTLE_MAX_MS: a page that keeps polling or streaming gets its answer then,
 * saying how many requests were still open. Timers the page sets without network or DOM
 * changes are not seen; browser_wait_for is for those.
 */

/** How long the network must have been quiet. */
export const QUIET_MS = 50;
/** After an action: how long its consequences (a request, a navigation) may take to show. */
export const ACTION_GRACE_MS = 100;
/** How long the DOM must have been unchanged. */
export const DOM_QUIET_MS = 50;
/** … after a navigation whose load event fired: the parser's changes are over, only scripts' remain. */
export const DOM_QUIET_LOADED_MS = 20;
/** The most an answer waits for the DOM to be quiet once the network is. */
export const DOM_WAIT_MAX_MS = 300;
/** The longest a transition or animation may still run to be waited for at all. */
export const ANIMATION_END_MAX_MS = 1_000;
/** After an action, the most its answer waits for the page's motion once the network is quiet. */
export const ANIMATION_WAIT_MAX_MS = 600;
/** The longest an action waits for quiet before answering anyway. */
export const SETTLE_MAX_MS = 3_000;
/**
 * After a navigation's load event: how long requests the page had already open still count.
 * One still open then is taken for a long-lived connection (a long poll, a stream, a beacon),
 * not the page's content: Playwright MCP's navigation waits for the load alone, and a page's
 * long poll held every navigation to SETTLE_MAX_MS. Requests started after the load (a page
 * fetching its data once loaded) count in full.
 */
export const LOAD_STRAGGLERS_MS = 300;
const POLL_MS = 10;

/** Where the page's DOM observer keeps the time of the last mutation (performance.now()). */
const LAST_MUTATION_KEY = 'mcp-relay.lastMutation';

/** What the DOM watcher observes, in the document and in components' shadow roots. */
export const DOM_WATCH_OPTIONS = Object.freeze({ subtree: true, childList: true, attributes: true, characterData: true });

/**
 * Records when the document last changed, from its start. Evaluated in agent tabs' new
 * documents (debugger-sessions.js); invisible to the page but for a non-enumerable Symbol.
 * Its observer is kept beside the time: an observer of the document hears nothing inside a
 * shadow root, so action-evidence.js `watchAction` has it observe the page's open shadow
 * roots too, before each action (a component redraws inside its own). It also keeps when each
 * text node last changed, and when before that (`texts`): a text that rewrites itself on its
 * own (a clock, "updated 3 s ago") is not what an action made the page show.
 */
export const DOM_WATCH_SCRIPT = `(() => {
  const key = Symbol.for(${JSON.stringify(LAST_MUTATION_KEY)});
  if (Object.prototype.hasOwnProperty.call(window, key)) return;
  const watch = { at: performance.now(), texts: new WeakMap() };
  watch.observer = new MutationObserver(records => {
    watch.at = performance.now();
    for (const record of records) {
      if (record.type === 'characterData') watch.texts.set(record.target, { at: watch.at, prior: watch.texts.get(record.target)?.at });
    }
  });
  watch.options = ${JSON.stringify(DOM_WATCH_OPTIONS)};
  Object.defineProperty(window, key, { value: watch });
  watch.observer.observe(document, watch.options);
})()`;

/**
 * How long the DOM has been quiet, in ms, and how long the page's motion has yet to run
 * (see ANIMATION_END_MAX_MS), or null when the page has no observer.
 */
const DOM_QUIET_EXPRESSION = `(() => {
  const w = window[Symbol.for(${JSON.stringify(LAST_MUTATION_KEY)})];
  if (!w) return null;
  let movingMs = 0;
  try {
    // The document's animations leave out those inside shadow roots: a component's dialog
    // fading in or out is in the roots watchAction found before the action.
    const roots = window[Symbol.for('mcp-relay.watch')]?.roots ?? [];
    for (const motion of [document, ...roots].flatMap(root => root.getAnimations())) {
      if (motion.playState !== 'running' || !motion.effect) continue;
      const changes = motion.transitionProperty ? [motion.transitionProperty] : (motion.effect.getKeyframes?.() ?? [])
        .flatMap(frame => Object.keys(frame)).filter(key => !['offset', 'computedOffset', 'easing', 'composite'].includes(key))
        .map(key => key.replace(/[A-Z]/g, letter => '-' + letter.toLowerCase()));
      if (changes.length && changes.every(name => /color$|shadow$|^outline|^fill$|^stroke$|^text-decoration/.test(name))) continue;
      // A ripple (MUI's and Material's, 550 ms on every button pressed) is an element with no
      // words that takes no pointer events: it shows nothing the next look needs. A backdrop
      // takes them.
      const moved = motion.effect.target;
      if (moved && !moved.textContent.trim() && getComputedStyle(moved).pointerEvents === 'none') continue;
      const timing = motion.effect.getComputedTiming();
      const left = (timing.endTime - (timing.localTime ?? 0)) / Math.abs(motion.playbackRate || 1);
      if (Number.isFinite(left) && left > 0 && left <= ${ANIMATION_END_MAX_MS}) movingMs = Math.max(movingMs, left);
    }
  } catch {}
  return { quietMs: performance.now() - w.at, movingMs };
})()`;

/**
 * Whether the tab's network counts as settled now.
 *
 * @param {{inFlight: number, quietForMs: number, sinceStartMs?: number, loading?: boolean}} network from NetworkLog.quiet
 * @param {number} sinceActionMs time since the action ended
 * @param {{loaded?: boolean}} [options] `loaded`: the action was a navigation and its load event fired
 */
export function isSettled(network, sinceActionMs, { loaded = false } = {}) {
  if (network.inFlight > 0 || network.loading)
    return false;
  if (loaded)
    return (network.sinceStartMs ?? network.quietForMs) >= QUIET_MS;
  return sinceActionMs >= ACTION_GRACE_MS && network.quietForMs >= QUIET_MS;
}

/**
 * Waits until the tab of an action's `result` has settled and returns the result with
 * `settled: {waitedMs, quiet, inFlight?}`. A result that reports a dialog, or names no tab,
 * is returned at once: the page waits for the model, not the other way round; so is a
 * navigation's that already said the page is still loading.
 *
 * @param {any} ctx the command context (its `debuggers.network` is read)
 * @param {any} result what the action answered
 * @param {{loaded?: boolean, since?: number}} [options] `loaded`: see {@link isSettled};
 *   `since`: when the action started (requests the page had open before do not hold it)
 */
export async function settleAfter(ctx, result, options = {}) {
  const tabId = result?.tabId;
  // A navigation answered before its load event (commands/tabs.js, `stillLoading`) has waited
  // its bound already: what holds the load holds the frame's loading too.
  if (result?.dialog || result?.stillLoading || typeof tabId !== 'number' || !ctx.debuggers?.network)
    return result;
  const ended = Date.now();
  let domWaitStarted;
  for (;;) {
    const now = Date.now();
    const since = options.loaded && now - ended >= LOAD_STRAGGLERS_MS ? ended : options.since;
    const network = ctx.debuggers.network.quiet(tabId, now, { since, streams: !options.loaded });
    if (now - ended >= SETTLE_MAX_MS || ctx.debuggers.events?.dialog(tabId))
      return { ...result, settled: { waitedMs: now - ended, quiet: false, inFlight: network.inFlight } };
    if (isSettled(network, now - ended, options)) {
      domWaitStarted ??= now;
      const waited = now - domWaitStarted;
      // A navigation's page may animate as it likes: Playwright MCP's answers once it loaded.
      const bound = options.loaded ? DOM_WAIT_MAX_MS : Math.max(DOM_WAIT_MAX_MS, ANIMATION_WAIT_MAX_MS);
      const dom = waited >= bound ? null : await domQuietFor(ctx, tabId);
      const wanted = options.loaded ? DOM_QUIET_LOADED_MS : DOM_QUIET_MS;
      const changing = dom !== null && dom.quietMs < wanted && waited < DOM_WAIT_MAX_MS;
      const moving = dom !== null && !options.loaded && dom.movingMs > 0;
      if (!changing && !moving)
        return { ...result, settled: { waitedMs: Date.now() - ended, quiet: true } };
      await sleep(Math.max(POLL_MS, changing ? wanted - dom.quietMs : Math.min(dom.movingMs, bound - waited)));
      continue;
    }
    await sleep(POLL_MS);
  }
}

/**
 * How long the tab's DOM has been unchanged and how long its motion has yet to run
 * (`{quietMs, movingMs}`), or null when that cannot be known (no observer in this document,
 * a page being replaced, a test without CDP).
 *
 * @param {any} ctx
 * @param {number} tabId
 */
async function domQuietFor(ctx, tabId) {
  if (typeof ctx.debuggers.send !== 'function')
    return null;
  try {
    const { result } = await ctx.debuggers.send(tabId, 'Runtime.evaluate', { expression: DOM_QUIET_EXPRESSION, returnByValue: true }, { timeoutMs: 1_000 });
    const value = result?.value;
    return typeof value?.quietMs === 'number' ? { quietMs: value.quietMs, movingMs: Number(value.movingMs) || 0 } : null;
  } catch {
    return null;
  }
}

/** @param {number} ms */
function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/**
 * Wraps a command so it answers only once its tab has settled (see {@link settleAfter}).
 *
 * @param {{params: object, run: (ctx: any, params: any) => Promise<any>}} command
 * @param {{loaded?: boolean}} [options]
 */
export function settling(command, options = {}) {
  return {
    ...command,
    run: async (ctx, params) => {
      // An action waits for what it set off, not for requests the page had open before it (a
      // long poll, a stream); a navigation's page is all new, its old requests already ended.
      const since = options.loaded ? undefined : Date.now();
      return settleAfter(ctx, await command.run(ctx, params), { ...options, since });
    },
  };
}
