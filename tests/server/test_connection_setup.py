"""What a connection costs to set up: a graceful stop tracks it once (no wrapper), a pooled Session's loop
token is kept."""

from __future__ import annotations

import threading

import anyio
import anyio.lowlevel
import pytest

from mcpframe.server import Server
from mcpframe.server.lifecycle import Stop
from mcpframe.session import Session
from mcpframe.transports.memory import memory_pair

from ._driver import legacy

pytestmark = pytest.mark.anyio


async def test_a_stop_tracks_a_connection_once_and_another_stop_tracks_it_too() -> None:
    conn = Server("t").connection()
    first, second = Stop(1.0), Stop(1.0)
    first.track_connection(conn)
    first.track_connection(conn)
    assert conn.tracked_by == (first,)  # asked twice, tracked once
    second.track_connection(conn)
    assert conn.tracked_by == (first, second)
    assert "handle_request" not in vars(conn)  # nothing wraps the handler


async def test_stops_tracking_a_connection_in_turn_each_wrap_it_once_and_see_its_requests() -> None:
    server = Server("t")
    entered, release = anyio.Event(), anyio.Event()

    @server.tool
    async def wait() -> str:
        """Runs until released."""
        entered.set()
        await release.wait()
        return "done"

    first, second = Stop(5.0), Stop(5.0)
    stops = (first, second, first, second)  # A, B, A: the second A must not wrap A's wrapper
    async with legacy(server, stops=stops) as driver, anyio.create_task_group() as tg:
        for _ in range(3):  # answered, and no KeyError from a doubled `del running[task]`
            assert (await driver.request("tools/list"))["tools"][0]["name"] == "wait"
        tg.start_soon(driver.request, "tools/call", {"name": "wait", "arguments": {}})
        with anyio.fail_after(5):
            await entered.wait()
        assert len(first._running) == len(second._running) == 1  # each stop sees the running call
        with anyio.fail_after(5):
            async with anyio.create_task_group() as settling:
                settling.start_soon(first.settle)
                settling.start_soon(second.settle)
                while not (first.refusing and second.refusing):
                    await anyio.lowlevel.checkpoint()
                for stop in (first, second):  # each waits for the call
                    assert stop._settled is not None
                    assert not stop._settled.is_set()
                release.set()
        assert not first._running
        assert not second._running


async def test_a_session_keeps_the_loop_token_it_took_first() -> None:
    session = Session(memory_pair()[0])
    token = session.loop_token()
    assert session.loop_token() is token
    assert token.native_token is anyio.lowlevel.current_token().native_token


async def test_a_change_posted_from_another_thread_reaches_the_client() -> None:
    server = Server("t")
    async with legacy(server) as client:

        def register() -> None:
            @server.tool
            def late() -> str:
                """Added from a thread while connected."""
                return "late"

        worker = threading.Thread(target=register)
        worker.start()
        await anyio.to_thread.run_sync(worker.join)
        await client.wait_for("notifications/tools/list_changed")
