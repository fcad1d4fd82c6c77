// Measures one tool call as a host sees it, over the relay's Streamable HTTP endpoint and over
// `mcp-relay bridge` (stdio, then the bridge's WebSocket to the relay), in the same run against
// the same relay and browser, with the official TypeScript SDK's client for both. Calls
// alternate between the two transports so drift affects both alike. Prints one JSON report.
//
// Usage: node bench_http.mjs <url of /mcp> <calls> <command> [args...] (the bridge command;
// tests/it/mcp_http.rs runs it). MCP_RELAY_TOKEN holds the MCP token for both.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const [url, callsText, command, ...args] = process.argv.slice(2);
const token = process.env.MCP_RELAY_TOKEN;
const calls = Number(callsText);
assert.ok(url && calls > 0 && command && token, "usage: node bench_http.mjs <url> <calls> <command> [args...]");

const http = new Client({ name: "bench-http", version: "1.0.0" });
await http.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
const env = { ...getDefaultEnvironment(), MCP_RELAY_TOKEN: token };
const stdio = new Client({ name: "bench-bridge", version: "1.0.0" });
await stdio.connect(new StdioClientTransport({ command, args, env, stderr: "ignore" }));

async function once(client) {
  const start = process.hrtime.bigint();
  const result = await client.callTool({ name: "browser_snapshot", arguments: {} });
  const micros = Number(process.hrtime.bigint() - start) / 1000;
  assert.notEqual(result.isError, true, JSON.stringify(result));
  return micros;
}

// Warm up both (connections, the browser connection, JIT).
for (let i = 0; i < 50; i++) {
  await once(http);
  await once(stdio);
}
const times = { http: [], bridge: [] };
for (let i = 0; i < calls; i++) {
  times.http.push(await once(http));
  times.bridge.push(await once(stdio));
}
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
const summary = (list) => {
  const sorted = [...list].sort((a, b) => a - b);
  return {
    p50_us: Math.round(percentile(sorted, 0.5)),
    p99_us: Math.round(percentile(sorted, 0.99)),
    max_us: Math.round(sorted[sorted.length - 1]),
  };
};
console.log(JSON.stringify({ calls, http: summary(times.http), bridge: summary(times.bridge) }));
await http.close();
await stdio.close();
