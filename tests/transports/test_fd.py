"""FdTransport in-process: the polled path (pipes) and the threaded path (regular files)."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mcpframe import core
from mcpframe.session import Request, Session
from mcpframe.transports import FdTransport, TransportClosedError

pytestmark = pytest.mark.anyio


async def echo(req: Request) -> object:
    return req.params


def nonblocking(fd: int) -> bool:
    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK)


async def test_pipes_are_polled_and_their_flags_restored() -> None:
    to_session_r, to_session_w = os.pipe()
    from_session_r, from_session_w = os.pipe()
    try:
        transport = FdTransport(to_session_r, from_session_w)
        assert nonblocking(to_session_r)
        assert nonblocking(from_session_w)
        session = Session(transport, request_handler=echo)
        big = {"blob": "y" * 300_000}  # more than a pipe holds: the write has to wait for the reader
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.run)
                frame = core.encode_request(1, "echo", big)
                written = await anyio.to_thread.run_sync(os.write, to_session_w, frame)  # blocking pipe
                assert written == len(frame)
                os.close(to_session_w)  # EOF after the request: the session answers, then ends
                to_session_w = -1
                received = b""
                while not received.endswith(b"\n"):
                    await anyio.wait_readable(from_session_r)
                    received += os.read(from_session_r, 1 << 20)
        assert received == core.encode_result(1, big)
        assert not nonblocking(to_session_r)
        assert not nonblocking(from_session_w)
        with pytest.raises(TransportClosedError):
            await transport.send(b"{}\n")
    finally:
        for fd in (to_session_r, to_session_w, from_session_r, from_session_w):
            if fd >= 0:
                os.close(fd)


async def test_regular_files_use_the_threaded_path(tmp_path: Path) -> None:
    requests = tmp_path / "in.ndjson"
    requests.write_bytes(b"".join(core.encode_request(i, "echo", {"i": i}) for i in range(50)))
    responses = tmp_path / "out.ndjson"
    read_fd = os.open(requests, os.O_RDONLY)
    write_fd = os.open(responses, os.O_WRONLY | os.O_CREAT)
    try:
        with anyio.fail_after(10):
            await Session(FdTransport(read_fd, write_fd, chunk=7), request_handler=echo).run()
    finally:
        os.close(read_fd)
        os.close(write_fd)
    decoder = core.Decoder()
    answers = decoder.feed(responses.read_bytes()) + decoder.close()
    assert {a.id: a.result for a in answers} == {i: {"i": i} for i in range(50)}


async def _turns(count: int = 20) -> None:
    """Let the event loop run ``count`` iterations (each polls the fds without waiting)."""
    for _ in range(count):
        await anyio.sleep(0)


async def test_pause_reading_stops_the_pump_until_resume_reading() -> None:
    read_fd, write_fd = os.pipe()
    out_r, out_w = os.pipe()
    transport = FdTransport(read_fd, out_w)
    chunks: list[bytes] = []

    def take(data: bytes) -> None:
        chunks.append(data)
        if len(chunks) == 1:
            transport.pause_reading()  # from inside the callback, as the Session does

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(transport.pump, take)
                os.write(write_fd, b"first\n")
                while not chunks:
                    await anyio.sleep(0)
                assert transport.reading_paused
                os.write(write_fd, b"second\n")
                await _turns()  # the pipe is readable all along: a registered reader would have run
                assert chunks == [b"first\n"]
                transport.resume_reading()
                while len(chunks) < 2:
                    await anyio.sleep(0)
                assert chunks == [b"first\n", b"second\n"]
                os.close(write_fd)
                write_fd = -1
        await transport.aclose()
    finally:
        for fd in (read_fd, write_fd, out_r, out_w):
            if fd >= 0:
                os.close(fd)


async def test_pause_reading_holds_the_threaded_pump_too(tmp_path: Path) -> None:
    source = tmp_path / "in.bin"
    source.write_bytes(b"abcdef")
    read_fd = os.open(source, os.O_RDONLY)
    out_r, out_w = os.pipe()
    transport = FdTransport(read_fd, out_w, chunk=2)
    chunks: list[bytes] = []

    def take(data: bytes) -> None:
        chunks.append(data)
        transport.pause_reading()

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(transport.pump, take)
                while not chunks:
                    await anyio.sleep(0)
                await _turns()
                assert chunks == [b"ab"]
                for expected in (2, 3):
                    transport.resume_reading()
                    while len(chunks) < expected:
                        await anyio.sleep(0)
                transport.resume_reading()  # on to the end of the file
        assert chunks == [b"ab", b"cd", b"ef"]
        await transport.aclose()
    finally:
        for fd in (read_fd, out_r, out_w):
            os.close(fd)


@pytest.mark.parametrize("then", ["data", "eof"])
async def test_a_readiness_callback_after_its_pump_was_cancelled_does_nothing(then: str) -> None:
    """The race behind ``InvalidStateError`` in ``Client.stdio`` (a child that exits at once).

    Another fd's readiness callback, run first in the same loop iteration, cancels the pump's task: that
    cancels the future the pump awaits at once, but the pump unregisters its reader only when its task
    runs again. The pump's readiness callback, queued in the same iteration, must then leave alone.
    """
    loop = asyncio.get_running_loop()
    trigger_r, trigger_w = os.pipe()
    read_fd, write_fd = os.pipe()
    out_r, out_w = os.pipe()
    transport = FdTransport(read_fd, out_w)
    chunks: list[bytes] = []
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        with anyio.fail_after(10):
            task = loop.create_task(transport.pump(chunks.append))
            await _turns(3)  # the pump has registered its reader

            def cancel_pump() -> None:
                loop.remove_reader(trigger_r)
                task.cancel()

            loop.add_reader(trigger_r, cancel_pump)
            os.write(trigger_w, b"x")  # ready first: epoll reports it first in the next iteration
            if then == "data":
                os.write(write_fd, b"late\n")
            else:
                os.close(write_fd)
                write_fd = -1
            with pytest.raises(asyncio.CancelledError):
                await task
            await _turns()
        assert errors == []
        assert chunks == []  # the data stays in the pipe: nobody reads any more
        await transport.aclose()
    finally:
        loop.set_exception_handler(None)
        for fd in (trigger_r, trigger_w, read_fd, write_fd, out_r, out_w):
            if fd >= 0:
                os.close(fd)
