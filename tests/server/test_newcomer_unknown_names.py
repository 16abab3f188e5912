"""A mistyped tool or prompt name is refused with the name it most likely meant."""

from __future__ import annotations

import pytest

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.server import Server
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio


def make_server(extra_tools: int = 0) -> Server:
    server = Server("names")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def word_count(text: str) -> int:
        return len(text.split())

    @server.prompt
    def summarize(topic: str) -> str:
        return f"Summarize {topic}."

    for index in range(extra_tools):
        server.tool(name=f"tool_{index}")(lambda: "x")
    return server


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ad", "Invalid params: unknown tool 'ad'; did you mean 'add'?"),
        ("word-count", "Invalid params: unknown tool 'word-count'; did you mean 'word_count'?"),
        ("nope", "Invalid params: unknown tool 'nope'"),  # nothing close: no guess
    ],
)
async def test_an_unknown_tool_names_the_closest(name: str, message: str) -> None:
    async with Client(make_server()) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.call_tool(name, {})
        assert raised.value.code == jsonrpc.INVALID_PARAMS
        assert raised.value.message == message
        assert (await client.call_tool("add", {"a": 1, "b": 2}))["content"][0]["text"] == "3"


async def test_an_unknown_prompt_names_the_closest() -> None:
    async with Client(make_server()) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.get_prompt("sumarize", {"topic": "x"})
        assert raised.value.message == "Invalid params: unknown prompt 'sumarize'; did you mean 'summarize'?"


async def test_no_guess_among_very_many_tools() -> None:
    async with Client(make_server(extra_tools=300)) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.call_tool("ad", {})
        assert raised.value.message == "Invalid params: unknown tool 'ad'"
