"""A tool that returns a coroutine (an `await` forgotten in its body) gets an error result that says so.

Before, the result read "cannot be encoded as JSON (Encoding objects of type coroutine is unsupported)" and
Python added a "coroutine ... was never awaited" warning some time later. Now the one message names the
coroutine and the likely fix, and the coroutine is closed, so no warning follows.
"""

from __future__ import annotations

import gc
import logging
import warnings
from typing import Any

import anyio
import pytest

from mcpframe.client import Client
from mcpframe.server import Context, Server

pytestmark = pytest.mark.anyio


async def fetch_total(n: int) -> int:
    return n * 2


def _server() -> Server:
    server = Server("forgetful")

    @server.tool
    async def plain(n: int) -> int:
        return fetch_total(n)  # type: ignore[return-value]  # the mistake under test

    @server.tool
    async def structured(n: int) -> dict[str, int]:
        return fetch_total(n)  # type: ignore[return-value]

    @server.tool
    async def with_context(n: int, ctx: Context) -> int:
        return fetch_total(n)  # type: ignore[return-value]

    @server.tool
    async def awaited(n: int) -> int:
        return await fetch_total(n)

    return server


EXPECTED = "its result is the coroutine fetch_total(), never awaited: a missing `await` in the tool?"


@pytest.mark.parametrize("tool", ["plain", "structured", "with_context"])
async def test_a_returned_coroutine_is_named(tool: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcpframe.server")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with anyio.fail_after(10):
            async with Client(_server()) as client:
                result: dict[str, Any] = await client.call_tool(tool, {"n": 2})
        gc.collect()
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": f"Error executing tool {tool}: {EXPECTED}"}]
    assert f"Error executing tool {tool}: {EXPECTED}" in caplog.text
    assert not [w for w in caught if "never awaited" in str(w.message)]


async def test_the_awaited_tool_still_answers() -> None:
    with anyio.fail_after(10):
        async with Client(_server()) as client:
            result = await client.call_tool("awaited", {"n": 2})
    assert result["content"] == [{"type": "text", "text": "4"}]
    assert not result.get("isError")
