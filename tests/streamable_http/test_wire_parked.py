"""The lean server's parked fast answers (`wire.Parked`): written where the app delivers them, in order with
pipelined requests; a `Later` delivered runs as a task; the server's close cancels what is still parked."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from mcpframe.http.asgi import Receive, Send
from mcpframe.http.wire import Parked
from mcpframe.http.wire_parts import Whole, WireAnswer

from ._wire_support import post, wire_connection

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server is built on asyncio Protocols


class _Held(Parked):
    __slots__ = ("body", "cancelled")

    def __init__(self, body: bytes) -> None:
        super().__init__()
        self.body = body
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _App:
    """Every POST is parked as a `held` (from the `fails_from`th on, the app's fast path fails instead: a
    bug in it); the test delivers (or not) each answer itself."""

    def __init__(self, held: type[_Held] = _Held, *, fails_from: int | None = None) -> None:
        self.held = held
        self.fails_from = fails_from
        self.parked: list[_Held] = []
        self.arrived = asyncio.Event()

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        raise AssertionError("every POST takes the fast path here")

    def wire_fast(
        self, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> WireAnswer | Parked:
        if self.fails_from is not None and len(self.parked) + 1 >= self.fails_from:
            raise RuntimeError("the app's fast path failed")
        held = self.held(body)
        self.parked.append(held)
        self.arrived.set()
        return held


async def _parked(app: _App, count: int) -> None:
    while len(app.parked) < count:
        app.arrived.clear()
        await app.arrived.wait()


async def _answers(reader: asyncio.StreamReader, count: int) -> bytes:
    got = b""
    while got.count(b"HTTP/1.1 200") < count or not got.endswith((b"first", b"second", b"later")):
        chunk = await reader.read(65536)
        assert chunk, got
        got += chunk
    return got


async def test_a_parked_answer_is_written_when_delivered_and_the_next_request_follows() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, reader, writer):
            writer.write(post(b"first") + post(b"second"))  # pipelined: the second waits for the first
            await _parked(app, 1)
            first = app.parked[0]
            assert wire.parked == {first}
            assert len(app.parked) == 1
            first.deliver((200, b"content-type: text/plain\r\n", b"first"))  # written from here, no task
            assert not wire.tasks
            assert len(app.parked) == 1  # the next request is started from the loop, not inside `deliver`
            await _parked(app, 2)
            assert wire.parked == {app.parked[1]}
            app.parked[1].deliver((200, b"", b"second"))
            assert wire.parked == set()
            got = await _answers(reader, 2)
    assert got.index(b"first") < got.index(b"second")
    assert got.count(b"content-length: ") == 2
    assert not first.cancelled


async def test_a_later_delivered_runs_as_a_task() -> None:
    app = _App()

    async def later(receive: Receive, send: Send) -> Whole:
        await asyncio.sleep(0)  # it waits: a task runs the rest
        return 200, b"", b"later"

    with anyio.fail_after(10):
        async with wire_connection(app) as (_, reader, writer):
            writer.write(post(b"x"))
            await _parked(app, 1)
            app.parked[0].deliver(later)
            assert (await _answers(reader, 1)).endswith(b"later")


async def test_the_servers_close_cancels_what_is_parked_and_a_late_delivery_is_dropped() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, reader, writer):
            writer.write(post(b"x"))
            await _parked(app, 1)
            held = app.parked[0]
            await wire.close()
            assert held.cancelled
            assert wire.parked == set()
            held.deliver((200, b"", b"too late"))  # ignored: the request was given up
            assert await reader.read() == b""  # closed with nothing written


async def test_a_client_that_leaves_cancels_its_parked_answer_once() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, _, writer):
            writer.write(post(b"x") + post(b"y"))
            await _parked(app, 1)
            held = app.parked[0]
            writer.close()  # the client leaves while its answer is parked
            while wire.connections:
                await asyncio.sleep(0.005)
            assert held.cancelled
            assert wire.parked == set()
            held.cancelled = False
            held.deliver((200, b"", b"late"))  # nobody to write it to: dropped
            await wire.close()
            assert not held.cancelled  # cancelled once: the server's close found nothing parked
            assert len(app.parked) == 1  # the pipelined second request was never started


async def test_a_later_delivered_after_the_client_left_still_runs_so_the_app_ends_its_work() -> None:
    """The app was told (`cancel`), but what it delivers after is handled as an answer to a client that left:
    a `Later` runs (the direct server's full path ends a suspended handler there, the proxy abandons a
    route it upgraded), a whole answer is dropped."""
    app = _App()
    ran: list[str] = []

    async def later(receive: Receive, send: Send) -> Whole | None:
        ran.append((await receive())["type"])
        return None

    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, _, writer):
            writer.write(post(b"x"))
            await _parked(app, 1)
            writer.close()
            while wire.connections:
                await asyncio.sleep(0.005)
            assert app.parked[0].cancelled
            app.parked[0].deliver(later)
            while not ran:
                await asyncio.sleep(0.005)
    assert ran == ["http.disconnect"]


async def test_a_request_behind_a_parked_answer_is_not_started_after_a_close_that_came_meanwhile() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, reader, writer):
            writer.write(post(b"first") + post(b"second"))
            await _parked(app, 1)
            (connection,) = wire.connections
            app.parked[0].deliver((200, b"", b"first"))  # the second is started from the loop ...
            connection.close_when_idle()  # ... and a drain closes the idle connection first
            got = await reader.read()
    assert got.count(b"HTTP/1.1 200") == 1
    assert len(app.parked) == 1  # the second request never ran: its client may send it again


async def test_an_app_whose_cancel_fails_does_not_stop_the_servers_close(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class _Broken(_Held):
        __slots__ = ()

        def cancel(self) -> None:
            super().cancel()
            raise RuntimeError("cancel failed")

    app = _App(_Broken)
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, _, writer):
            _, second = await asyncio.open_connection(*writer.get_extra_info("peername"))
            writer.write(post(b"x"))
            second.write(post(b"y"))
            await _parked(app, 2)
            await wire.close()
            assert wire.parked == set()
            second.close()
    assert [held.cancelled for held in app.parked] == [True, True]
    failed = [r for r in caplog.records if r.getMessage() == "cancelling a parked answer failed"]
    assert len(failed) == 2


async def test_a_failure_starting_the_next_request_after_a_delivery_closes_with_a_500() -> None:
    app = _App(fails_from=2)  # the first POST is parked; starting the second one fails
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, reader, writer):
            writer.write(post(b"first") + post(b"second"))
            await _parked(app, 1)
            app.parked[0].deliver((200, b"", b"first"))  # raises nothing into the app's step
            got = await reader.read()  # the connection is closed, not left silent
            assert wire.parked == set()
    first, _, rest = got.partition(b"first")
    assert first.startswith(b"HTTP/1.1 200 ")
    assert rest.startswith(b"HTTP/1.1 500 ")  # the second request's answer
    assert b"connection: close" in rest


async def test_a_delivery_to_a_client_that_reads_slowly_waits_until_it_can_write() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, reader, writer):
            writer.write(post(b"x"))
            await _parked(app, 1)
            (connection,) = wire.connections
            connection.pause_writing()  # as the transport does when its write buffer is full
            app.parked[0].deliver((200, b"", b"later"))
            assert len(wire.tasks) == 1  # not written from here: a task waits for room
            await asyncio.sleep(0.05)
            assert len(wire.tasks) == 1  # ... still waiting, nothing written
            connection.resume_writing()
            got = await _answers(reader, 1)
    assert got.startswith(b"HTTP/1.1 200 ")
    assert got.endswith(b"later")
    assert got.count(b"HTTP/1.1") == 1
