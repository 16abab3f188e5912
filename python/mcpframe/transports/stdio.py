"""stdio: a server on its own stdin/stdout (with stdout protection), and child processes (``spawn``).

Reading: a daemon thread does blocking ``os.read`` of ``RECEIVE_CHUNK`` bytes on the input fd and hands each
chunk to the event loop (one chunk buffered at most: backpressure). A daemon thread, because a read blocked on
an idle stdin must never keep the process alive at exit. Writing: ``os.write`` in a worker thread, so a full
pipe never stalls the event loop.

Stdout protection: while ``stdio_server()`` is open the protocol writes to a private duplicate of fd 1, and
fd 1 itself (and ``sys.stdout``) point at stderr, so ``print()``, C extensions and child processes that write
to stdout cannot corrupt the wire. Everything is restored on exit.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from mcpframe.transports.base import RECEIVE_CHUNK, TransportClosedError
from mcpframe.transports.process import ProcessTransport, spawn

__all__ = ["FdTransport", "ProcessTransport", "spawn", "stdio_server"]


class _FdReader:
    """Blocking reads on ``fd`` in a daemon thread, delivered to the event loop one chunk at a time."""

    def __init__(self, fd: int, chunk: int) -> None:
        self._fd = fd
        self._chunk = chunk
        self._send, self._receive = anyio.create_memory_object_stream[bytes](1)
        self._started = False
        self._eof = False

    def _run(self, token: anyio.lowlevel.EventLoopToken) -> None:
        while True:
            try:
                data = os.read(self._fd, self._chunk)
            except OSError:
                data = b""
            try:
                anyio.from_thread.run(self._send.send, data, token=token)
            except Exception:  # the loop is gone or the transport was closed: stop reading
                return
            if not data:
                return

    async def receive(self) -> bytes:
        if self._eof:
            return b""
        if not self._started:
            self._started = True
            token = anyio.lowlevel.current_token()
            name = f"mcpframe-read-fd{self._fd}"
            threading.Thread(target=self._run, args=(token,), name=name, daemon=True).start()
        try:
            data = await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            data = b""
        if not data:
            self._eof = True
        return data

    def close(self) -> None:
        self._eof = True
        self._receive.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FdTransport:
    """A transport on two file descriptors (reading ``read_fd``, writing ``write_fd``); closes neither."""

    def __init__(self, read_fd: int, write_fd: int, *, chunk: int = RECEIVE_CHUNK) -> None:
        self._reader = _FdReader(read_fd, chunk)
        self._write_fd = write_fd
        self._write_lock = anyio.Lock()
        self._closed = False

    async def receive(self) -> bytes:
        """The next chunk read from ``read_fd``; ``b""`` at EOF."""
        if self._closed:
            return b""
        return await self._reader.receive()

    async def send(self, data: bytes) -> None:
        """Write all of ``data`` to ``write_fd``."""
        if self._closed:
            raise TransportClosedError("transport is closed")
        async with self._write_lock:
            try:
                await anyio.to_thread.run_sync(_write_all, self._write_fd, data)
            except OSError as exc:
                raise TransportClosedError(f"write failed: {exc}") from exc

    async def aclose(self) -> None:
        """Stop reading and writing (the descriptors are left open for their owner)."""
        self._closed = True
        self._reader.close()


@asynccontextmanager
async def stdio_server(*, protect_stdout: bool = True) -> AsyncIterator[FdTransport]:
    """The process's own stdin/stdout as a transport, with stdout protection (see the module doc)."""
    with suppress(Exception):
        sys.stdout.flush()
    wire_fd = os.dup(1)
    saved_stdout = sys.stdout
    if protect_stdout:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    transport = FdTransport(0, wire_fd)
    try:
        yield transport
    finally:
        await transport.aclose()
        if protect_stdout:
            with suppress(Exception):
                sys.stdout.flush()
            sys.stdout = saved_stdout
            os.dup2(wire_fd, 1)
        os.close(wire_fd)
