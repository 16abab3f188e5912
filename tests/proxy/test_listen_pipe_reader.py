"""`PipeReader` (`proxy/listen_output.py`), the transport of a listening proxy child's stdout: every byte
reaches its protocol once and in order (also more than one read's worth, read into the one buffer it
keeps), nothing while reading is paused, and the end of the pipe, or `close`, ends the protocol's
connection once and closes the pipe."""

from __future__ import annotations

import asyncio
import os

import anyio
import pytest

from mcpframe.proxy.listen_output import READ_SIZE, PipeReader

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Recorder(asyncio.Protocol):
    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.lost: list[Exception | None] = []
        self.got = asyncio.Event()
        self.ended = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.got.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.append(exc)
        self.ended.set()


async def _until(recorder: _Recorder, size: int) -> None:
    while sum(map(len, recorder.chunks)) < size:
        recorder.got.clear()
        await recorder.got.wait()


async def test_every_byte_arrives_in_order_and_the_end_closes_the_pipe() -> None:
    read_fd, write_fd = os.pipe()
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    recorder = _Recorder()
    reader = PipeReader(asyncio.get_running_loop(), pipe, recorder)
    sent = b"".join(b"%07d\n" % n for n in range(READ_SIZE // 4))  # two reads' worth at least
    os.set_blocking(write_fd, False)
    with anyio.fail_after(10):
        view = memoryview(sent)
        while view:  # as the child writes: what the pipe takes, then the rest once it was read
            try:
                view = view[os.write(write_fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(write_fd)
            await anyio.sleep(0)
        await _until(recorder, len(sent))
        os.close(write_fd)  # the child exits
        await recorder.ended.wait()
    assert b"".join(recorder.chunks) == sent
    assert len(recorder.chunks) >= 2
    assert all(len(chunk) <= READ_SIZE for chunk in recorder.chunks)
    assert recorder.lost == [None]
    assert reader.is_closing()
    assert pipe.closed


async def test_nothing_is_read_while_paused_and_close_ends_it_once() -> None:
    read_fd, write_fd = os.pipe()
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    recorder = _Recorder()
    reader = PipeReader(asyncio.get_running_loop(), pipe, recorder)
    try:
        with anyio.fail_after(10):
            reader.pause_reading()
            assert not reader.is_reading()
            os.write(write_fd, b"held\n")
            for _ in range(5):  # loop turns in which a registered reader would have read it
                await anyio.sleep(0)
            assert recorder.chunks == []
            reader.resume_reading()
            assert reader.is_reading()
            await _until(recorder, 5)
            assert recorder.chunks == [b"held\n"]
            reader.close()
            reader.close()
            await recorder.ended.wait()
            await anyio.sleep(0)
    finally:
        os.close(write_fd)
    assert recorder.lost == [None]
    assert pipe.closed


async def test_a_protocol_that_closes_its_reader_then_raises_is_ended_once() -> None:
    """`data_received` closes the transport, then raises: `connection_lost` comes once (the close's)."""
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    lost: list[BaseException | None] = []

    class Closing(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.transport.close()
            raise RuntimeError("boom")

        def connection_lost(self, exc: BaseException | None) -> None:
            lost.append(exc)

    PipeReader(loop, os.fdopen(read_fd, "rb", buffering=0), Closing())
    os.write(write_fd, b"x\n")
    for _ in range(20):
        await asyncio.sleep(0)
    os.close(write_fd)
    assert lost == [None]


async def test_a_loop_with_no_readers_falls_back_to_asyncio_s_pipe_transport_before_connecting() -> None:
    """`add_reader` raising (Windows' Proactor loop) leaves the protocol unconnected: the caller falls
    back to asyncio's pipe transport."""
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    made: list[object] = []

    class Proto(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            made.append(transport)

    pipe = os.fdopen(read_fd, "rb", buffering=0)

    def no_readers(*args: object) -> None:
        raise NotImplementedError

    real = loop.add_reader
    loop.add_reader = no_readers  # type: ignore[method-assign]
    try:
        with pytest.raises(NotImplementedError):
            PipeReader(loop, pipe, Proto())
    finally:
        loop.add_reader = real  # type: ignore[method-assign]
        pipe.close()
        os.close(write_fd)
    assert made == []
