"""``Server.suspends``: which requests a Session starts in a task of their own rather than eagerly (a
``tools/call`` of a ``def`` tool, with or without a ``Context``: it always goes to a worker thread), and
that every connection's Session is given it. A wrong guess would cost time only; these pin the guess and
that calls still answer.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import orjson
import pytest

from mcpframe import core
from mcpframe._threads import POOLED
from mcpframe.server import Context, Server
from mcpframe.session import Request, Session
from mcpframe.transports.memory import memory_pair

from ._driver import legacy

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _server() -> Server:
    server = Server("suspends", version="1.0.0")

    @server.tool
    def plain(text: str) -> str:
        """A `def` tool."""
        return f"{text} on {threading.current_thread().name}"

    @server.tool
    async def coro(text: str) -> str:
        """An `async def` tool."""
        return text

    @server.tool
    def with_context(text: str, ctx: Context) -> str:
        """A `def` tool that takes a Context."""
        return text

    return server


def _message(method: str, params: Any) -> Any:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    (decoded,) = core.Decoder().feed(orjson.dumps(body) + b"\n")
    return decoded


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("tools/call", {"name": "plain", "arguments": {"text": "x"}}, True),
        ("tools/call", {"name": "with_context", "arguments": {"text": "x"}}, True),
        ("tools/call", {"name": "coro", "arguments": {"text": "x"}}, False),
        ("tools/call", {"name": "missing"}, False),
        ("tools/call", {"name": 3}, False),
        ("tools/call", ["plain"], False),
        ("tools/list", {}, False),
        ("ping", None, False),
    ],
)
def test_which_requests_surely_suspend(method: str, params: Any, expected: bool) -> None:
    request = Request(Session(memory_pair()[0]), _message(method, params))
    assert _server().suspends(request) is expected


async def test_a_connection_gives_its_session_the_rule_and_def_tools_still_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = _server()
    bound: list[Session] = []
    real_bind = type(server.connection()).bind

    def bind(self: Any, session: Session) -> None:
        real_bind(self, session)
        bound.append(session)

    monkeypatch.setattr(type(server.connection()), "bind", bind)
    async with legacy(server) as driver:
        with anyio.fail_after(10):
            result = await driver.request("tools/call", {"name": "plain", "arguments": {"text": "hi"}})
            other = await driver.request("tools/call", {"name": "coro", "arguments": {"text": "yo"}})
    worker = "mcpframe-worker" if POOLED else "AnyIO worker thread"  # the pool needs a private anyio name
    assert result["content"][0]["text"].startswith(f"hi on {worker}")
    assert other["content"] == [{"type": "text", "text": "yo"}]
    assert bound
    assert bound[0].suspends == server.suspends


async def test_a_def_tool_that_returns_an_awaitable_or_raises_is_answered_as_before() -> None:
    server = Server("def-tools", version="1.0.0")

    async def later(text: str) -> str:
        return f"awaited {text}"

    @server.tool
    def deferred(text: str) -> Any:
        """A `def` tool returning a coroutine: awaited on the loop."""
        return later(text)

    @server.tool
    def broken(text: str) -> str:
        """A `def` tool that raises on its worker thread."""
        raise ValueError(f"no {text}")

    async with legacy(server) as driver:
        with anyio.fail_after(10):
            got = await driver.request("tools/call", {"name": "deferred", "arguments": {"text": "x"}})
            failed = await driver.request("tools/call", {"name": "broken", "arguments": {"text": "y"}})
    assert got["content"] == [{"type": "text", "text": "awaited x"}]
    assert failed["isError"] is True
    assert failed["content"] == [{"type": "text", "text": "Error executing tool broken: no y"}]
