"""Hands steps to the person through `mcp-relay bridge` with the official MCP Python SDK as a
host of MCP 2026-07-28 (issue 29, point 4), against a real browser whose person the Rust test
plays (tests/it/browser_person.rs). Such a host is not held in one long call: the bridge answers
"input required" (an `InputRequiredResult`) and the host calls again (docs/BRIDGE.md, "Handing a
step to the person").

1. A host that can show an elicitation, driving the rounds itself: the first answer is input
   required with the question; the person signs in in the browser and answers Done here.
2. The same host, through the SDK's own driver: the person clicks Cancel in the extension's
   popup first, then answers Done here; the popup's answer stands.
3. The same host: the person declines the question here; the hand-off is cancelled.
4. A host that cannot show an elicitation (a second client, so a second bridge): the bridge
   answers with its state alone after each `--round-wait`, the SDK's driver calls again, each
   round under a read timeout shorter than the person takes, until they click Done in the popup.

What the person answers in the host (`done` or `cancel`) comes as lines on this script's stdin,
written by the Rust test once the person has done (or not done) the step.

Usage: python hand_off_rounds.py <login page URL> <command> [args...]
MCP_RELAY_TOKEN is passed through to the bridge. Prints one JSON report as its last line.
"""

import asyncio
import json
import os
import sys
import time

from mcp import Client, Implementation, StdioServerParameters, types

from hosts import report_of

# Each round of the polling host must answer within this; the person takes longer in all.
ROUND_TIMEOUT_SECONDS = 4


async def person_says() -> str:
    """The person's answer in the host, as the Rust test writes it."""
    line = await asyncio.to_thread(sys.stdin.readline)
    return line.strip()


def elicit_result(answer: str) -> types.ElicitResult:
    if answer == "done":
        return types.ElicitResult(action="accept", content={"answer": "done"})
    return types.ElicitResult(action="decline")


async def main(login_url: str, command: str, args: list[str]) -> dict:
    env = {name: os.environ[name] for name in ("MCP_RELAY_TOKEN", "MCP_RELAY_LOG", "PATH") if name in os.environ}
    server = StdioServerParameters(command=command, args=args, env=env)
    host = Implementation(name="Hand-off Test Host", version="1.0.0")
    report: dict = {}
    asked: list[str] = []

    async def ask_the_person(_context, params) -> types.ElicitResult:
        asked.append(params.message)
        return elicit_result(await person_says())

    async with Client(server, client_info=host, elicitation_callback=ask_the_person) as client:
        report["protocol"] = client.protocol_version
        opened = await client.call_tool("browser_navigate", {"url": login_url})
        assert not opened.is_error, opened

        # 1. Driven by hand, to see each round as it comes.
        call = {"reason": "Sign in to Example Bank", "timeoutSeconds": 120}
        first = await client.session.call_tool("browser_request_human", call, allow_input_required=True)
        question = first.input_requests["handOff"] if isinstance(first, types.InputRequiredResult) else None
        refused = await client.call_tool("browser_snapshot", {})
        answer = await person_says()
        finished = await client.session.call_tool(
            "browser_request_human", call,
            input_responses={"handOff": elicit_result(answer)},
            request_state=first.request_state,
            allow_input_required=True,
        )
        report["askedInHost"] = {
            "firstIsInputRequired": isinstance(first, types.InputRequiredResult),
            "method": question.method if question else None,
            "question": question.params.message if question else None,
            "hasState": bool(getattr(first, "request_state", None)),
            "refusedMeanwhile": report_of(refused),
            "finishedIsInputRequired": isinstance(finished, types.InputRequiredResult),
            **(report_of(finished) if isinstance(finished, types.CallToolResult) else {}),
        }

        # 2. The SDK's driver; the popup's Cancel comes before the host's Done.
        cancelled = await client.call_tool(
            "browser_request_human", {"reason": "Approve the transfer on your phone", "timeoutSeconds": 120})
        report["popupFirst"] = {**report_of(cancelled), "asked": asked[-1] if asked else None}

        # 3. Declined in the host.
        declined = await client.call_tool(
            "browser_request_human", {"reason": "Confirm the payment", "timeoutSeconds": 120})
        report["declinedInHost"] = {**report_of(declined), "asked": len(asked)}

    # 4. No elicitation: the state alone, round after round, until the popup's Done.
    async with Client(server, client_info=host, read_timeout_seconds=ROUND_TIMEOUT_SECONDS) as client:
        opened = await client.call_tool("browser_navigate", {"url": login_url})
        assert not opened.is_error, opened
        started = time.monotonic()
        polled = await client.call_tool(
            "browser_request_human", {"reason": "Solve the puzzle for me", "timeoutSeconds": 120})
        report["polled"] = {
            **report_of(polled),
            "protocol": client.protocol_version,
            "elapsedMs": int((time.monotonic() - started) * 1000),
        }
    return report


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print("usage: python hand_off_rounds.py <login page URL> <command> [args...]", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))))
