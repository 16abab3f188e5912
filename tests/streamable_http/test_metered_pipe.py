"""`MeteredPipe`, an SSE response's pipe on the full path, and `Stream.emit` over it: past the high-water
mark a producer of notifications waits for the reader, one producer cancelled while it waits leaves the
others waiting, closing lets them all go on, and a response never waits (one per request, bounded by the
requests admitted). No clock: everything is driven by the reader and by the loop's own steps.
"""

from __future__ import annotations

import asyncio

import pytest

from mcpframe.http.pipe import MeteredPipe, Pipe
from mcpframe.http.streams import Stream

pytestmark = pytest.mark.anyio


async def _steps(count: int = 5) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_a_plain_pipe_never_asks_its_producer_to_wait() -> None:
    pipe = Pipe()
    pipe.put(b"x" * 1_000_000)
    assert pipe.room() is None


def test_a_limit_below_one_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 byte"):
        MeteredPipe(0)


async def test_past_its_mark_a_producer_waits_until_the_reader_takes_enough() -> None:
    pipe = MeteredPipe(10)
    assert pipe.put(b"12345")
    assert pipe.room() is None  # under the mark
    assert pipe.put(b"678901")  # past it: put still takes it, nothing is dropped
    room = pipe.room()
    assert room is not None
    assert (pipe.size, pipe.peak) == (11, 11)
    assert pipe.get_nowait() == b"12345"  # back under the mark: the producer goes on
    assert room.done()
    assert pipe.get_nowait() == b"678901"
    assert (pipe.size, pipe.peak) == (0, 11)


async def test_a_producer_cancelled_while_it_waits_leaves_the_others_waiting() -> None:
    pipe = MeteredPipe(4)
    pipe.put(b"full")
    first, second = pipe.room(), pipe.room()
    assert first is not None
    assert second is not None

    async def wait(room: asyncio.Future[None]) -> None:
        await room

    one, two = asyncio.ensure_future(wait(first)), asyncio.ensure_future(wait(second))
    await _steps()
    one.cancel()
    await _steps()
    assert one.cancelled()
    assert not two.done()
    assert pipe.get_nowait() == b"full"
    await _steps()
    assert two.done()
    assert two.exception() is None


async def test_closing_lets_every_waiting_producer_go_on() -> None:
    pipe = MeteredPipe(1)
    pipe.put(b"ab")
    rooms = [pipe.room(), pipe.room()]
    pipe.close()
    assert all(room is not None and room.done() for room in rooms)
    assert pipe.room() is None  # closed: nothing to wait for
    assert not pipe.put(b"late")
    assert pipe.get_nowait() == b"ab"
    assert pipe.get_nowait() == b""


async def test_a_stream_holds_back_its_notifications_not_its_responses() -> None:
    stream = Stream(None, None)
    pipe = await stream.attach(retry_ms=None)
    assert isinstance(pipe, MeteredPipe)
    note = (
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"x" * pipe.limit + b'"}}'
    )
    notified = asyncio.ensure_future(stream.emit(note, response=False))
    await _steps()
    assert not notified.done()  # past the mark: the producer waits for the reader
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    await asyncio.wait_for(stream.emit(answer, response=True), 5)  # never waits (bounded elsewhere)
    assert not notified.done()
    assert pipe.get_nowait() is not None  # the reader takes the notification: the producer goes on
    await asyncio.wait_for(notified, 5)
    assert b'"id":1' in (pipe.get_nowait() or b"")
