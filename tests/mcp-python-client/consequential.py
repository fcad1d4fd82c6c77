"""The steps that wait for the person's word beyond clicks (issue 29), through `mcp-relay bridge`
with the official MCP Python SDK: a form fill after which the page submits its form, and a page's
own tool (WebMCP) that asks for the person with requestUserInteraction. The same steps as
tests/mcp-sdk-client/consequential.mjs and a report of the same shape; the Rust test
(tests/it/browser_person.rs) is the person.

Usage: python consequential.py <delivery.html URL> <webmcp-person.html URL> <command> [args...]
MCP_RELAY_TOKEN is passed through to the bridge. Prints one JSON report as its last line.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client

from hosts import report_of


async def main(delivery_url: str, booking_url: str, command: str, args: list[str]) -> dict:
    env = {name: os.environ[name] for name in ("MCP_RELAY_TOKEN", "MCP_RELAY_LOG", "PATH") if name in os.environ}
    params = StdioServerParameters(command=command, args=args, env=env)
    report: dict = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, client_info=Implementation(name="Errand Assistant", version="1.0.0"),
        ) as session:
            await session.initialize()

            async def call(name: str, arguments: dict) -> dict:
                # A step may wait for the person (at most 40 s in the extension).
                return report_of(await session.call_tool(name, arguments, read_timeout_seconds=60))

            async def fill(name: str, kind: str, target: str, value: str) -> dict:
                return await call("browser_fill_form",
                                  {"fields": [{"name": name, "type": kind, "target": target, "value": value}]})

            async def read_page(fn: str) -> str:
                return (await call("browser_evaluate", {"function": fn}))["text"]

            async def until(fn: str, wanted: str) -> str:
                deadline = time.monotonic() + 15
                while True:
                    seen = await read_page(fn)
                    if seen == wanted or time.monotonic() > deadline:
                        return seen
                    await asyncio.sleep(0.2)

            assert not (await call("browser_navigate", {"url": delivery_url}))["isError"]
            # A box that submits nothing: not asked about.
            report["gift"] = await fill("Gift wrap", "checkbox", "#gift", "true")
            # The page submits as the express box changes: the person allows it.
            report["express"] = await fill("Express", "checkbox", "#express", "true")
            report["expressStatus"] = await until(
                "() => document.getElementById('status').textContent", "Delivery to anywhere, express")
            # The page submits as the country changes: the person denies it; the retry is not asked.
            assert not (await call("browser_navigate", {"url": delivery_url}))["isError"]
            report["country"] = await fill("Country", "combobox", "#country", "Germany")
            report["countryRetry"] = await fill("Country", "combobox", "#country", "Germany")
            report["countryAfter"] = await read_page(
                "() => document.getElementById('country').value + ' ' + document.title")

            # A page's own tool that asks for the person: allowed (they answer the page), then denied.
            assert not (await call("browser_navigate", {"url": booking_url}))["isError"]
            deadline = time.monotonic() + 15
            while ("name: book_table" not in (await call("browser_page_tools", {}))["text"]
                   and time.monotonic() < deadline):
                await asyncio.sleep(0.2)
            report["booked"] = await call(
                "browser_call_page_tool", {"name": "book_table", "arguments": {"party": 2}})
            report["bookingDenied"] = await call(
                "browser_call_page_tool", {"name": "book_table", "arguments": {"party": 3}})
    return report


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print("usage: python consequential.py <delivery URL> <booking URL> <command> [args...]", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))))
