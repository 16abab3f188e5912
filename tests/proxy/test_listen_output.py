"""`ChildOutput` (`proxy/listen_output.py`), the listening proxy's reader of a child's stdout: its queue is
bounded in bytes as well as in frames, and reading paused before `frames()` started always starts again.
Driven through a fake transport that records pausing, so the bounds are counted, not timed."""

from __future__ import annotations

import asyncio
import json

import anyio
import pytest

from mcpframe.proxy.listen_output import HIGH_WATER, HIGH_WATER_BYTES, LOW_WATER_BYTES, ChildOutput

pytestmark = pytest.mark.anyio

READ = 256 * 1024  # what one read of asyncio's pipe transport carries at most


class _Pipe(asyncio.ReadTransport):
    """A read transport that records pausing and signals resuming."""

    def __init__(self) -> None:
        super().__init__()
        self.paused = False
        self.resumed = asyncio.Event()

    def pause_reading(self) -> None:
        self.paused = True
        self.resumed.clear()

    def resume_reading(self) -> None:
        self.paused = False
        self.resumed.set()


def _note(size: int) -> bytes:
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * size}}
    return json.dumps(note).encode() + b"\n"


async def test_a_stuck_reader_holds_back_big_frames_by_their_bytes() -> None:
    output, pipe = ChildOutput(), _Pipe()
    output.connection_made(pipe)
    output.data_received(_note(1))
    frames = output.frames(max_frame=64 << 20)
    with anyio.fail_after(5):
        await anext(frames)  # the bridge read a frame, and now waits on a slow client
    stream = _note(1 << 20) * 8
    fed = 0
    while not pipe.paused and fed < len(stream):  # the pipe is read for as long as it is not paused
        output.data_received(stream[fed : fed + READ])
        fed += READ
    assert pipe.paused
    assert fed <= HIGH_WATER_BYTES + len(_note(1 << 20)) + READ  # not 256 frames of 1 MiB
    peak = 0

    async def produce() -> None:  # the rest of the stream, read whenever reading is not paused
        nonlocal fed, peak
        while fed < len(stream):
            await pipe.resumed.wait()
            output.data_received(stream[fed : fed + READ])
            fed += READ
            peak = max(peak, output._bytes)
        output.connection_lost(None)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            sizes = [len(item.raw) async for item in frames]  # the reader catches up
    assert sizes == [len(_note(1 << 20)) - 1] * 8  # every frame, whole
    assert peak <= HIGH_WATER_BYTES + len(_note(1 << 20)) + READ
    assert output._bytes == 0


async def test_reading_paused_before_the_reader_started_starts_again() -> None:
    output, pipe = ChildOutput(), _Pipe()
    output.connection_made(pipe)
    output.data_received(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"d":"')
    for _ in range(HIGH_WATER + 5):  # one frame in many small writes, read before anyone reads
        output.data_received(b"x" * 10)
    assert pipe.paused
    frames = output.frames(max_frame=1 << 20)
    waiting = asyncio.ensure_future(anext(frames))
    with anyio.fail_after(5):
        await pipe.resumed.wait()  # no whole frame came of them: reading must go on
    output.data_received(b'"}}\n')
    with anyio.fail_after(5):
        item = await waiting
    assert item.method == "notifications/message"
    output.connection_lost(None)
    with anyio.fail_after(5):
        assert [item async for item in frames] == []


async def test_early_bytes_pause_reading_too() -> None:
    output, pipe = ChildOutput(), _Pipe()
    output.connection_made(pipe)
    fed = 0
    while not pipe.paused and fed < 4 * HIGH_WATER_BYTES:
        output.data_received(b"y" * (LOW_WATER_BYTES // 2))
        fed += LOW_WATER_BYTES // 2
    assert pipe.paused
    assert fed <= HIGH_WATER_BYTES
