// A page's own tools (WebMCP, issue 26) through `mcp-relay bridge --tools all` with the official
// MCP TypeScript SDK, as a host drives them, against a real Chromium launched with the WebMCP
// features (tests/it/sdk_page_tools.rs). tests/mcp-python-client/page_tools.py does the same
// steps with the Python SDK and prints a report of the same shape, so one Rust check reads both.
//
// The page's tools are reached through the bridge's two fixed tools, browser_page_tools and
// browser_call_page_tool (docs/BRIDGE.md, "A page's own tools"): the host's tool list never
// changes with the page, so the report also counts notifications/tools/list_changed (none).
//
// Usage: node page-tools.mjs <webmcp.html URL> <the same page on a blocked site> <command> [args...]
//    or: node page-tools.mjs <webmcp.html URL> <blocked URL> --http <the relay's /mcp URL>
// MCP_RELAY_TOKEN is passed through to the bridge (or sent as the bearer token over HTTP).
// Prints one JSON report as its last line.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [pageUrl, blockedUrl, command, ...args] = process.argv.slice(2);
const token = process.env.MCP_RELAY_TOKEN;
const client = new Client({ name: "Page Tools Host", version: "1.0.0" });
let listChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged += 1; });
await client.connect(command === "--http"
  ? new StreamableHTTPClientTransport(new URL(args[0]), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
  : new StdioClientTransport({ command, args, env: { ...getDefaultEnvironment(), MCP_RELAY_TOKEN: token }, stderr: "inherit" }));

const text = (result) => result.content.map((c) => c.text ?? "").join("\n");
const call = async (name, args) => {
  const result = await client.callTool({ name, arguments: args });
  return { isError: result.isError ?? false, text: text(result), structured: result.structuredContent ?? null };
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// Polls browser_page_tools until `done` holds (the page and its frame register as they load).
const pageToolsUntil = async (done, args = {}, seconds = 30) => {
  const deadline = Date.now() + seconds * 1000;
  let listed;
  do {
    listed = await call("browser_page_tools", args);
    if (done(listed)) return listed;
    await sleep(200);
  } while (Date.now() < deadline);
  return listed;
};
const toolNames = async () => (await client.listTools()).tools.map((t) => t.name).sort();
const report = {};

try {
  const { tools } = await client.listTools();
  report.toolsBefore = tools.map((t) => t.name).sort();
  const hints = (name) => tools.find((t) => t.name === name)?.annotations ?? null;
  report.hints = { list: hints("browser_page_tools"), call: hints("browser_call_page_tool") };

  report.opened = await call("browser_navigate", { url: pageUrl });
  // Appear: the page's script tools, its forms and the same-origin frame's tool.
  // Chromium 156 now and then (about 1 load in 100 under CPU load, also with a plain CDP
  // client that enables Page, Runtime and Network, never without; far more often when the
  // machine is saturated) leaves a same-origin frame's modelContext stuck: its tool never
  // registers. A person would reload; so does this script, up to three times, and says so.
  const frameTool = (l) => l.text.includes("name: recommend");
  report.listed = await pageToolsUntil(frameTool, {}, 10);
  report.reloadsForFrame = 0;
  while (!frameTool(report.listed) && report.reloadsForFrame < 3) {
    report.reloadsForFrame += 1;
    console.error(`the frame's tool did not register; reloading the page (${report.reloadsForFrame})`);
    await call("browser_navigate", { url: pageUrl });
    report.listed = await pageToolsUntil(frameTool, {}, 10);
  }

  report.added = await call("browser_call_page_tool", { name: "add_to_cart", arguments: { sku: "A1", qty: 2 } });
  report.violation = await call("browser_call_page_tool", { name: "add_to_cart", arguments: { sku: "a-1", qty: 0 } });
  report.threw = await call("browser_call_page_tool", { name: "check_stock", arguments: { sku: "A1" } });
  // It asks for the person: shown in the extension's popup, where the Rust test (the person) denies it.
  report.needsPerson = await call("browser_call_page_tool", { name: "confirm_purchase", arguments: {} });
  report.cart = await call("browser_evaluate", { function: "() => document.getElementById('cart').textContent" });

  // Retrieval and the proxy tool see them too.
  report.retrieved = await call("retrieve_tools", { query: "add an item to the cart", limit: 5 });
  report.viaProxy = await call("proxy", {
    action: "call", type: "tool", path: "browser_call_page_tool",
    args: { name: "search_shop", arguments: { q: "oolong-sampler" } },
  });

  // The page's app replaces one tool and unregisters another.
  await call("browser_evaluate", { function: "() => { replaceCartTool(); unregister('check_stock'); return true; }" });
  report.replaced = await pageToolsUntil((l) => !l.text.includes("name: check_stock"));
  report.v2 = await call("browser_call_page_tool", { name: "add_to_cart", arguments: { sku: "C3", note: "gold-wrapping-paper" } });
  report.gone = await call("browser_call_page_tool", { name: "check_stock", arguments: {} });

  // Disappear: a tool that navigates away while it runs, then the next page has none.
  report.navigated = await call("browser_call_page_tool", { name: "go_elsewhere", arguments: {} });
  report.afterNavigation = await pageToolsUntil((l) => l.text.includes("page1.html"));

  // A blocked site: the same page under a host the owner put off limits.
  report.blocked = {
    navigate: await call("browser_navigate", { url: blockedUrl }),
    newTab: await call("browser_tabs", { action: "new", url: blockedUrl }),
  };
  // The page itself goes there (a link, a script): the tab is taken back, its tools never listed.
  await call("browser_evaluate", { function: `() => { location.href = ${JSON.stringify(blockedUrl)}; return true; }` });
  report.blocked.listing = await pageToolsUntil((l) => l.isError);
  report.blocked.call = await call("browser_call_page_tool", { name: "add_to_cart", arguments: { sku: "A1", qty: 1 } });

  report.toolsAfter = await toolNames();
  report.listChanged = listChanged;
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
