"""`Server(lifespan=...)` in memory: entered once for all connections, its state in `ctx.lifespan_context`,
its teardown after the last connection (even when cancelled), a start-up failure as one `LifespanError` line.

The signal-driven stop of a whole process is in `test_shutdown.py` (real children).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpframe.client import Client
from mcpframe.server import Context, LifespanError, Server

pytestmark = pytest.mark.anyio


def _recording_server(events: list[str]) -> tuple[Server, anyio.Event]:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        events.append(f"start {server.name}")
        yield {"pool": "connected"}
        await anyio.lowlevel.checkpoint()  # a teardown that awaits, as a real one does
        events.append("stop")
        stopped.set()

    stopped = anyio.Event()
    server = Server("with-lifespan", lifespan=lifespan)

    @server.tool
    async def pool(ctx: Context) -> str:
        return str(ctx.lifespan_context["pool"])

    return server, stopped


async def test_state_reaches_handlers_and_one_entry_serves_every_connection() -> None:
    events: list[str] = []
    server, stopped = _recording_server(events)
    with anyio.fail_after(20):
        async with Client(server) as first, Client(server) as second:
            assert events == ["start with-lifespan"]
            assert server.lifespan_state == {"pool": "connected"}
            for client in (first, second):
                result = await client.call_tool("pool")
                assert result["content"] == [{"type": "text", "text": "connected"}]
        await stopped.wait()  # the clients closed; serve() unwinds on its own task
    assert events == ["start with-lifespan", "stop"]
    assert server.lifespan_state is None


async def test_nested_entries_share_one_start_and_one_teardown() -> None:
    events: list[str] = []
    server, _ = _recording_server(events)
    async with server.lifespan() as outer:
        async with server.lifespan() as inner:
            assert inner is outer
        assert events == ["start with-lifespan"]
    assert events == ["start with-lifespan", "stop"]


async def test_the_teardown_runs_when_the_server_is_cancelled() -> None:
    events: list[str] = []
    server, _ = _recording_server(events)
    with anyio.CancelScope() as scope:
        async with server.lifespan():
            scope.cancel()
            await anyio.sleep_forever()
    assert events == ["start with-lifespan", "stop"]


async def test_without_a_lifespan_the_context_holds_none() -> None:
    server = Server("plain")

    @server.tool
    async def state(ctx: Context) -> str:
        return repr(ctx.lifespan_context)

    with anyio.fail_after(20):
        async with Client(server) as client:
            result = await client.call_tool("state")
    assert result["content"][0]["text"] == "None"


async def test_a_start_up_failure_is_one_line_naming_the_users_line() -> None:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        raise ConnectionError("database unreachable")
        yield  # pragma: no cover - never reached

    server = Server("broken", lifespan=lifespan)
    with pytest.raises(LifespanError) as caught:
        async with server.lifespan():
            pass  # pragma: no cover - never reached
    line = lifespan.__wrapped__.__code__.co_firstlineno + 2  # type: ignore[attr-defined]
    assert str(caught.value) == (
        f"server 'broken': its lifespan failed at start-up: {Path(__file__)}:{line}: "
        "ConnectionError: database unreachable"
    )
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert "\n" not in str(caught.value)


async def test_the_http_host_runs_the_lifespan_as_its_asgi_lifespan() -> None:
    pytest.importorskip("uvicorn")
    from mcpframe.http.server import StreamableHTTPServer  # noqa: PLC0415 - the http extra is optional

    events: list[str] = []
    server, _ = _recording_server(events)
    async with StreamableHTTPServer(server):  # what the ASGI lifespan's startup and shutdown do
        assert events == ["start with-lifespan"]
        assert server.lifespan_state == {"pool": "connected"}
    assert events == ["start with-lifespan", "stop"]
