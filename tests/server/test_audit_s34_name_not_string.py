"""A `tools/call` or `prompts/get` whose `name` is missing, null or not a string says so.

It said `unknown tool None` (or `unknown tool 3`), which reads as a tool called None: the usual cause is a
misspelt key (`"tool": ...`) or a client that sent no name at all. The error's `data` still lists the names.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.server import Server
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio


def _server() -> Server:
    server = Server("names")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.prompt
    def greet(who: str) -> str:
        return f"Hello {who}"

    return server


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("tools/call", {}, 'missing "name" (the tool\'s name, a string)'),
        ("tools/call", {"tool": "add", "arguments": {}}, 'missing "name" (the tool\'s name, a string)'),
        ("tools/call", {"name": None}, 'missing "name" (the tool\'s name, a string)'),
        ("tools/call", {"name": 3}, '"name" must be a string (the tool\'s name), not a number'),
        ("tools/call", {"name": ["add"]}, '"name" must be a string (the tool\'s name), not an array'),
        ("tools/call", {"name": {"x": 1}}, '"name" must be a string (the tool\'s name), not an object'),
        ("tools/call", {"name": True}, '"name" must be a string (the tool\'s name), not a boolean'),
        ("prompts/get", {}, 'missing "name" (the prompt\'s name, a string)'),
        ("prompts/get", {"name": 1.5}, '"name" must be a string (the prompt\'s name), not a number'),
    ],
)
async def test_a_name_that_is_missing_or_no_string_is_named_as_such(
    method: str, params: dict[str, Any], message: str
) -> None:
    async with Client(_server()) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.request(method, params)
        assert await client.call_tool("add", {"a": 1, "b": 2}) is not None  # the connection goes on
    assert raised.value.code == jsonrpc.INVALID_PARAMS
    assert raised.value.message == f"Invalid params: {message}"
    listed = ["add"] if method == "tools/call" else ["greet"]
    assert raised.value.data == {"available": listed, "more": 0}


async def test_a_string_name_that_is_unknown_keeps_its_message() -> None:
    async with Client(_server()) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.request("tools/call", {"name": "None"})
    assert raised.value.message == "Invalid params: unknown tool 'None'"
