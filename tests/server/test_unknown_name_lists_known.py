"""An unknown tool's (or prompt's) error lists what exists in its `data`: the first 20 names and a count."""

from __future__ import annotations

import pytest

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.server import Server
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio


def server_with(tools: int) -> Server:
    server = Server("listing")
    for index in range(tools):
        server.tool(name=f"tool_{index:02}")(lambda: "x")

    @server.prompt
    def summarize(topic: str) -> str:
        return f"Summarize {topic}."

    return server


@pytest.mark.parametrize(
    ("tools", "available", "more"),
    [
        (3, ["tool_00", "tool_01", "tool_02"], 0),
        (20, [f"tool_{i:02}" for i in range(20)], 0),
        (25, [f"tool_{i:02}" for i in range(20)], 5),
    ],
)
async def test_an_unknown_tool_lists_the_tools(tools: int, available: list[str], more: int) -> None:
    async with Client(server_with(tools)) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.call_tool("nothing_like_it", {})
    assert raised.value.code == jsonrpc.INVALID_PARAMS
    assert raised.value.message == "Invalid params: unknown tool 'nothing_like_it'"  # the reason, unchanged
    assert raised.value.data == {"available": available, "more": more}


async def test_a_close_match_still_leads_and_the_list_follows() -> None:
    async with Client(server_with(2)) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.call_tool("tool_000", {})
    assert raised.value.message == "Invalid params: unknown tool 'tool_000'; did you mean 'tool_00'?"
    assert raised.value.data == {"available": ["tool_00", "tool_01"], "more": 0}


async def test_a_name_that_is_not_a_string_gets_the_list_too() -> None:
    async with Client(server_with(1)) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.request("tools/call", {"name": 3})
    assert raised.value.message == 'Invalid params: "name" must be a string (the tool\'s name), not a number'
    assert raised.value.data == {"available": ["tool_00"], "more": 0}


async def test_an_unknown_prompt_lists_the_prompts() -> None:
    async with Client(server_with(1)) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.get_prompt("nope", {})
    assert raised.value.data == {"available": ["summarize"], "more": 0}
