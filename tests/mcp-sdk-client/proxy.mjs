// Drives `mcp-relay bridge --tools all --dynamic 2` with the official MCP TypeScript SDK: the
// proxy tool's metadata as this strict client sees it, and `--dynamic` registration announced
// with notifications/tools/list_changed. Prints one JSON report; exits non-zero on failure.
//
// Usage: node proxy.mjs <command> [args...] (tests/it/bridge_proxy.rs runs it with a relay and an
// echoing fake extension). MCP_RELAY_TOKEN is passed through to the bridge.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node proxy.mjs <command> [args...]");
  process.exit(2);
}
const env = { ...getDefaultEnvironment() };
for (const name of ["MCP_RELAY_TOKEN", "MCP_RELAY_LOG"]) {
  if (process.env[name]) env[name] = process.env[name];
}
const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });
const client = new Client({ name: "mcp-relay-sdk-proxy-test", version: "1.0.0" });

let listChanged = 0;
let announced;
const changed = new Promise((resolve) => { announced = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged += 1;
  announced();
});

try {
  await client.connect(transport);
  assert.equal(client.getServerCapabilities()?.tools?.listChanged, true, "tools.listChanged");

  const list = await client.callTool({
    name: "proxy",
    arguments: { action: "list", type: "tool", filter_server: "browser_", limit: 3 },
  });
  assert.notEqual(list.isError, true, JSON.stringify(list));
  const item = list.content[0];
  assert.equal(item.type, "resource");
  const listed = JSON.parse(item.resource.text);

  const before = (await client.listTools()).tools.length;
  const found = await client.callTool({
    name: "retrieve_tools",
    arguments: { query: "get the document root node" },
  });
  const registered = JSON.parse(found.content[0].text).registered;
  let timer;
  await Promise.race([
    changed,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("no tools/list_changed")), 10000);
    }),
  ]);
  clearTimeout(timer);
  const after = (await client.listTools()).tools.map((t) => t.name);
  const called = await client.callTool({ name: "cdp_DOM_getDocument", arguments: { depth: 1 } });
  assert.notEqual(called.isError, true, JSON.stringify(called));

  console.log(JSON.stringify({
    ok: true,
    listed: listed.map((t) => t.name),
    annotations: item.annotations ?? null,
    meta: item._meta ?? null,
    before,
    registered,
    after,
    listChanged,
    answer: JSON.parse(called.content[0].text),
  }));
  await client.close();
} catch (error) {
  console.error(error);
  await client.close().catch(() => {});
  process.exit(1);
}
