// `code_execution` (issue 27) through `mcp-relay bridge --code-execution` with the official MCP
// TypeScript SDK, as a host calls it, against a real browser on the fixture shop
// (tests/it/sdk_code_execution.rs). tests/mcp-python-client/code_execution.py does the same steps
// with the Python SDK and prints a report of the same shape.
//
// The plan file (JSON, written by the Rust test) holds the shop's URL, the two page functions
// the table is read with, and the scripts to run, in order, as [name, code] pairs. This client
// runs each script as one code_execution call (each of plan.playwright as one
// browser_run_code_unsafe call), and reads the same table with single calls
// (browser_navigate and browser_evaluate, as a model would) to compare.
//
// Usage: node code-execution.mjs <plan.json> <command> [args...]
//    or: node code-execution.mjs <plan.json> --http <the relay's /mcp URL>
// MCP_RELAY_TOKEN is passed through to the bridge (or sent as the bearer token over HTTP).
// Prints one JSON report as its last line.

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [planFile, command, ...args] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planFile, "utf8"));
const token = process.env.MCP_RELAY_TOKEN;
const env = { ...getDefaultEnvironment(), MCP_RELAY_TOKEN: token };
const client = new Client({ name: "Script Host", version: "1.0.0" });
await client.connect(command === "--http"
  ? new StreamableHTTPClientTransport(new URL(args[0]), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
  : new StdioClientTransport({ command, args, env, stderr: "inherit" }));

const text = (result) => result.content.map((c) => c.text ?? "").join("\n");
const call = async (name, args) => {
  // A script may take up to the bridge's wall-time bound: longer than the SDK's 60 s default.
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  return { isError: result.isError ?? false, text: text(result), structured: result.structuredContent ?? null };
};
const report = { runs: {} };

try {
  report.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  for (const [name, code] of plan.scripts) {
    report.runs[name] = await call("code_execution", { code });
  }
  // Playwright code, as Playwright MCP's browser_run_code_unsafe takes it.
  for (const [name, code] of plan.playwright ?? []) {
    report.runs[name] = await call("browser_run_code_unsafe", { code });
  }
  // The same table, one call at a time.
  const single = async (name, args) => {
    const result = await call(name, args);
    if (result.isError) throw new Error(`${name}: ${result.text}`);
    return result;
  };
  await single("browser_navigate", { url: plan.shop });
  const links = JSON.parse((await single("browser_evaluate", { function: plan.links })).text);
  report.single = [];
  for (const url of links) {
    await single("browser_navigate", { url });
    const product = JSON.parse((await single("browser_evaluate", { function: plan.product })).text);
    report.single.push({ url, ...product });
  }
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
