"""A graceful stop's tracking leaves no reference cycle: a closed connection is freed at once.

`Stop.track_connection` puts a wrapper holding the connection's own `handle_request` on the connection; a
connection made per 2026-07-28 POST left that cycle for the garbage collector (~5k instructions a POST).
"""

from __future__ import annotations

import gc
import weakref
from typing import cast

import pytest

from mcpframe import jsonrpc
from mcpframe.server import Server
from mcpframe.server.lifecycle import Stop
from mcpframe.session import JSONRPCError, Request

pytestmark = pytest.mark.anyio


async def test_a_closed_tracked_connection_is_freed_without_the_garbage_collector() -> None:
    conn = Server("t").connection()
    Stop(1.0).track_connection(conn)
    conn.close()
    freed = weakref.ref(conn)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del conn
        assert freed() is None
    finally:
        if enabled:
            gc.enable()


async def test_closing_untracks_the_connection_but_a_handler_taken_before_still_refuses() -> None:
    conn = Server("t").connection()
    stop = Stop(1.0)
    stop.track_connection(conn)
    handle = conn.handle_request
    conn.close()
    assert conn.tracked_by == ()
    assert "handle_request" not in vars(conn)  # the class's own method again
    await stop.settle()  # nothing runs: it only begins refusing
    with pytest.raises(JSONRPCError) as refused:
        await handle(cast(Request, None))  # refused before the request is looked at
    assert refused.value.code == jsonrpc.CONNECTION_CLOSED
    assert "request not started" in str(refused.value)


async def test_a_connection_that_was_never_tracked_closes_as_before() -> None:
    conn = Server("t").connection()
    conn.close()
    assert conn.tracked_by == ()
    assert "handle_request" not in vars(conn)
