// Checkout with "ask before submitting forms / purchases" on, through `mcp-relay bridge` with the
// official MCP TypeScript SDK (issue 29). The Rust test (tests/it/browser_person.rs) is the person:
// it clicks Allow for the first order and Deny for the second, in the extension's popup.
//
// Usage: node ask-before.mjs <checkout page URL> <command> [args...]
// MCP_RELAY_TOKEN is passed through to the bridge. Prints one JSON report as its last line.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const [checkoutUrl, command, ...args] = process.argv.slice(2);
const env = { ...getDefaultEnvironment(), MCP_RELAY_TOKEN: process.env.MCP_RELAY_TOKEN };
const client = new Client({ name: "Shopping Assistant", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, env, stderr: "inherit" }));

const text = (result) => result.content.map((c) => c.text ?? "").join("\n");
const call = (name, args) => client.callTool({ name, arguments: args });
const title = async () => text(await call("browser_evaluate", { function: "() => document.title" }));
const report = {};

try {
  assert.ok(!(await call("browser_navigate", { url: checkoutUrl })).isError);
  // Filling fields and a button that submits nothing are not asked about.
  const typed = await call("browser_type", { target: "#name", text: "Ada Lovelace" });
  const coupon = await call("browser_click", { target: "#coupon" });
  report.unasked = { typed: !typed.isError, coupon: !coupon.isError };

  // The person allows the first order: the click waits, then goes through.
  const allowed = await call("browser_click", { target: "#place-order" });
  report.allowed = { isError: allowed.isError ?? false, text: text(allowed), title: await title() };

  // The second order is denied: nothing happens, and the assistant is told not to retry.
  assert.ok(!(await call("browser_navigate", { url: checkoutUrl })).isError);
  const denied = await call("browser_click", { target: "#place-order" });
  const retried = await call("browser_click", { target: "#place-order" });
  report.denied = {
    isError: denied.isError ?? false,
    text: text(denied),
    retry: { isError: retried.isError ?? false, text: text(retried) },
    title: await title(),
  };
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
