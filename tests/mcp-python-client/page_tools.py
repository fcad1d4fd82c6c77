"""A page's own tools (WebMCP, issue 26) through `mcp-relay bridge --tools all` with the official
MCP Python SDK, as a host drives them, against a real Chromium launched with the WebMCP features.

The same steps as tests/mcp-sdk-client/page-tools.mjs, and a report of the same shape, so that
tests/it/sdk_page_tools.rs checks both SDKs with one function. The page's tools are reached through
the bridge's two fixed tools, browser_page_tools and browser_call_page_tool; the host's tool list
never changes with the page, so the report also counts notifications/tools/list_changed (none).

Usage: python page_tools.py <webmcp.html URL> <the same page on a blocked site> <command> [args...]
   or: python page_tools.py <webmcp.html URL> <blocked URL> --http <the relay's /mcp URL>
MCP_RELAY_TOKEN is passed through to the bridge (or sent as the bearer token over HTTP). Prints
one JSON report as its last line.
"""

import asyncio
import json
import sys
import time

import mcp_types
from mcp import ClientSession, Implementation

from hosts import connection, report_of


async def main(page_url: str, blocked_url: str, command: str, args: list[str]) -> dict:
    list_changed = 0

    async def on_message(message) -> None:
        nonlocal list_changed
        if isinstance(message, mcp_types.ToolListChangedNotification):
            list_changed += 1

    async with connection(command, args) as (read, write):
        async with ClientSession(
            read, write, message_handler=on_message,
            client_info=Implementation(name="Page Tools Host", version="1.0.0"),
        ) as session:
            await session.initialize()

            async def call(name: str, arguments: dict) -> dict:
                return report_of(await session.call_tool(name, arguments))

            async def page_tools_until(done, arguments=None, seconds=30) -> dict:
                deadline = time.monotonic() + seconds
                while True:
                    listed = await call("browser_page_tools", arguments or {})
                    if done(listed) or time.monotonic() > deadline:
                        return listed
                    await asyncio.sleep(0.2)

            async def tool_names() -> list[str]:
                return sorted(tool.name for tool in (await session.list_tools()).tools)

            report: dict = {}
            tools = (await session.list_tools()).tools
            report["toolsBefore"] = sorted(tool.name for tool in tools)

            def hints(name: str):
                tool = next((t for t in tools if t.name == name), None)
                if tool is None or tool.annotations is None:
                    return None
                return tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")

            report["hints"] = {"list": hints("browser_page_tools"), "call": hints("browser_call_page_tool")}

            report["opened"] = await call("browser_navigate", {"url": page_url})
            # Appear: the page's script tools, its forms and the same-origin frame's tool.
            # Chromium 156 now and then (about 1 load in 100 under CPU load, also with a plain
            # CDP client that enables Page, Runtime and Network, never without; far more often
            # when the machine is saturated) leaves a same-origin frame's modelContext stuck:
            # its tool never registers. A person would reload; so does this script, up to three
            # times, and says so.
            def frame_tool(listed):
                return "name: recommend" in listed["text"]

            report["listed"] = await page_tools_until(frame_tool, seconds=10)
            report["reloadsForFrame"] = 0
            while not frame_tool(report["listed"]) and report["reloadsForFrame"] < 3:
                report["reloadsForFrame"] += 1
                print(f"the frame's tool did not register; reloading the page ({report['reloadsForFrame']})",
                      file=sys.stderr)
                await call("browser_navigate", {"url": page_url})
                report["listed"] = await page_tools_until(frame_tool, seconds=10)

            report["added"] = await call(
                "browser_call_page_tool", {"name": "add_to_cart", "arguments": {"sku": "A1", "qty": 2}})
            report["violation"] = await call(
                "browser_call_page_tool", {"name": "add_to_cart", "arguments": {"sku": "a-1", "qty": 0}})
            report["threw"] = await call(
                "browser_call_page_tool", {"name": "check_stock", "arguments": {"sku": "A1"}})
            # It asks for the person: shown in the extension's popup, where the Rust test (the person)
            # denies it.
            report["needsPerson"] = await call(
                "browser_call_page_tool", {"name": "confirm_purchase", "arguments": {}})
            report["cart"] = await call(
                "browser_evaluate", {"function": "() => document.getElementById('cart').textContent"})

            # Retrieval and the proxy tool see them too.
            report["retrieved"] = await call("retrieve_tools", {"query": "add an item to the cart", "limit": 5})
            report["viaProxy"] = await call("proxy", {
                "action": "call", "type": "tool", "path": "browser_call_page_tool",
                "args": {"name": "search_shop", "arguments": {"q": "oolong-sampler"}},
            })

            # The page's app replaces one tool and unregisters another.
            await call("browser_evaluate",
                       {"function": "() => { replaceCartTool(); unregister('check_stock'); return true; }"})
            report["replaced"] = await page_tools_until(lambda l: "name: check_stock" not in l["text"])
            report["v2"] = await call(
                "browser_call_page_tool", {"name": "add_to_cart", "arguments": {"sku": "C3", "note": "gold-wrapping-paper"}})
            report["gone"] = await call("browser_call_page_tool", {"name": "check_stock", "arguments": {}})

            # Disappear: a tool that navigates away while it runs, then the next page has none.
            report["navigated"] = await call("browser_call_page_tool", {"name": "go_elsewhere", "arguments": {}})
            report["afterNavigation"] = await page_tools_until(lambda l: "page1.html" in l["text"])

            # A blocked site: the same page under a host the owner put off limits.
            report["blocked"] = {
                "navigate": await call("browser_navigate", {"url": blocked_url}),
                "newTab": await call("browser_tabs", {"action": "new", "url": blocked_url}),
            }
            # The page itself goes there (a link, a script): the tab is taken back, its tools never listed.
            await call("browser_evaluate",
                       {"function": f"() => {{ location.href = {json.dumps(blocked_url)}; return true; }}"})
            report["blocked"]["listing"] = await page_tools_until(lambda l: l["isError"])
            report["blocked"]["call"] = await call(
                "browser_call_page_tool", {"name": "add_to_cart", "arguments": {"sku": "A1", "qty": 1}})

            report["toolsAfter"] = await tool_names()
            report["listChanged"] = list_changed
            return report


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print("usage: python page_tools.py <page URL> <blocked URL> <command> [args...]", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))))
