/**
 * One-shot waits for a CDP event of a tab, for commands whose answer arrives as an event
 * (a drag that Chrome intercepts reports its data in `Input.dragIntercepted`).
 *
 * Fed from `chrome.debugger.onEvent` like page-events.js. Pure: Node tests it directly.
 */

export class EventTaps {
  constructor() {
    /** @type {Set<{tabId: number, method: string, resolve: (params: any) => void}>} */
    this._waiting = new Set();
  }

  /**
   * Starts waiting for `method` on the tab now (before the command that causes it), so an
   * event that arrives early is not missed.
   *
   * @param {number} tabId
   * @param {string} method
   * @returns {{event: (timeoutMs: number) => Promise<any>, cancel: () => void}}
   *   `event` gives the event's params, or undefined when none came in time
   */
  expect(tabId, method) {
    let settled;
    const arrived = new Promise(resolve => {
      settled = { tabId, method, resolve };
    });
    this._waiting.add(settled);
    const cancel = () => {
      this._waiting.delete(settled);
      settled.resolve(undefined);
    };
    return {
      event: timeoutMs => {
        const timer = setTimeout(cancel, timeoutMs);
        return arrived.finally(() => clearTimeout(timer));
      },
      cancel,
    };
  }

  /** @param {{tabId?: number, sessionId?: string}} source @param {string} method @param {any} params */
  handle(source, method, params) {
    if (source?.tabId === undefined || source.sessionId)
      return;
    for (const waiter of this._waiting) {
      if (waiter.tabId === source.tabId && waiter.method === method) {
        this._waiting.delete(waiter);
        waiter.resolve(params ?? {});
      }
    }
  }
}
