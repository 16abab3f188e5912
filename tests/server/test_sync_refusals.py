"""What `ServerConnection.handle_request` refuses it raises before returning an awaitable (no coroutine frame
of its own): each refusal is still answered with its JSON-RPC error, directly or under a graceful stop's
`Stop.track_connection`, and the connection goes on answering."""

from __future__ import annotations

from typing import Any

import pytest

from mcpframe import jsonrpc
from mcpframe.server import Server
from mcpframe.server.lifecycle import Stop
from mcpframe.session import JSONRPCError

from ._driver import legacy

pytestmark = pytest.mark.anyio

REFUSALS = [
    pytest.param(
        "tools/call", {"name": "nope"}, jsonrpc.INVALID_PARAMS, "unknown tool 'nope'", id="unknown-tool"
    ),
    pytest.param(
        "tools/call",
        {"name": 3},
        jsonrpc.INVALID_PARAMS,
        '"name" must be a string (the tool\'s name), not a number',
        id="name-not-a-string",
    ),
    pytest.param(
        "tools/call",
        {"name": "needs_task"},
        jsonrpc.METHOD_NOT_FOUND,
        "must run as a task",
        id="task-required",
    ),
    pytest.param(
        "tools/call",
        {"name": "echo", "arguments": {"text": "x"}, "task": {"ttl": 60000}},
        jsonrpc.METHOD_NOT_FOUND,
        "cannot run as a task",
        id="task-forbidden",
    ),
    pytest.param("no/such/method", {}, jsonrpc.METHOD_NOT_FOUND, "no/such/method", id="unknown-method"),
]


def make_server() -> Server:
    server = Server("refusals")

    @server.tool
    async def echo(text: str) -> str:
        """Says it back."""
        return text

    @server.tool(task_support="required")
    async def needs_task() -> str:
        """Runs only as a task."""
        return "never called directly"

    return server


@pytest.mark.parametrize("tracked", [False, True], ids=["plain", "under-a-stop"])
@pytest.mark.parametrize(("method", "params", "code", "says"), REFUSALS)
async def test_a_refusal_raised_before_the_handler_starts_is_answered_and_the_connection_goes_on(
    tracked: bool, method: str, params: dict[str, Any], code: int, says: str
) -> None:
    stop = Stop(5.0) if tracked else None
    async with legacy(make_server(), stops=() if stop is None else (stop,)) as client:
        for _ in range(2):  # the same refusal again, after it: nothing left over from the first
            with pytest.raises(JSONRPCError) as info:
                await client.request(method, params)
            assert info.value.code == code
            assert says in info.value.message
            result = await client.request("tools/call", {"name": "echo", "arguments": {"text": "on"}})
            assert result["content"][0]["text"] == "on"
        if stop is not None:
            assert not stop._running  # the refused requests left the stop's running ones


async def test_a_refused_modern_tools_call_is_answered_and_the_connection_goes_on() -> None:
    async with legacy(make_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.modern("tools/call", {"name": "nope"})
        assert info.value.code == jsonrpc.INVALID_PARAMS
        assert "unknown tool 'nope'" in info.value.message
        result = await client.modern("tools/call", {"name": "echo", "arguments": {"text": "on"}})
        assert result["content"][0]["text"] == "on"
