"""Drives the relay's MCP Streamable HTTP endpoint (`/mcp`) with the official MCP Python SDK's
Streamable HTTP client, as a remote-server host does: the 401 challenge and the protected
resource metadata, initialize with a bearer token, tools/list, a tool call answered by the
test's scripted extension, and session end (the client's DELETE on exit). Prints one JSON
report; exits non-zero on failure.

Usage: python http_client.py <url of /mcp> (tests/mcp_http.rs runs it). MCP_RELAY_TOKEN holds
the MCP token.
"""

import asyncio
import json
import logging
import os
import re
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ACCEPT = "application/json, text/event-stream"


class Warnings(logging.Handler):
    """What the SDK's client logs at WARNING or above (e.g. "Session termination failed")."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


async def main(url: str, token: str) -> dict:
    warnings = Warnings()
    logging.getLogger("mcp").addHandler(warnings)
    async with httpx2.AsyncClient() as raw:
        anonymous = await raw.post(
            url,
            headers={"content-type": "application/json", "accept": ACCEPT},
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        )
        assert anonymous.status_code == 401, anonymous
        found = re.search(r'resource_metadata="([^"]+)"', anonymous.headers.get("www-authenticate", ""))
        assert found, anonymous.headers
        metadata = (await raw.get(found.group(1))).json()

    seen = []

    async def record(response):
        seen.append((response.request.method, response.status_code, response.headers.get("mcp-session-id")))

    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        http.event_hooks = {"request": [], "response": [record]}
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                snapshot = await session.call_tool("browser_snapshot", {})
                assert not snapshot.is_error, snapshot
                # The answer's fields come as structuredContent beside the text a model reads.
                answer = snapshot.structured_content or json.loads(snapshot.content[0].text)
        session_id = next(sid for _, _, sid in seen if sid)
        deletes = [status for method, status, _ in seen if method == "DELETE"]
    # Leaving the transport sent DELETE: the session is gone. Asked on a connection of its own,
    # so the answer is about the session, not about reusing the transport's pooled connections.
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as fresh:
        after = (
            await fresh.post(
                url,
                headers={
                    "content-type": "application/json",
                    "accept": ACCEPT,
                    "mcp-session-id": session_id,
                    "mcp-protocol-version": "2025-06-18",
                },
                json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
            )
        ).status_code

    return {
        "ok": True,
        "server": init.server_info.name,
        "tools": tools,
        "answer": answer,
        "metadata": metadata,
        "deletes": deletes,
        "warnings": warnings.messages,
        "after_delete": after,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], os.environ["MCP_RELAY_TOKEN"]))))
