"""`code_execution` (issue 27) through `mcp-relay bridge --code-execution` with the official MCP
Python SDK, as a host calls it, against a real browser on the fixture shop.

The same steps as tests/mcp-sdk-client/code-execution.mjs and a report of the same shape, so that
tests/it/sdk_code_execution.rs checks both SDKs with one function. The plan file (JSON, written by
the Rust test) holds the shop's URL, the two page functions the table is read with, and the
scripts to run, in order, as [name, code] pairs. This client runs each script as one
code_execution call (each of "playwright" as one browser_run_code_unsafe call), and reads the same table with single calls (browser_navigate and
browser_evaluate, as a model would) to compare.

Usage: python code_execution.py <plan.json> <command> [args...]
   or: python code_execution.py <plan.json> --http <the relay's /mcp URL>
MCP_RELAY_TOKEN is passed through to the bridge (or sent as the bearer token over HTTP). Prints
one JSON report as its last line.
"""

import asyncio
import json
import sys

from mcp import ClientSession, Implementation

from hosts import connection, report_of


async def main(plan_file: str, command: str, args: list[str]) -> dict:
    with open(plan_file, encoding="utf-8") as file:
        plan = json.load(file)
    async with connection(command, args) as (read, write):
        async with ClientSession(
            read, write, client_info=Implementation(name="Script Host", version="1.0.0"),
        ) as session:
            await session.initialize()

            async def call(name: str, arguments: dict) -> dict:
                # A script may take up to the bridge's wall-time bound.
                return report_of(await session.call_tool(name, arguments, read_timeout_seconds=120))

            async def single(name: str, arguments: dict) -> dict:
                result = await call(name, arguments)
                if result["isError"]:
                    raise RuntimeError(f"{name}: {result['text']}")
                return result

            report: dict = {"runs": {}}
            report["tools"] = sorted(tool.name for tool in (await session.list_tools()).tools)
            for name, code in plan["scripts"]:
                report["runs"][name] = await call("code_execution", {"code": code})
            # Playwright code, as Playwright MCP's browser_run_code_unsafe takes it.
            for name, code in plan.get("playwright", []):
                report["runs"][name] = await call("browser_run_code_unsafe", {"code": code})
            # The same table, one call at a time.
            await single("browser_navigate", {"url": plan["shop"]})
            links = json.loads((await single("browser_evaluate", {"function": plan["links"]}))["text"])
            report["single"] = []
            for url in links:
                await single("browser_navigate", {"url": url})
                product = json.loads((await single("browser_evaluate", {"function": plan["product"]}))["text"])
                report["single"].append({"url": url, **product})
            return report


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print("usage: python code_execution.py <plan.json> <command> [args...]", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))))
