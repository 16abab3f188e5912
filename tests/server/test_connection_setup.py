"""What a connection costs to set up: a graceful stop wraps it once, a pooled Session's loop token is kept."""

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


async def test_a_stop_wraps_a_connection_once_and_another_stop_wraps_it_again() -> None:
    conn = Server("t").connection()
    first, second = Stop(1.0), Stop(1.0)
    first.track_connection(conn)
    wrapped = conn.handle_request
    first.track_connection(conn)
    assert conn.handle_request is wrapped  # asked twice, tracked once
    second.track_connection(conn)
    assert conn.handle_request is not wrapped
    assert conn.tracked_by is second


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
