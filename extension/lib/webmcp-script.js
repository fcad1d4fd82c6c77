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
 * then on so the message of an exception it throws can be told to the agent. The wrapper
 * passes arguments and results through untouched.
 */
export const WEBMCP_SCRIPT = `(() => {
  const key = Symbol.for(${JSON.stringify(PAGE_KEY)});
  const context = navigator.modelContext;
  if (!context || Object.prototype.hasOwnProperty.call(window, key)) return;
  const state = { errors: Object.create(null) };
  Object.defineProperty(window, key, { value: state });
  const register = context.registerTool;
  context.registerTool = function registerTool(tool, ...rest) {
    const execute = tool && tool.execute;
    if (typeof execute === 'function') {
      const name = String(tool.name);
      tool = { ...tool, execute: async function (input, client, ...rest) {
        // Where the person asked to approve consequential steps, a call from the extension
        // (which has no client to pass) gets one whose requestUserInteraction waits for the
        // person's Allow in the popup before the page's callback runs (webmcp.js).
        let given = client;
        if (state.askPerson && !(client && typeof client.requestUserInteraction === 'function')) {
          given = { requestUserInteraction: callback => new Promise((resolve, reject) => {
            state.interaction = {
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
  navigator.modelContextTesting?.addEventListener?.('toolchange', tell);
})()`;
