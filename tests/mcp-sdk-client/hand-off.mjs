// Hands steps to the person through `mcp-relay bridge` with the official MCP TypeScript SDK, as
// a host does (issue 29), against a real browser whose person the Rust test plays
// (tests/it/browser_person.rs): it signs in on the login page and clicks Done, then Cancel, in the
// extension's popup.
//
// The host here gives up on a request after HOST_TIMEOUT_MS unless progress arrives (the SDK's
// `timeout` with `resetTimeoutOnProgress`, as hosts with a 60 s timeout do, scaled down); the
// bridge runs with a short --progress-interval, and the person takes longer than the timeout.
//
// Usage: node hand-off.mjs <login page URL> <command> [args...]
// MCP_RELAY_TOKEN is passed through to the bridge. Prints one JSON report as its last line.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const HOST_TIMEOUT_MS = 3_000;
const [loginUrl, command, ...args] = process.argv.slice(2);
const env = { ...getDefaultEnvironment(), MCP_RELAY_TOKEN: process.env.MCP_RELAY_TOKEN };
const client = new Client({ name: "Hand-off Test Host", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, env, stderr: "inherit" }));

const text = (result) => result.content.map((c) => c.text ?? "").join("\n");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const report = {};

try {
  const opened = await client.callTool({ name: "browser_navigate", arguments: { url: loginUrl } });
  assert.ok(!opened.isError, text(opened));

  // 1. Sign-in: the call stays open while the person acts, kept alive by progress.
  const progress = [];
  const started = Date.now();
  const parked = client.callTool(
    { name: "browser_request_human", arguments: { reason: "Sign in to Example Bank", timeoutSeconds: 120 } },
    undefined,
    { timeout: HOST_TIMEOUT_MS, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p) },
  );
  await sleep(1_500);
  // Meanwhile the tab is the person's: another call on it is refused, naming the hand-off.
  const refused = await client.callTool({ name: "browser_snapshot", arguments: {} });
  const signedIn = await parked;
  report.signIn = {
    isError: signedIn.isError ?? false,
    text: text(signedIn),
    structured: signedIn.structuredContent,
    elapsedMs: Date.now() - started,
    progress: progress.length,
    lastProgress: progress.at(-1),
    progressIncreases: progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress),
    refusedMeanwhile: { isError: refused.isError ?? false, text: text(refused) },
  };

  // 2. The person cancels: the assistant is told the step was not done.
  const cancelled = await client.callTool(
    { name: "browser_request_human", arguments: { reason: "Approve the transfer on your phone", timeoutSeconds: 120 } },
    undefined,
    { timeout: HOST_TIMEOUT_MS, resetTimeoutOnProgress: true, onprogress: () => {} },
  );
  report.cancel = { isError: cancelled.isError ?? false, text: text(cancelled) };

  // 3. A host that does not reset its timeout on progress gives up and cancels the call: the
  // hand-off is withdrawn, and the tab is the assistant's again.
  let timedOut;
  try {
    await client.callTool(
      { name: "browser_request_human", arguments: { reason: "Nobody will answer this", timeoutSeconds: 120 } },
      undefined,
      { timeout: 2_000 },
    );
    timedOut = { gaveUp: false };
  } catch (error) {
    timedOut = { gaveUp: true, code: error.code, message: error.message };
  }
  const deadline = Date.now() + 5_000;
  let after;
  do {
    await sleep(200);
    after = await client.callTool({ name: "browser_snapshot", arguments: {} });
  } while (after.isError && Date.now() < deadline);
  report.hostGaveUp = { ...timedOut, tabFreedAfterwards: !after.isError, snapshot: text(after).slice(0, 200) };
} finally {
  await client.close();
}
console.log(JSON.stringify(report));
