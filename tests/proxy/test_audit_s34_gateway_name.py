"""Through the gateway, a `tools/call` or `prompts/get` whose `name` is missing or not a string says so.

It said `unknown tool None: through this gateway tool names are <server>__<name>`; the request never reaches
a server, and the session goes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.proxy.test_gateway import EVERYTHING, Harness, _open, serve_spec

from mcpframe import jsonrpc
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw() -> AsyncIterator[Harness]:
    async with _open([serve_spec("every", EVERYTHING)]) as harness:
        yield harness


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("tools/call", {}, 'missing "name" (the tool\'s name, a string)'),
        ("tools/call", {"name": None, "arguments": {}}, 'missing "name" (the tool\'s name, a string)'),
        ("tools/call", {"name": 5}, '"name" must be a string (the tool\'s name), not a number'),
        ("prompts/get", {"name": ["x"]}, '"name" must be a string (the prompt\'s name), not an array'),
    ],
)
async def test_the_gateway_names_a_missing_or_odd_name(
    gw: Harness, method: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(JSONRPCError) as raised:
        await gw.client.request(method, params)
    assert (raised.value.code, raised.value.message) == (jsonrpc.INVALID_PARAMS, message)
    result = await gw.client.call_tool("every__test_simple_text", {})
    assert result["content"][0]["text"]


async def test_an_unprefixed_string_keeps_its_hint(gw: Harness) -> None:
    with pytest.raises(JSONRPCError) as raised:
        await gw.client.request("tools/call", {"name": "test_simple_text"})
    assert raised.value.message == (
        "unknown tool 'test_simple_text': through this gateway tool names are <server>__<name>"
    )
