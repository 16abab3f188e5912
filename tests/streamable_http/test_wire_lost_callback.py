"""The lean server's `connection_lost` when the callback a response gave `receive.on_disconnect` raises:
the failure is logged and the rest still runs, so the app's `receive()` answers `http.disconnect`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
import pytest

from .test_wire_server import server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server is built on asyncio Protocols


async def test_a_failing_disconnect_callback_does_not_stop_the_rest_of_connection_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    got: list[str] = []
    done = anyio.Event()

    def broken() -> None:
        raise RuntimeError("callback boom")

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()  # the (empty) body
        receive.on_disconnect(broken)
        start = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        await send(start)
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        got.append((await receive())["type"])  # the client left: told here although the callback failed
        done.set()

    async with server(app) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        with anyio.fail_after(10):
            await reader.readuntil(b"\r\n\r\n")
            writer.close()
            await done.wait()
    assert got == ["http.disconnect"]
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in failed] == ["a disconnect callback failed"]
    assert failed[0].exc_info is not None
    assert str(failed[0].exc_info[1]) == "callback boom"
