/**
 * Waiting that does not guess (issue 14, item 6): after a click, typing, a key press or a
 * navigation, answer once the page has settled, so the model's next look sees the result
 * rather than the moment before it. "Settled" is measured, not slept: no request of the tab
 * in flight and none started or finished for QUIET_MS, counted from the action's end (a
 * request the action causes is reported by Chrome a moment after it). Bounded by
 * SETTLE_MAX_MS: a page that keeps polling or streaming gets its answer then, saying how many
 * requests were still open. Timers the page sets without network (a setTimeout that changes
 * the text later) are not seen; browser_wait_for is for those.
 */

/** How long the network must have been quiet. */
export const QUIET_MS = 200;
/** The longest an action waits for quiet before answering anyway. */
export const SETTLE_MAX_MS = 3_000;
const POLL_MS = 50;

/**
 * Whether the tab counts as settled now.
 *
 * @param {{inFlight: number, quietForMs: number}} network from NetworkLog.quiet
 * @param {number} sinceActionMs time since the action ended
 */
export function isSettled(network, sinceActionMs) {
  return network.inFlight === 0 && Math.min(network.quietForMs, sinceActionMs) >= QUIET_MS;
}

/**
 * Waits until the tab of an action's `result` has settled and returns the result with
 * `settled: {waitedMs, quiet, inFlight?}`. A result that reports a dialog, or names no tab,
 * is returned at once: the page waits for the model, not the other way round.
 *
 * @param {any} ctx the command context (its `debuggers.network` is read)
 * @param {any} result what the action answered
 */
export async function settleAfter(ctx, result) {
  const tabId = result?.tabId;
  if (result?.dialog || typeof tabId !== 'number' || !ctx.debuggers?.network)
    return result;
  const ended = Date.now();
  for (;;) {
    const now = Date.now();
    const network = ctx.debuggers.network.quiet(tabId, now);
    if (isSettled(network, now - ended))
      return { ...result, settled: { waitedMs: now - ended, quiet: true } };
    if (now - ended >= SETTLE_MAX_MS || ctx.debuggers.events?.dialog(tabId))
      return { ...result, settled: { waitedMs: now - ended, quiet: false, inFlight: network.inFlight } };
    await new Promise(resolve => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Wraps a command so it answers only once its tab has settled (see {@link settleAfter}).
 *
 * @param {{params: object, run: (ctx: any, params: any) => Promise<any>}} command
 */
export function settling(command) {
  return { ...command, run: async (ctx, params) => settleAfter(ctx, await command.run(ctx, params)) };
}
