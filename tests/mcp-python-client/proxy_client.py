"""Drives `mcp-relay bridge --tools all` with the official MCP Python SDK (`mcp` on PyPI).

The Python SDK validates every result against the MCP schema and keeps only the annotation
keys the schema defines, so the proxy tool's metadata must survive in `_meta`. This prints one
JSON report of what this strict client really saw; it exits non-zero on any failure.

Usage: python proxy_client.py <command> [args...] (tests/bridge_proxy.rs runs it with a relay
and an echoing fake extension). MCP_RELAY_TOKEN is passed through to the bridge.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(command: str, args: list[str]) -> dict:
    env = {name: os.environ[name] for name in ("MCP_RELAY_TOKEN", "MCP_RELAY_LOG", "PATH") if name in os.environ}
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]

            listed = await session.call_tool(
                "proxy", {"action": "list", "type": "tool", "filter_server": "browser_", "limit": 3}
            )
            assert not listed.is_error, listed
            item = listed.content[0]
            assert item.type == "resource", item

            called = await session.call_tool(
                "proxy",
                {"action": "call", "type": "tool", "path": "browser_evaluate",
                 "args": json.dumps({"expression": "document.title"})},
            )
            assert not called.is_error, called

            refused = await session.call_tool("proxy", {"action": "list", "type": "tool", "path": "x"})

            return {
                "ok": True,
                "server": init.server_info.name,
                "tools": tools,
                "listed": [tool["name"] for tool in json.loads(item.resource.text)],
                "annotations": item.annotations.model_dump(exclude_none=True) if item.annotations else None,
                "meta": item.meta,
                "call_meta": called.content[0].meta,
                "answer": json.loads(called.content[0].text),
                "refused": {"is_error": refused.is_error, "text": refused.content[0].text},
            }


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python proxy_client.py <command> [args...]", file=sys.stderr)
        sys.exit(2)
    report = asyncio.run(main(sys.argv[1], sys.argv[2:]))
    print(json.dumps(report))
