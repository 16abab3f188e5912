"""A `Parked` answer to a plain POST read while nothing waits (`wire._Connection._answer_plain`) is parked
there and then, without the request queue or `_next`: its answer is written where it is delivered, what
was pipelined behind it waits for it in order, the keep-alive's idle timer does not run meanwhile, a client
that leaves has it cancelled, and one delivered before the server parks it is written at once."""

from __future__ import annotations

import anyio
import pytest

from mcpframe.http.wire import Parked
from mcpframe.http.wire_parts import WireAnswer
from mcpframe.http.wire_plain import PLAIN

from ._wire_support import FastApp, count_nexts, post, until, wire_connection
from ._wire_support import ok_bodies as _bodies

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server is built on asyncio Protocols


class _Held(Parked):
    """A parked answer that counts the server's cancels (a client that left)."""

    __slots__ = ("cancels",)

    def __init__(self) -> None:
        super().__init__()
        self.cancels = 0

    def cancel(self) -> None:
        self.cancels += 1


class _App(FastApp):
    """`whole:X` is answered `X` at once, `park:X` parked (the test delivers), `ready:X` parked with `X`
    delivered before the server gets it."""

    def __init__(self) -> None:
        super().__init__()
        self.parked: list[_Held] = []

    def later(self, body: bytes) -> WireAnswer:
        parked = _Held()
        self.parked.append(parked)
        if body.startswith(b"ready:"):
            parked.deliver((200, b"", body[6:]))
        return parked


@pytest.fixture
def nexts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times `_Connection._next` ran (a request taken from the queue)."""
    return count_nexts(monkeypatch)


async def test_a_parked_answer_is_parked_from_the_read_and_the_idle_timer_waits(nexts: list[int]) -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, reader, writer):
            writer.write(post(b"park:a"))
            await until(lambda: bool(app.parked))
            (connection,) = wire.connections
            assert connection.current is not None
            assert connection.parked is app.parked[0]
            assert connection.idle_deadline is None  # a request is being answered: no keep-alive timeout
            if PLAIN is not None:
                assert nexts == []  # parked where it was read, not through the queue
            app.parked[0].deliver((200, b"", b"a"))
            assert await _bodies(reader, 1) == [b"a"]
            assert connection.current is None
            assert connection.idle_deadline is not None  # idle again: the keep-alive's timer runs
            writer.write(post(b"whole:b"))  # the connection goes on
            assert await _bodies(reader, 1) == [b"b"]
    assert app.offered == [b"park:a", b"whole:b"]
    assert app.parked[0].cancels == 0


async def test_what_is_pipelined_behind_a_parked_answer_waits_for_it() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (_, reader, writer):
            writer.write(post(b"park:a") + post(b"whole:b") + post(b"park:c") + post(b"whole:d"))
            await until(lambda: bool(app.parked))
            for _ in range(5):
                await anyio.sleep(0)
            assert app.offered == [b"park:a"]  # the rest waits for `a`'s answer
            app.parked[0].deliver((200, b"", b"a"))
            await until(lambda: len(app.parked) == 2)
            app.parked[1].deliver((200, b"", b"c"))
            assert await _bodies(reader, 4) == [b"a", b"b", b"c", b"d"]
    assert app.offered == [b"park:a", b"whole:b", b"park:c", b"whole:d"]


async def test_an_answer_delivered_before_it_is_parked_is_written_at_once() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, reader, writer):
            writer.write(post(b"ready:a") + post(b"whole:b"))
            assert await _bodies(reader, 2) == [b"a", b"b"]
            writer.write(post(b"ready:c"))
            assert await _bodies(reader, 1) == [b"c"]
            (connection,) = wire.connections
            await until(lambda: connection.current is None)
            assert connection.idle_deadline is not None
            assert not wire.parked  # nothing left parked
    assert app.offered == [b"ready:a", b"whole:b", b"ready:c"]


async def test_a_client_that_leaves_has_its_parked_answer_cancelled_once() -> None:
    app = _App()
    with anyio.fail_after(10):
        async with wire_connection(app) as (wire, _, writer):
            writer.write(post(b"park:a"))
            await until(lambda: bool(app.parked))
            writer.close()
            await until(lambda: not wire.connections)
            assert app.parked[0].cancels == 1
            assert not wire.parked
            app.parked[0].deliver((200, b"", b"late"))  # nobody to write it to: dropped
    assert app.parked[0].cancels == 1
