"""Checkout with "ask before submitting forms / purchases" on, through `mcp-relay bridge` with the
official MCP Python SDK (issue 29). The Rust test (tests/it/browser_person.rs) is the person: it
clicks Allow for the first order and Deny for the second, in the extension's popup. The same
steps as tests/mcp-sdk-client/ask-before.mjs, and a report of the same shape.

Usage: python ask_before.py <checkout page URL> <command> [args...]
MCP_RELAY_TOKEN is passed through to the bridge. Prints one JSON report as its last line.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client


def text(result) -> str:
    return "\n".join(getattr(c, "text", "") or "" for c in result.content)


async def main(checkout_url: str, command: str, args: list[str]) -> dict:
    env = {name: os.environ[name] for name in ("MCP_RELAY_TOKEN", "MCP_RELAY_LOG", "PATH") if name in os.environ}
    params = StdioServerParameters(command=command, args=args, env=env)
    report: dict = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, client_info=Implementation(name="Shopping Assistant", version="1.0.0"),
        ) as session:
            await session.initialize()

            async def call(name: str, arguments: dict):
                # The click waits for the person (at most 40 s in the extension).
                return await session.call_tool(name, arguments, read_timeout_seconds=60)

            async def title() -> str:
                return text(await call("browser_evaluate", {"function": "() => document.title"}))

            assert not (await call("browser_navigate", {"url": checkout_url})).is_error
            # Filling fields and a button that submits nothing are not asked about.
            typed = await call("browser_type", {"target": "#name", "text": "Ada Lovelace"})
            coupon = await call("browser_click", {"target": "#coupon"})
            report["unasked"] = {"typed": not typed.is_error, "coupon": not coupon.is_error}

            # The person allows the first order: the click waits, then goes through.
            allowed = await call("browser_click", {"target": "#place-order"})
            report["allowed"] = {"isError": bool(allowed.is_error), "text": text(allowed), "title": await title()}

            # The second order is denied: nothing happens, and the assistant is told not to retry.
            assert not (await call("browser_navigate", {"url": checkout_url})).is_error
            denied = await call("browser_click", {"target": "#place-order"})
            retried = await call("browser_click", {"target": "#place-order"})
            report["denied"] = {
                "isError": bool(denied.is_error),
                "text": text(denied),
                "retry": {"isError": bool(retried.is_error), "text": text(retried)},
                "title": await title(),
            }
    return report


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print("usage: python ask_before.py <checkout page URL> <command> [args...]", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))))
