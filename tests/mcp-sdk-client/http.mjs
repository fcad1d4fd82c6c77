// Drives the relay's MCP Streamable HTTP endpoint (`/mcp`) with the official MCP TypeScript
// SDK's StreamableHTTPClientTransport, as a remote-server host does: the 401 challenge and the
// protected resource metadata it points at, initialize with a bearer token, tools/list, a tool
// call answered by the test's scripted extension, and session end (DELETE). Prints one JSON
// report; exits non-zero on failure.
//
// Usage: node http.mjs <url of /mcp> (tests/it/mcp_http.rs runs it). MCP_RELAY_TOKEN holds the
// MCP token.

import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);
const token = process.env.MCP_RELAY_TOKEN;
if (!url || !token) {
  console.error("usage: MCP_RELAY_TOKEN=… node http.mjs <url>");
  process.exit(2);
}

// Without a token: 401, and the challenge names the metadata document.
const anonymous = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }),
});
assert.equal(anonymous.status, 401);
const challenge = anonymous.headers.get("www-authenticate") ?? "";
const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
assert.ok(metadataUrl, challenge);
const metadata = await (await fetch(metadataUrl)).json();

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "sdk-http-host", version: "1.0.0" });
try {
  await client.connect(transport);
  const sessionId = transport.sessionId;
  assert.ok(sessionId, "a session id");
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const snapshot = await client.callTool({ name: "browser_snapshot", arguments: {} });
  assert.notEqual(snapshot.isError, true, JSON.stringify(snapshot));
  // The answer's fields come as structuredContent beside the text a model reads.
  const answer = snapshot.structuredContent ?? JSON.parse(snapshot.content[0].text);

  await transport.terminateSession();
  const after = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
      "mcp-session-id": sessionId,
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
  });
  console.log(JSON.stringify({
    ok: true,
    server: client.getServerVersion()?.name,
    protocol: transport.protocolVersion,
    tools,
    answer,
    metadata,
    after_delete: after.status,
  }));
} finally {
  await client.close().catch(() => {});
}
