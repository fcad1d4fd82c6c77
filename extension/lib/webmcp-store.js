/**
 * The per-tab record of the CDP `WebMCP` events (webmcp.js): which tools each attached tab's
 * pages registered, in which frame, and the page's answers to recent calls. Fed from
 * `chrome.debugger.onEvent` like page-events.js; forgets a tab's tools when its main frame
 * shows a new document. Pure: Node tests it directly.
 */

/** Responses kept per tab for the error of a call that failed. */
const RESPONSES_KEPT = 20;

/**
 * @typedef {object} CdpTool what `WebMCP.toolsAdded` says of a tool
 * @property {string} name
 * @property {string} description
 * @property {object} [inputSchema]
 * @property {{readOnly?: boolean, autosubmit?: boolean}} [annotations]
 * @property {string} frameId
 * @property {number} [backendNodeId] set for a form's (declarative) tool
 */

/** Per-tab record of the CDP `WebMCP` events; fed from chrome.debugger.onEvent. */
export class WebMcpTools {
  constructor() {
    /** @type {Map<number, Map<string, CdpTool>>} tab → "frameId name" → tool */
    this._tools = new Map();
    /** @type {Map<number, {invoked: Map<string, string>, responded: Map<string, any>}>} */
    this._calls = new Map();
    /** @type {Map<number, string>} tab → main frame id */
    this._mainFrame = new Map();
  }

  /** @param {{tabId?: number, sessionId?: string}} source @param {string} method @param {any} params */
  handle(source, method, params) {
    if (source?.tabId === undefined || source.sessionId)
      return;
    const tabId = source.tabId;
    switch (method) {
      case 'WebMCP.toolsAdded': {
        const tools = this._tools.get(tabId) ?? new Map();
        for (const tool of Array.isArray(params?.tools) ? params.tools : []) {
          if (typeof tool?.name === 'string')
            tools.set(`${tool.frameId} ${tool.name}`, tool);
        }
        this._tools.set(tabId, tools);
        return;
      }
      case 'WebMCP.toolsRemoved':
        for (const tool of Array.isArray(params?.tools) ? params.tools : [])
          this._tools.get(tabId)?.delete(`${tool?.frameId} ${tool?.name}`);
        return;
      case 'WebMCP.toolInvoked': {
        const calls = this._callsOf(tabId);
        calls.invoked.set(params.toolName, params.invocationId);
        return;
      }
      case 'WebMCP.toolResponded': {
        const calls = this._callsOf(tabId);
        calls.responded.set(params.invocationId, params);
        while (calls.responded.size > RESPONSES_KEPT)
          calls.responded.delete(calls.responded.keys().next().value);
        return;
      }
      case 'Page.frameNavigated': {
        const frame = params?.frame;
        if (!frame)
          return;
        if (!frame.parentId) {
          // A new document in the main frame: every tool of the old one is gone.
          this._mainFrame.set(tabId, frame.id);
          this.forget(tabId, { keepMainFrame: true });
        } else {
          for (const key of [...(this._tools.get(tabId)?.keys() ?? [])]) {
            if (key.startsWith(`${frame.id} `))
              this._tools.get(tabId)?.delete(key);
          }
        }
        return;
      }
      default:
    }
  }

  /** @param {number} tabId */
  _callsOf(tabId) {
    let calls = this._calls.get(tabId);
    if (!calls) {
      calls = { invoked: new Map(), responded: new Map() };
      this._calls.set(tabId, calls);
    }
    return calls;
  }

  /** The tools the CDP events reported for the tab, in registration order. @param {number} tabId @returns {CdpTool[]} */
  tools(tabId) {
    return [...(this._tools.get(tabId)?.values() ?? [])];
  }

  /** The CDP record of a tool, by name (main frame first). @param {number} tabId @param {string} name */
  find(tabId, name) {
    const main = this._mainFrame.get(tabId);
    const named = this.tools(tabId).filter(tool => tool.name === name);
    return named.find(tool => tool.frameId === main) ?? named[0];
  }

  /** The page's answer to the latest call of `name`, when the events reported it. @param {number} tabId @param {string} name */
  lastResponse(tabId, name) {
    const calls = this._calls.get(tabId);
    const invocation = calls?.invoked.get(name);
    return invocation === undefined ? undefined : calls?.responded.get(invocation);
  }

  /** @param {number} tabId @param {{keepMainFrame?: boolean}} [options] */
  forget(tabId, { keepMainFrame = false } = {}) {
    this._tools.delete(tabId);
    this._calls.delete(tabId);
    if (!keepMainFrame)
      this._mainFrame.delete(tabId);
  }
}

