"""Two connected in-process transports: what ``Client(server)`` and most tests use."""

from __future__ import annotations

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpframe.transports.base import TransportClosedError

__all__ = ["MemoryTransport", "memory_pair"]


class MemoryTransport:
    """One end of a ``memory_pair``: the bytes objects are handed over, never copied."""

    def __init__(
        self, outgoing: MemoryObjectSendStream[bytes], incoming: MemoryObjectReceiveStream[bytes]
    ) -> None:
        self._outgoing = outgoing
        self._incoming = incoming
        self._closed = False
        self._paused = False

    async def receive(self) -> bytes:
        """The next chunk the other end sent; ``b""`` once it closed (or this end did)."""
        if self._closed:
            return b""
        try:
            return await self._incoming.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return b""

    def send_nowait(self, data: bytes) -> int:
        """Hand ``data`` over if the other end's buffer has room: ``len(data)``, else 0 (nothing taken)."""
        if self._closed:
            raise TransportClosedError("transport is closed")
        if not data:
            return 0
        try:
            self._outgoing.send_nowait(data)
        except anyio.WouldBlock:
            return 0
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise TransportClosedError("the other end of the memory transport is closed") from exc
        return len(data)

    async def send(self, data: bytes) -> None:
        """Hand ``data`` to the other end (waits while its buffer is full)."""
        if self._closed:
            raise TransportClosedError("transport is closed")
        if not data:
            return
        try:
            await self._outgoing.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise TransportClosedError("the other end of the memory transport is closed") from exc

    async def aclose(self) -> None:
        """Close this end: the other end then reads EOF and its sends fail."""
        if self._closed:
            return
        self._closed = True
        self._outgoing.close()
        self._incoming.close()

    def pause_reading(self) -> None:
        """The reader takes no input for now (flow control; see ``transports/base.py``).

        Nothing is read ahead here, so this only records it: the other end's ``send`` waits once the
        buffer between them is full, which is the back-pressure.
        """
        self._paused = True

    def resume_reading(self) -> None:
        """The reader takes input again."""
        self._paused = False

    @property
    def reading_paused(self) -> bool:
        """Whether the reader has paused (``pause_reading`` without a later ``resume_reading``)."""
        return self._paused

    @property
    def closed(self) -> bool:
        """Whether ``aclose`` was called on this end."""
        return self._closed


def memory_pair(max_buffer: int = 64) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports; each buffers up to ``max_buffer`` chunks before ``send`` waits."""
    a_send, b_receive = anyio.create_memory_object_stream[bytes](max_buffer)
    b_send, a_receive = anyio.create_memory_object_stream[bytes](max_buffer)
    return MemoryTransport(a_send, a_receive), MemoryTransport(b_send, b_receive)
