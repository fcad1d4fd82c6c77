// The steps that wait for the person's word beyond clicks (issue 29), through `mcp-relay bridge`
// with the official MCP TypeScript SDK: a form fill after which the page submits its form, and a
// page's own tool (WebMCP) that asks for the person with requestUserInteraction. The Rust test
// (tests/it/browser_person.rs) is the person: Allow, Deny, Allow (then Yes in the page), Deny,
// in the extension's popup. tests/mcp-python-client/consequential.py takes the same steps.
//
// Usage: node consequential.mjs <delivery.html URL> <webmcp-person.html URL> <command> [args...]
// MCP_RELAY_TOKEN is passed through to the bridge. Prints one JSON report as its last line.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const [deliveryUrl, bookingUrl, command, ...args] = process.argv.slice(2);
const env = { ...getDefaultEnvironment(), MCP_RELAY_TOKEN: process.env.MCP_RELAY_TOKEN };
const client = new Client({ name: "Errand Assistant", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, env, stderr: "inherit" }));

const text = (result) => result.content.map((c) => c.text ?? "").join("\n");
const call = async (name, args) => {
  const result = await client.callTool({ name, arguments: args });
  return { isError: result.isError ?? false, text: text(result), structured: result.structuredContent ?? null };
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fill = (name, type, target, value) => call("browser_fill_form", { fields: [{ name, type, target, value }] });
const read = async (fn) => (await call("browser_evaluate", { function: fn })).text;
const until = async (fn, wanted) => {
  const deadline = Date.now() + 15_000;
  let seen;
  do {
    seen = await read(fn);
    if (seen === wanted) break;
    await sleep(200);
  } while (Date.now() < deadline);
  return seen;
};
const report = {};

try {
  assert.ok(!(await call("browser_navigate", { url: deliveryUrl })).isError);
  // A box that submits nothing: not asked about.
  report.gift = await fill("Gift wrap", "checkbox", "#gift", "true");
  // The page submits as the express box changes: the person allows it.
  report.express = await fill("Express", "checkbox", "#express", "true");
  report.expressStatus = await until("() => document.getElementById('status').textContent", "Delivery to anywhere, express");
  // The page submits as the country changes: the person denies it; the retry is not asked.
  assert.ok(!(await call("browser_navigate", { url: deliveryUrl })).isError);
  report.country = await fill("Country", "combobox", "#country", "Germany");
  report.countryRetry = await fill("Country", "combobox", "#country", "Germany");
  report.countryAfter = await read("() => document.getElementById('country').value + ' ' + document.title");

  // A page's own tool that asks for the person: allowed (they answer the page), then denied.
  assert.ok(!(await call("browser_navigate", { url: bookingUrl })).isError);
  const deadline = Date.now() + 15_000;
  while (!(await call("browser_page_tools", {})).text.includes("name: book_table") && Date.now() < deadline)
    await sleep(200);
  report.booked = await call("browser_call_page_tool", { name: "book_table", arguments: { party: 2 } });
  report.bookingDenied = await call("browser_call_page_tool", { name: "book_table", arguments: { party: 3 } });
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
