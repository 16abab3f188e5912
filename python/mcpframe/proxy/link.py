"""The forwarder's ends: an upstream connection, ordered writes that skip the event loop when they can,
and a read loop that routes each chunk in the transport's own read callback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio

__all__ = ["Sink", "SinkNowait", "Source", "UpstreamLink", "Writer", "read_through"]

Sink = Callable[[bytes], Awaitable[None]]
"""Where a session's outgoing bytes go (whole NDJSON frames); awaiting it is the back-pressure."""
SinkNowait = Callable[[bytes], int]
"""Writes what its destination takes at once, without waiting; returns how many bytes that was."""


class UpstreamLink(Protocol):
    """One connection to the upstream server (a stdio child, a remote endpoint).

    A link may also offer the thread pump (`mcpframe.proxy.pump`): a `writer` attribute (a `ThreadWriter`
    the forwarder then writes through) and `pump_thread(step)` (reads it in a thread), as
    `ChildUpstream(threaded=True)` does; the forwarder uses them when they are not `None`.
    """

    async def send(self, data: bytes) -> None:
        """Write whole frames; `TransportClosedError` when the upstream is gone."""
        ...

    async def receive(self) -> bytes:
        """The next chunk of the upstream's output; `b""` once it ended."""
        ...

    async def close_input(self) -> None:
        """End the upstream's input (a stdio server exits at EOF); its output is still read."""
        ...

    async def wait(self) -> int:
        """Wait for the upstream to end; its exit status (128 + n for a signal n)."""
        ...

    async def aclose(self) -> None:
        """End the upstream now (its whole process group for a child). Idempotent."""
        ...


class Writer:
    """Ordered writes to one destination: at once when it takes them (`send_nowait`: no task switch, the
    common case), else the rest awaited behind the writes already waiting (FIFO lock: back-pressure)."""

    __slots__ = ("_lock", "_nowait", "_send", "_waiting")

    def __init__(self, send: Sink, send_nowait: SinkNowait | None) -> None:
        self._send = send
        self._nowait = send_nowait
        self._lock = anyio.Lock()
        self._waiting = 0

    def write_nowait(self, data: bytes) -> bytes:
        """Write what goes at once; a non-empty rest keeps its place and must go to `write_rest`."""
        if not self._waiting and self._nowait is not None:
            written = self._nowait(data)
            if written == len(data):
                return b""
            data = data[written:]
        self._waiting += 1
        return data

    async def write_rest(self, data: bytes) -> None:
        """Write what `write_nowait` left, after the writes that were waiting before it."""
        try:
            async with self._lock:
                await self._send(data)
        finally:
            self._waiting -= 1

    async def write(self, data: bytes) -> None:
        if rest := self.write_nowait(data):
            await self.write_rest(rest)


class Source(Protocol):
    """Anything read chunk by chunk (`b""` at its end): an upstream, a client's transport."""

    async def receive(self) -> bytes:
        """The next chunk; `b""` at the end."""
        ...


async def read_through(source: Source, handle: Callable[[bytes], Awaitable[None] | None]) -> None:
    """Hand each chunk of `source` to `handle` until its end; while an awaitable `handle` returned is
    pending, `source` is not read (back-pressure).

    A source with `pump` and `pause_reading`/`resume_reading` (a pipe: `FdTransport`) is read in the event
    loop's readiness callback, so a chunk that goes straight through costs no task switch; others are read
    with `receive`.
    """
    pump = getattr(source, "pump", None)
    pause = getattr(source, "pause_reading", None)
    resume = getattr(source, "resume_reading", None)
    if pump is None or pause is None or resume is None:
        while chunk := await source.receive():
            if (rest := handle(chunk)) is not None:
                await rest
        return

    async with anyio.create_task_group() as group:

        async def settle(rest: Awaitable[None]) -> None:
            try:
                await rest
            finally:
                resume()

        def on_chunk(chunk: bytes) -> None:
            if (rest := handle(chunk)) is not None:
                pause()
                group.start_soon(settle, rest)

        with contextlib.suppress(OSError):  # a read error ends the stream like an EOF
            await pump(on_chunk)
