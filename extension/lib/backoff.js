/**
 * Reconnect delays: exponential growth with jitter, capped.
 *
 * Jitter matters because a relay restart drops every extension at once; without
 * it they would all come back in the same millisecond, again and again.
 * "Equal jitter" (half fixed, half random) keeps a floor, so a flapping relay is
 * never hammered with near-zero delays.
 *
 * Pure: no timers and no `chrome.*`; the caller schedules.
 */
export class Backoff {
  /**
   * @param {object} [options]
   * @param {number} [options.initialMs] delay before the first retry, before jitter
   * @param {number} [options.maxMs] hard cap, jitter included
   * @param {() => number} [options.random] returns [0, 1); injectable for tests
   */
  constructor({ initialMs = 1000, maxMs = 30_000, random = Math.random } = {}) {
    /** Delay before the first retry; doubles on every failed attempt. */
    this.initialMs = initialMs;
    /** The issue caps waiting at 30 s: longer and a user thinks the extension died. */
    this.maxMs = maxMs;
    this._random = random;
    /** Failed attempts since the last success; the exponent. */
    this.attempt = 0;
  }

  /** Delay before the next attempt, in ms; counts the attempt. */
  next() {
    // Past 2^20 the product is far beyond any cap; stop growing to avoid Infinity.
    const exponent = Math.min(this.attempt, 20);
    const ceiling = Math.min(this.maxMs, this.initialMs * 2 ** exponent);
    this.attempt += 1;
    const half = ceiling / 2;
    return Math.round(half + this._random() * half);
  }

  /** Call once a connection proved good (authenticated), not merely opened. */
  reset() {
    this.attempt = 0;
  }
}
