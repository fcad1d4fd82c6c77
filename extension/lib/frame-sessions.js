/**
 * Frames of another site, each in a process of its own (site isolation's out-of-process
 * iframes): the tab's own debugger session cannot evaluate in them. With auto-attach (flat
 * sessions, which chrome.debugger allows where Target.attachToTarget is "Not allowed"),
 * Chrome attaches each such frame as a child session and says so; this keeps, per tab, which
 * session is which frame's (an out-of-process frame's target id is its frame id), so the
 * snapshot can read it and an action act in it (other-frames.js).
 */

/** What the tab's session asks Chrome on attach: child sessions for its frames of other sites. */
export const AUTO_ATTACH = Object.freeze({
  autoAttach: true,
  waitForDebuggerOnStart: false,
  flatten: true,
  // Frames only: not the page's workers.
  filter: [{ type: 'iframe' }],
});

export class FrameSessions {
  constructor() {
    /** @type {Map<number, Map<string, string>>} tab id → frame id → session id */
    this._tabs = new Map();
  }

  /**
   * @param {{tabId?: number, sessionId?: string}} source
   * @param {string} method
   * @param {any} params
   */
  handle(source, method, params) {
    const tabId = source?.tabId;
    // A frame's own frames report through its session; one level is kept.
    if (tabId === undefined || source.sessionId)
      return;
    if (method === 'Target.attachedToTarget' && params?.targetInfo?.type === 'iframe' && typeof params.sessionId === 'string') {
      let frames = this._tabs.get(tabId);
      if (!frames)
        this._tabs.set(tabId, frames = new Map());
      frames.set(String(params.targetInfo.targetId), params.sessionId);
    } else if (method === 'Target.detachedFromTarget') {
      const frames = this._tabs.get(tabId);
      for (const [frameId, sessionId] of frames ?? []) {
        if (sessionId === params?.sessionId || frameId === params?.targetId)
          frames.delete(frameId);
      }
    }
  }

  /**
   * The child session of a tab's out-of-process frame, or undefined for a frame that runs in
   * the page's own process (the tab's session reaches it).
   *
   * @param {number} tabId
   * @param {string} frameId
   */
  sessionOf(tabId, frameId) {
    return this._tabs.get(tabId)?.get(frameId);
  }

  /** The tab's debugger session ended: its child sessions with it. */
  detached(tabId) {
    this._tabs.delete(tabId);
  }
}
