"""FdTransport in-process: the polled path (pipes) and the threaded path (regular files)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

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
