"""A mistyped tool or prompt name is refused with the name it most likely meant."""

from __future__ import annotations

import pytest

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.server import Server, handlers
from mcpframe.server.handlers import _closest, _unknown
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


@pytest.mark.parametrize(
    ("name", "close"),
    [
        ("Add", "add"),  # case
        ("adx", "add"),  # one letter changed
        ("xadd", "add"),  # one letter added
        ("wordcount", "word_count"),  # one missed
        ("summarise", "summarize"),
        ("adding", None),  # two letters off: no guess
        ("a" * 64, None),  # the 65-letter name is too long to be suggested
    ],
)
def test_the_closest_name_is_one_typo_away(name: str, close: str | None) -> None:
    known = {"add": 1, "word_count": 1, "summarize": 1, "a" * 65: 1}  # the long one is never indexed
    hint = "" if close is None else f"; did you mean {close!r}?"
    assert _unknown("tool", name, known).message == f"Invalid params: unknown tool {name!r}{hint}"


def test_a_wrong_name_costs_one_lookup_per_letter_not_a_comparison_per_tool() -> None:
    """256 tools of 64 letters over {a, b} (the worst case for a comparison of each pair): the index is
    built once (each name and its forms one letter short), and each wrong name is looked up, not compared."""
    names = {format(i, "b").zfill(64).replace("0", "a").replace("1", "b"): 1 for i in range(256)}
    _closest("x", names)
    index = handlers._near_index[id(names)][1]
    assert len(index) <= 256 * 65
    calls = 0
    real = handlers._one_short

    def counted(word: str) -> list[str]:
        nonlocal calls
        calls += 1
        return real(word)

    handlers._one_short = counted
    try:
        assert _closest("c" * 64, names) is None
    finally:
        handlers._one_short = real
    assert calls == 1  # the wrong name's own forms only: the index was not rebuilt
