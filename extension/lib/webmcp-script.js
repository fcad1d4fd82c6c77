/**
 * The part of WebMCP (webmcp.js) that runs in every agent document, injected by
 * debugger-sessions.js on attach: it tells the extension through a CDP binding when the page's
 * tools change, and keeps the message of an exception a tool threw. A module of its own so the
 * debugger sessions do not import the WebMCP commands (which import the command helpers, which
 * import the debugger sessions: a cycle).
 */

/** The CDP binding through which agent documents say their tools changed. */
export const WEBMCP_BINDING = '__mcpRelayPageToolsChanged';
/** Where WEBMCP_SCRIPT keeps what it knows in the page (a symbol: no page name collides). */
const PAGE_KEY = 'mcp-relay.webmcp';

/**
 * Run in each agent document (main frame and frames; on attach and in each new document):
 * calls the binding when the page's tools change, and wraps each tool the page registers from
 * then on so the message of an exception it throws can be told to the agent, and so a call
 * from the extension can ask for the person (below). The wrapper passes arguments and results
 * through untouched.
 *
 * The page API is `document.modelContext` in Chromium 156 and `navigator.modelContext` (with
 * `navigator.modelContextTesting` to list and call) in Chromium 148; whichever the document has.
 */
export const WEBMCP_SCRIPT = `(() => {
  const key = Symbol.for(${JSON.stringify(PAGE_KEY)});
  const context = document.modelContext ?? navigator.modelContext;
  if (!context || Object.prototype.hasOwnProperty.call(window, key)) return;
  // expected: tool name → ids of the extension's calls not yet started (webmcp.js queues one per
  // call); interactions: call id → the requestUserInteraction held for the person's answer.
  const state = { errors: Object.create(null), expected: Object.create(null), interactions: Object.create(null), calls: Object.create(null) };
  Object.defineProperty(window, key, { value: state });
  const register = context.registerTool;
  context.registerTool = function registerTool(tool, ...rest) {
    const execute = tool && tool.execute;
    if (typeof execute === 'function') {
      const name = String(tool.name);
      tool = { ...tool, execute: async function (input, client, ...rest) {
        // A call the extension made gets a client whose requestUserInteraction waits for the
        // person's Allow in the extension's popup before the page's callback runs (webmcp.js):
        // Chromium gives executeTool's callee none, and nobody may answer for the person. A
        // call from anyone else gets the client it was given.
        const callId = state.expected[name]?.shift();
        let given = client;
        if (callId !== undefined) {
          given = { ...(client ?? {}), requestUserInteraction: callback => new Promise((resolve, reject) => {
            state.interactions[callId] = {
              tool: name,
              grant: () => Promise.resolve().then(callback).then(resolve, reject),
              refuse: message => reject(new Error(message)),
            };
          }) };
        }
        try {
          return await execute.call(this, input, given, ...rest);
        } catch (error) {
          state.errors[name] = String((error && error.message !== undefined) ? (error.name ? error.name + ': ' : '') + error.message : error);
          throw error;
        }
      } };
    }
    return register.call(this, tool, ...rest);
  };
  const tell = () => { try { window[${JSON.stringify(WEBMCP_BINDING)}]?.('changed'); } catch {} };
  (document.modelContext ?? navigator.modelContextTesting)?.addEventListener?.('toolchange', tell);
})()`;
