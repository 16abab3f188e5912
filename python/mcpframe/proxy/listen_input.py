"""A listening proxy child's stdin: a pipe of the proxy's own, written through asyncio's pipe transport.

The pool makes the pipe itself (`os.pipe()`: the read end becomes the child's stdin and is closed here
once the child has it) and connects the write end with `loop.connect_write_pipe`, public asyncio, so the
proxy holds the transport it writes through instead of reaching under anyio's process stream for it.
`ChildInput` is that transport's protocol and the child's writer:

- `write_now(data)`: the fast path. When nothing waits to be written before it (no `write` under way, the
  transport's buffer empty), the bytes go to the pipe with one `os.write`, in the caller's loop turn;
  only what the pipe did not take is handed to the transport, which writes it once the pipe has room.
  `False` (nothing written) otherwise: the caller uses `write`.
- `write(data)`: whole frames, one writer at a time (concurrent POSTs never interleave), then waits while
  the transport holds more than its high-water mark (64 KiB, until it is under the low mark, 16 KiB):
  a child that reads slowly slows its writers, and the memory held is at most that mark plus one write.
- `close()`: the child's cue to exit (EOF once what is buffered was written); `abort()` drops the rest.

A child that dies closes its end of the pipe: the transport sees it (a write fails with `EPIPE`, or the
loop reports the pipe's error) and closes; `write` then raises `anyio.BrokenResourceError` and `write_now`
declines, so requests fail as the caller decides, and the child's stdout ending fails those pending.
"""

from __future__ import annotations

import asyncio
import os

import anyio

__all__ = ["ChildInput"]


class ChildInput(asyncio.BaseProtocol):
    """The child's stdin (see the module doc); connected by `loop.connect_write_pipe`."""

    def __init__(self) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self._fd = -1
        self._lock = anyio.Lock()  # concurrent writers (POSTs) must not interleave their frames
        self._writers = 0  # `write` calls under way or waiting for the lock
        self._paused = False  # the transport's buffer is over its high-water mark
        self._drained: asyncio.Future[None] | None = None  # a `write` waiting for the buffer to drain
        self._lost = False
        self._closed = False  # closed by us (`close`/`abort`): writes raise `ClosedResourceError`

    # ---------------------------------------------------------------- the transport's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self.transport = transport
        self._fd = transport.get_extra_info("pipe").fileno()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._wake()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def _wake(self) -> None:
        waiter = self._drained
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # ---------------------------------------------------------------- writing

    @property
    def buffered(self) -> int:
        """Bytes written to the transport that the pipe has not taken yet."""
        transport = self.transport
        return 0 if transport is None else transport.get_write_buffer_size()

    def write_now(self, data: bytes) -> bool:
        """Write whole frames at once, without a trip through the event loop, when nothing waits to be
        written before them: no `write` is under way and the pipe took everything written so far. `False`
        (nothing written): use `write`, which waits for the child to read (flow control), instead.

        Writing only onto an empty buffer keeps the bound of `write`: at most one body (within the host's
        body limit) sits in the buffer beyond what the child read.

        The bytes go to the pipe's fd with one `os.write` (the transport's buffer is empty, so nothing is
        overtaken); only what the pipe did not take (or a failed write, which the transport then meets and
        reports as its own) is handed to the transport, which writes it once the pipe has room."""
        transport = self.transport
        if transport is None or self._writers or self._closed:
            return False
        if transport.is_closing() or transport.get_write_buffer_size():
            return False
        try:
            written = os.write(self._fd, data)
        except OSError:  # full (BlockingIOError), or the child is gone: the transport's own write decides
            written = 0
        if written < len(data):
            transport.write(data[written:])
        return True

    async def write(self, data: bytes) -> None:
        """Write whole frames (NDJSON) after every write before them; waits while the child reads slowly.
        `anyio.BrokenResourceError` when the child's end is gone, `anyio.ClosedResourceError` after
        `close`."""
        self._writers += 1
        try:
            async with self._lock:
                await self._below_mark()  # a `write_now` may have left a rest over the mark: not on top of it
                self._usable().write(data)
                await self._below_mark()
                self._usable()  # the write failed (EPIPE), or the pipe broke while it waited
        finally:
            self._writers -= 1

    async def _below_mark(self) -> None:
        """Wait while the transport holds more than its high-water mark (until it drains below the low one),
        or until the pipe is lost or closed."""
        while self._paused and not (self._lost or self._closed):
            self._drained = asyncio.get_running_loop().create_future()
            try:
                await self._drained
            finally:
                self._drained = None

    def _usable(self) -> asyncio.WriteTransport:
        transport = self.transport
        if self._closed:
            raise anyio.ClosedResourceError
        if transport is None or self._lost or transport.is_closing():
            raise anyio.BrokenResourceError("the upstream server's stdin is closed (it exited)")
        return transport

    def close(self) -> None:
        """End the child's input: EOF once what is buffered was written (idempotent)."""
        self._closed = True
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def abort(self) -> None:
        """End the child's input now, dropping what is still buffered (the child is gone). Idempotent."""
        self._closed = True
        transport = self.transport
        # (a transport that is closing with nothing buffered is already on its way to `connection_lost`:
        # aborting it again would report the loss twice)
        if transport is not None and (not transport.is_closing() or transport.get_write_buffer_size()):
            transport.abort()
        self._wake()
