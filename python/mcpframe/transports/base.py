"""The transport seam: a byte pipe that a Session reads chunks from and writes NDJSON frames to.

A transport knows nothing about JSON-RPC. ``receive`` returns whatever bytes are available (any size, frames
may be split anywhere), ``b""`` at end of stream; ``send`` writes one or more whole frames.

Two optional methods make the Session's hot path cheaper (it looks for them with ``getattr``):
``send_nowait(data) -> int`` writes what can be written at once, without waiting, and returns how many bytes
that was (the Session hands the rest to ``send``, keeping the order); ``async pump(callback)`` calls
``callback(chunk)`` for every chunk as it arrives (in place of ``receive``) and returns at end of stream.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["RECEIVE_CHUNK", "Transport", "TransportClosedError"]

RECEIVE_CHUNK = 256 * 1024
"""How many bytes the byte-stream transports ask the OS for per read."""


class TransportClosedError(ConnectionError):
    """``send`` on a transport whose other end is gone, or that was closed."""


@runtime_checkable
class Transport(Protocol):
    """A connection carrying NDJSON frames (see ``docs/session-api.md``)."""

    async def receive(self) -> bytes:
        """Return the next chunk of bytes (any size); ``b""`` at end of stream and after it."""
        ...

    async def send(self, data: bytes) -> None:
        """Write all of ``data`` (whole frames); raise ``TransportClosedError`` if that is impossible."""
        ...

    async def aclose(self) -> None:
        """Close the transport. Idempotent."""
        ...
