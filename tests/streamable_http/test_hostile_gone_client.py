"""A client that pipelines requests and leaves: the lean server stops at the first failed write.

Found by the hostile-input fuzzer (`tests/fuzz`): once a write had failed (the client reset the connection)
the server went on answering the requests pipelined behind it, each answer a write to the dead socket, and
asyncio logged "socket.send() raised exception." for every one past the fifth: a log line per request a
departed client had queued.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import Any

import anyio
import pytest

from .test_wire_server import post, server

pytestmark = pytest.mark.anyio

QUEUED = 200


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_no_write_after_the_client_is_gone(caplog: pytest.LogCaptureFixture) -> None:
    gate, held = asyncio.Event(), asyncio.Event()
    answered: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        if scope["path"] == "/hold":
            held.set()
            await gate.wait()
        answered.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    caplog.set_level(logging.WARNING, logger="asyncio")
    async with server(app) as port:
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(post("/hold", b"") + post("/next", b"") * QUEUED)
        with anyio.fail_after(10):
            await held.wait()  # every request is parsed and queued behind the held one
        # the client leaves with a reset (no FIN), so the server's next write fails
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        gate.set()
        for _ in range(4 * QUEUED):  # loop turns (no clock): time for every queued answer to be tried
            await asyncio.sleep(0)
    assert len(answered) < QUEUED
    assert "socket.send() raised exception" not in caplog.text
