"""The client the MCP conformance harness drives: `python examples/conformance_client.py <server URL>`.

The harness names the scenario in `MCP_CONFORMANCE_SCENARIO`; each one connects over Streamable HTTP with
`mcpframe.http.connect`, does what the scenario checks, and exits 0 (1 on any error). Logs go to stderr.

- `initialize`: connect (initialize + initialized), list tools, close.
- `tools_call`: connect, list tools, call `add_numbers` with 5 and 3.
- `elicitation-sep1034-client-defaults`: call `test_client_elicitation_defaults`; the elicitation handler
  accepts and fills every omitted field from its schema default (SEP-1034).
- `sse-retry`: call `test_reconnection`; the transport resumes the closed POST stream with GET +
  `Last-Event-ID` after the server's `retry` delay.
- anything else: connect, list tools, call the first tool with no arguments if there is one.

Scenarios named `auth/...` connect with an OAuth provider (`mcpframe.http.auth`), built by
`examples/conformance_auth.py` from the scenario name and `MCP_CONFORMANCE_CONTEXT` (the harness's
credentials): the authorization code grant with a headless redirect, or the client credentials grant.

The harness's mock servers speak 2025-era protocol revisions, so the client is asked for the legacy
handshake directly (`mode="legacy"`) rather than probing `server/discover` first.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcpframe.client import Client
from mcpframe.http import connect

try:  # run as a script: this directory is on the path; imported: the examples package
    from conformance_auth import auth_for  # type: ignore[import-not-found,unused-ignore]
except ModuleNotFoundError:
    from examples.conformance_auth import auth_for

logger = logging.getLogger("conformance_client")

Scenario = Callable[[Client], Awaitable[None]]


def schema_defaults(schema: Any) -> dict[str, Any]:
    """Every top-level property of a JSON schema that declares a `default`, with that default."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }


async def accept_with_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """An elicitation handler with no user: accept, answering each field with its schema default."""
    content = schema_defaults(params.get("requestedSchema"))
    logger.info("elicitation %r answered with %r", params.get("message"), content)
    return {"action": "accept", "content": content}


async def initialize(client: Client) -> None:
    """Connecting is the whole test; list the tools to show the session works."""
    tools = await client.list_tools()
    logger.info("connected (%s), %d tools", client.protocol_version, len(tools))


async def tools_call(client: Client) -> None:
    """Call `add_numbers`."""
    await client.list_tools()
    result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
    logger.info("add_numbers(5, 3) -> %r", result)


async def elicitation_defaults(client: Client) -> None:
    """Call the tool that elicits a form whose fields all have defaults."""
    result = await client.call_tool("test_client_elicitation_defaults", {})
    logger.info("test_client_elicitation_defaults -> %r", result)


async def sse_retry(client: Client) -> None:
    """Call the tool whose POST stream the server closes before answering."""
    await client.list_tools()
    result = await client.call_tool("test_reconnection", {})
    logger.info("test_reconnection -> %r", result)


async def generic(client: Client) -> None:
    """Unknown scenario: list the tools and call the first one."""
    tools = await client.list_tools()
    if tools:
        result = await client.call_tool(tools[0]["name"], {})
        logger.info("%s -> %r", tools[0]["name"], result)


SCENARIOS: dict[str, Scenario] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
}


async def run(url: str, scenario: str) -> None:
    """Connect to `url` and play `scenario`: 20 s at most, under the harness's default 30 s (an `auth/`
    scenario 100 s: the tests run those with `--timeout 120000`, 14 clients at once)."""
    with anyio.fail_after(100 if scenario.startswith("auth/") else 20):
        async with (
            auth_for(scenario, url) as auth,
            connect(
                url,
                name="mcpframe-conformance-client",
                mode="legacy",
                elicitation_handler=accept_with_defaults,
                auth=auth,
            ) as client,
        ):
            await SCENARIOS.get(scenario, generic)(client)


def main(argv: list[str]) -> int:
    """Entry point: the server URL is the last argument."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    if len(argv) < 2:
        print("usage: conformance_client.py <server URL>", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        anyio.run(run, argv[-1], scenario)
    except Exception:
        logger.exception("scenario %r failed", scenario)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
