"""What the SDK test hosts of this folder share: how they reach the server (the bridge over
stdio, or the relay's /mcp over HTTP) and how they report a tool's result to the Rust test."""

import contextlib
import os

from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


@contextlib.asynccontextmanager
async def connection(command: str, args: list[str]):
    """The streams to the server: `command args` (the bridge) over stdio, or, with command
    `--http`, the relay's /mcp at args[0] with MCP_RELAY_TOKEN as the bearer token."""
    if command == "--http":
        token = os.environ["MCP_RELAY_TOKEN"]
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            async with streamable_http_client(args[0], http_client=http) as streams:
                yield streams[0], streams[1]
        return
    env = {name: os.environ[name] for name in ("MCP_RELAY_TOKEN", "MCP_RELAY_LOG", "PATH") if name in os.environ}
    async with stdio_client(StdioServerParameters(command=command, args=args, env=env)) as (read, write):
        yield read, write


def report_of(result) -> dict:
    """A tool's result as the Rust test reads it: error or not, its text, its fields."""
    return {
        "isError": bool(result.is_error),
        "text": "\n".join(getattr(c, "text", "") or "" for c in result.content),
        "structured": result.structured_content,
    }
