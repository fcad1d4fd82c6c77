"""Hands steps to the person through `mcp-relay bridge` with the official MCP Python SDK, as a
host does (issue 29), against a real browser whose person the Rust test plays
(tests/it/browser_person.rs): it signs in on the login page and clicks Done, then Cancel, in the
extension's popup. The same steps as tests/mcp-sdk-client/hand-off.mjs, and a report of the same
shape.

The Python SDK's request timeout is a fixed clock (it has no "reset on progress" as the
TypeScript SDK's `resetTimeoutOnProgress`), so this host waits for the person with a 60 s timeout,
as hosts do, and records the progress notifications the bridge sends meanwhile; the third
request is given up after 2 s, which cancels it.

Usage: python hand_off.py <login page URL> <command> [args...]
MCP_RELAY_TOKEN is passed through to the bridge. Prints one JSON report as its last line.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

HOST_TIMEOUT_SECONDS = 60


def report_of(result) -> dict:
    return {
        "isError": bool(result.is_error),
        "text": "\n".join(getattr(c, "text", "") or "" for c in result.content),
    }


async def main(login_url: str, command: str, args: list[str]) -> dict:
    env = {name: os.environ[name] for name in ("MCP_RELAY_TOKEN", "MCP_RELAY_LOG", "PATH") if name in os.environ}
    params = StdioServerParameters(command=command, args=args, env=env)
    report: dict = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, client_info=Implementation(name="Hand-off Test Host", version="1.0.0"),
        ) as session:
            await session.initialize()
            opened = await session.call_tool("browser_navigate", {"url": login_url})
            assert not opened.is_error, opened

            # 1. Sign-in: the call stays open while the person acts; progress arrives meanwhile.
            progress: list[dict] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append({"progress": value, "total": total, "message": message})

            started = time.monotonic()
            parked = asyncio.create_task(session.call_tool(
                "browser_request_human",
                {"reason": "Sign in to Example Bank", "timeoutSeconds": 120},
                read_timeout_seconds=HOST_TIMEOUT_SECONDS,
                progress_callback=on_progress,
            ))
            await asyncio.sleep(1.5)
            # Meanwhile the tab is the person's: another call on it is refused, naming the hand-off.
            refused = await session.call_tool("browser_snapshot", {})
            signed_in = await parked
            report["signIn"] = {
                **report_of(signed_in),
                "structured": signed_in.structured_content,
                "elapsedMs": int((time.monotonic() - started) * 1000),
                "progress": len(progress),
                "lastProgress": progress[-1] if progress else None,
                "progressIncreases": all(
                    later["progress"] > earlier["progress"] for earlier, later in zip(progress, progress[1:])),
                "refusedMeanwhile": report_of(refused),
            }

            # 2. The person cancels: the assistant is told the step was not done.
            cancelled = await session.call_tool(
                "browser_request_human",
                {"reason": "Approve the transfer on your phone", "timeoutSeconds": 120},
                read_timeout_seconds=HOST_TIMEOUT_SECONDS,
                progress_callback=on_progress,
            )
            report["cancel"] = report_of(cancelled)

            # 3. A host that gives up after 2 s cancels the call: the hand-off is withdrawn, and the
            # tab is the assistant's again.
            try:
                await session.call_tool(
                    "browser_request_human",
                    {"reason": "Nobody will answer this", "timeoutSeconds": 120},
                    read_timeout_seconds=2,
                )
                timed_out = {"gaveUp": False}
            except MCPError as error:
                timed_out = {"gaveUp": True, "code": error.error.code, "message": error.error.message}
            deadline = time.monotonic() + 5
            while True:
                await asyncio.sleep(0.2)
                after = await session.call_tool("browser_snapshot", {})
                if not after.is_error or time.monotonic() > deadline:
                    break
            report["hostGaveUp"] = {
                **timed_out,
                "tabFreedAfterwards": not after.is_error,
                "snapshot": report_of(after)["text"][:200],
            }
    return report


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print("usage: python hand_off.py <login page URL> <command> [args...]", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))))
