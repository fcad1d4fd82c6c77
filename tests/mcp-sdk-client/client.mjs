// Drives `mcp-relay bridge` with the official MCP TypeScript SDK, the way MCP hosts do:
// spawn it, initialize, list the tools, call one. Exits non-zero on any failure.
//
// Usage: node client.mjs <command> [args...]
//   e.g. node client.mjs target/debug/mcp-relay bridge --relay ws://127.0.0.1:8080/mcp
// The command can also come from MCP_BRIDGE_COMMAND (and MCP_BRIDGE_ARGS, JSON array).
// MCP_RELAY_TOKEN is passed through to the bridge. tests/it/bridge.rs runs this against a relay
// and a fake extension that echoes every command.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.length > 2
  ? process.argv.slice(2)
  : [process.env.MCP_BRIDGE_COMMAND, ...JSON.parse(process.env.MCP_BRIDGE_ARGS ?? "[]")];
if (!command) {
  console.error("usage: node client.mjs <command> [args...] (or set MCP_BRIDGE_COMMAND)");
  process.exit(2);
}

const env = { ...getDefaultEnvironment() };
for (const name of ["MCP_RELAY_TOKEN", "MCP_RELAY_LOG"]) {
  if (process.env[name]) env[name] = process.env[name];
}

const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });
const client = new Client({ name: "mcp-relay-sdk-test", version: "1.0.0" });

try {
  await client.connect(transport);
  const server = client.getServerVersion();
  assert.equal(server?.name, "mcp-relay", "server name");
  assert.ok(client.getServerCapabilities()?.tools, "tools capability");

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, [
    "browser_call_page_tool", "browser_cdp", "browser_click", "browser_close", "browser_connect",
    "browser_console_messages", "browser_downloads", "browser_drag", "browser_drop",
    "browser_emulate_media", "browser_evaluate", "browser_file_upload",
    "browser_fill_form", "browser_find", "browser_handle_dialog", "browser_hover", "browser_list",
    "browser_navigate", "browser_navigate_back", "browser_navigate_forward",
    "browser_network_request", "browser_network_requests", "browser_page_tools", "browser_pdf_save",
    "browser_press_key",
    "browser_request_human", "browser_resize",
    "browser_screenshot", "browser_select_option", "browser_snapshot", "browser_status",
    "browser_tabs", "browser_take_screenshot", "browser_type", "browser_wait_for",
  ]);
  for (const tool of tools) {
    assert.ok(tool.title, `${tool.name} has a title`);
    assert.equal(tool.inputSchema.type, "object", `${tool.name} schema`);
    for (const hint of ["readOnlyHint", "destructiveHint", "openWorldHint"]) {
      assert.equal(typeof tool.annotations?.[hint], "boolean", `${tool.name} ${hint}`);
    }
    // idempotentHint means something only beside readOnlyHint false and defaults to false:
    // sent as true, or not at all.
    const idempotent = tool.annotations?.idempotentHint;
    assert.ok(idempotent === undefined || (idempotent === true && tool.annotations.readOnlyHint === false),
        `${tool.name} idempotentHint ${idempotent}`);
  }

  const result = await client.callTool({
    name: "browser_evaluate",
    arguments: { expression: "document.title" },
  });
  assert.notEqual(result.isError, true, `browser_evaluate failed: ${JSON.stringify(result)}`);
  assert.equal(result.content[0].type, "text");
  // The answer's fields come as structuredContent beside the text a model reads.
  const answer = result.structuredContent ?? JSON.parse(result.content[0].text);

  console.log(JSON.stringify({
    ok: true,
    server: server.name,
    tools: names.length,
    answer,
  }));
  await client.close();
} catch (error) {
  console.error(`mcp-sdk-client: ${error.stack ?? error}`);
  await client.close().catch(() => {});
  process.exit(1);
}
