"""A transport over a pair of file descriptors: pipes, sockets, or anything ``os.read``/``os.write`` take.

Pipes and sockets (the normal case) are switched to non-blocking mode and polled by the event loop: no
thread hop per message. Their flags are restored on close. On asyncio the read side stays registered with
``loop.add_reader`` while chunks are being consumed (reads happen in the readiness callback, at most
``_READ_AHEAD`` chunks ahead of ``receive``), and ``send_nowait`` writes what the pipe takes at once, so the
Session's answers usually go out without a task switch. ``pause_reading`` unregisters the read side until
``resume_reading`` (the Session's flow control): unread input stays in the pipe and the peer's writes
block. Anything else (a regular file, a terminal) is read by a daemon thread doing blocking ``os.read`` of
``RECEIVE_CHUNK`` bytes, handing each chunk to the event loop (one chunk buffered at most: backpressure; a
daemon, because a read blocked on an idle stdin must never keep the process alive at exit), and written
with ``os.write`` in a worker thread.

``stdio`` (a server on its own stdin/stdout) and ``process`` (a child's pipes) both build on this module.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from collections.abc import Callable
from contextlib import suppress

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from mcpframe.transports.base import RECEIVE_CHUNK, TransportClosedError

if sys.platform != "win32":  # _pollable() is False on Windows, so fcntl is only used on POSIX
    import fcntl

__all__ = ["FdTransport"]


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


def _pollable(fd: int) -> bool:
    if sys.platform == "win32":
        return False
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


_READ_AHEAD = 4  # chunks read before ``receive`` asks for them; past that, reading pauses (backpressure)


class _NonBlocking:
    """A pipe or socket fd in non-blocking mode, polled by the event loop; ``restore`` undoes the mode.

    Reading (asyncio) goes through one readiness callback, ``_on_readable``, registered with
    ``loop.add_reader`` exactly while reading is wanted (``_sync``): not at EOF, not while paused by
    ``pause()``, and in ``read`` mode only while fewer than ``_READ_AHEAD`` chunks wait. In ``pump`` mode
    it hands each chunk to the callback; otherwise it buffers it for ``read``.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, self._flags | os.O_NONBLOCK)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._registered = False
        self._paused = False
        self._chunks: list[bytes] = []
        self._chunk = RECEIVE_CHUNK
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None  # ``read``'s wake-up, or the end of ``pump``
        self._callback: Callable[[bytes], object] | None = None  # set while pumping
        self._view: memoryview | None = None

    @property
    def paused(self) -> bool:
        """Whether ``pause`` stopped reading (until ``resume``)."""
        return self._paused

    def pause(self) -> None:
        """Stop reading: no callback and no read-ahead until ``resume`` (the data waits in the pipe)."""
        self._paused = True
        self._sync()

    def resume(self) -> None:
        """Read again after ``pause``."""
        self._paused = False
        self._sync()

    def _sync(self) -> None:
        """Register the readiness callback exactly while reading is wanted (see the class doc)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        want = not self._eof and not self._paused
        if want and self._callback is None:
            want = len(self._chunks) < _READ_AHEAD
        if want is self._registered:
            return
        self._registered = want
        if want:
            loop.add_reader(self.fd, self._on_readable)
        else:
            loop.remove_reader(self.fd)

    async def read(self, chunk: int) -> bytes:
        """The next chunk (everything read ahead, joined); ``b""`` at EOF; ``OSError`` if reading failed."""
        chunks = self._chunks
        if not chunks and not self._eof:
            loop = self._loop
            if loop is None:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # not asyncio (trio): poll through anyio
                    return await self._read_polled(chunk)
                self._chunk = chunk
                self._loop = loop
                self._sync()
            self._waiter = waiter = loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        if not chunks:
            return b""
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._sync()  # read-ahead may have stopped at _READ_AHEAD: go on
        return data

    async def pump(self, chunk: int, callback: Callable[[bytes], object]) -> None:
        """Call ``callback(data)`` for every chunk, right in the loop's readiness callback, until EOF."""
        if self._chunks:  # read ahead by ``read`` before
            data = b"".join(self._chunks)
            self._chunks.clear()
            callback(data)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio): poll through anyio
            while not self._eof and (data := await self._read_polled(chunk)):
                callback(data)
            return
        if self._eof:
            return
        self._loop = loop
        self._chunk = chunk
        self._callback = callback
        self._waiter = done = loop.create_future()
        self._sync()
        try:
            await done
        finally:
            self._waiter = None
            self._callback = None
            self._eof = True
            self._sync()

    def _on_readable(self) -> None:
        """The readiness callback: read one chunk and hand it to the pump's callback or to ``read``.

        The future it completes may be done already: cancelling the task that awaits it (``pump``'s or
        ``read``'s) cancels the future at once, but that task unregisters this callback only when it runs
        again, and a readiness event queued for the same loop iteration can run first. Then the reader is
        gone: unregister and leave the data in the pipe.
        """
        waiter = self._waiter
        callback = self._callback
        if callback is not None and (waiter is None or waiter.done()):
            self._eof = True  # the pump is over (cancelled): nothing reads any more
            self._sync()
            return
        try:
            data = self._read_chunk(self._chunk)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._eof = True
        elif callback is not None:
            try:
                callback(data)
            except Exception as exc:  # stops reading; ``pump`` raises it
                self._eof = True
                self._sync()
                if waiter is not None and not waiter.done():
                    waiter.set_exception(exc)
            # otherwise nothing _sync depends on changed here (``pause``/``resume`` sync themselves)
            return
        else:
            self._chunks.append(data)
        self._sync()
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _read_polled(self, chunk: int) -> bytes:
        while True:
            try:
                return self._read_chunk(chunk)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)

    def _read_chunk(self, chunk: int) -> bytes:
        """Read up to ``chunk`` bytes into a reused buffer and copy out what came.

        ``os.read(fd, 256 KiB)`` allocates (and the allocator maps, shrinks and unmaps) a 256 KiB object
        per call, ~25 us even when 100 bytes arrive; reading into one buffer costs ~1 us.
        """
        view = self._view
        if view is None or len(view) != chunk:
            self._view = view = memoryview(bytearray(chunk))
        return view[: os.readv(self.fd, (view,))].tobytes()

    def try_write(self, data: bytes) -> int:
        """Write what the fd takes without waiting; how many bytes that was."""
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.fd)

    def restore(self) -> None:
        self._eof = True
        self._sync()  # unregisters the readiness callback
        self._loop = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        with suppress(OSError):
            fcntl.fcntl(self.fd, fcntl.F_SETFL, self._flags)


class FdTransport:
    """A transport on two file descriptors (reading ``read_fd``, writing ``write_fd``); closes neither."""

    def __init__(self, read_fd: int, write_fd: int, *, chunk: int = RECEIVE_CHUNK) -> None:
        self._chunk = chunk
        self._read_fd = read_fd
        self._reader = _FdReader(read_fd, chunk)
        self._polled_in = _NonBlocking(read_fd) if _pollable(read_fd) else None
        self._polled_out = _NonBlocking(write_fd) if _pollable(write_fd) else None
        self._write_fd = write_fd
        self._write_lock = anyio.Lock()
        self._writing = False
        self._write_released = False
        self._closed = False
        self._eof = False
        self._paused = False
        self._unpaused: anyio.Event | None = None  # set by ``resume_reading`` (threaded ``pump``)

    @property
    def read_fd(self) -> int:
        """The descriptor read (for a caller that drives it itself, such as the proxy's thread pump)."""
        return self._read_fd

    @property
    def write_fd(self) -> int:
        """The descriptor written."""
        return self._write_fd

    async def receive(self) -> bytes:
        """The next chunk read from ``read_fd``; ``b""`` at EOF (waits while reading is paused)."""
        if self._closed or self._eof:
            return b""
        if self._polled_in is None:
            return await self._reader.receive()
        try:
            data = await self._polled_in.read(self._chunk)
        except OSError:
            data = b""
        self._eof = not data
        return data

    def send_nowait(self, data: bytes) -> int:
        """Write what ``write_fd`` takes now, without waiting; the number of bytes written (maybe 0).

        0 while a ``send`` is in progress (order is kept) or when ``write_fd`` is not a pipe or socket.
        """
        if self._closed:
            raise TransportClosedError("transport is closed")
        if self._polled_out is None or self._writing:
            return 0
        try:
            return self._polled_out.try_write(data)
        except OSError as exc:
            raise TransportClosedError(f"write failed: {exc}") from exc

    async def pump(self, callback: Callable[[bytes], object]) -> None:
        """Call ``callback(data)`` for every chunk read until EOF (``receive`` without a task switch).

        On a pipe or socket under asyncio the callback runs in the event loop's readiness callback; an
        exception it raises stops reading and is raised here. After ``pump`` returns, ``receive`` is ``b""``.
        """
        if self._closed or self._eof:
            return
        try:
            if self._polled_in is None:
                while data := await self._reader.receive():
                    callback(data)
                    while self._paused and not self._closed and self._unpaused is not None:
                        await self._unpaused.wait()
            else:
                await self._polled_in.pump(self._chunk, callback)
        finally:
            self._eof = True

    def pause_reading(self) -> None:
        """Stop reading ``read_fd`` (flow control, see ``transports/base.py``): no ``pump`` callback and no
        read-ahead until ``resume_reading``, so the peer's writes block once the pipe is full.

        On the threaded path (a regular file or terminal) reading already waits for ``receive``: one chunk
        at most is read ahead.
        """
        if not self._paused:
            self._paused = True
            self._unpaused = anyio.Event()
        if self._polled_in is not None:
            self._polled_in.pause()

    def resume_reading(self) -> None:
        """Read ``read_fd`` again after ``pause_reading``."""
        self._paused = False
        if self._unpaused is not None:
            self._unpaused.set()
        if self._polled_in is not None:
            self._polled_in.resume()

    @property
    def reading_paused(self) -> bool:
        """Whether ``pause_reading`` is in effect."""
        return self._paused

    async def send(self, data: bytes) -> None:
        """Write all of ``data`` to ``write_fd``."""
        if self._closed:
            raise TransportClosedError("transport is closed")
        async with self._write_lock:
            if self._write_released:  # checked under the lock: the owner may have closed ``write_fd``
                raise TransportClosedError("the write side is released")
            self._writing = True
            try:
                if self._polled_out is not None:
                    await self._polled_out.write(data)
                else:
                    await anyio.to_thread.run_sync(_write_all, self._write_fd, data)
            except (OSError, anyio.ClosedResourceError) as exc:  # ClosedResourceError: ``release_write``
                raise TransportClosedError(f"write failed: {exc}") from exc
            finally:
                self._writing = False

    def release_write(self) -> None:
        """Stop writing while reading goes on, so that the owner may close ``write_fd`` now.

        A ``send`` waiting for a pipe or socket ``write_fd`` fails, its mode is restored, later ``send``
        calls raise ``TransportClosedError`` and ``send_nowait`` takes nothing. Idempotent; needs a running
        event loop.
        """
        if self._write_released:
            return
        self._write_released = True
        polled, self._polled_out = self._polled_out, None
        if polled is not None:
            anyio.notify_closing(self._write_fd)
            polled.restore()

    async def aclose(self) -> None:
        """Stop reading and writing; restore the descriptors' modes (they are left open for their owner)."""
        if self._closed:
            return
        self._closed = True
        self._reader.close()
        if self._unpaused is not None:
            self._unpaused.set()  # a threaded ``pump`` held by ``pause_reading`` ends
        for polled in (self._polled_in, self._polled_out):
            if polled is not None:
                polled.restore()
