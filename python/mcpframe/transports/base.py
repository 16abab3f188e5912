"""The transport seam: a byte pipe that a Session reads chunks from and writes NDJSON frames to.

A transport knows nothing about JSON-RPC. ``receive`` returns whatever bytes are available (any size, frames
may be split anywhere), ``b""`` at end of stream; ``send`` writes one or more whole frames.

Optional methods (the Session looks for them with ``getattr``; an attribute set to ``None`` counts as absent):

- ``send_nowait(data) -> int`` writes what can be written at once, without waiting, and returns how many
  bytes that was (the Session hands the rest to ``send``, keeping the order).
- ``async pump(callback)`` calls ``callback(chunk)`` for every chunk as it arrives (in place of
  ``receive``) and returns at end of stream. The Session uses it only on a transport that also has the
  next two methods, since it must be able to stop the callbacks.
- ``pause_reading()`` / ``resume_reading()``: flow control. The Session calls ``pause_reading()`` when it
  takes no more input for now (its handlers are at their bound, or the peer is not reading its answers) and
  ``resume_reading()`` when it takes input again; both are synchronous and idempotent. Between them a
  transport with ``pump`` calls no callback, and any transport should stop reading ahead, so the bytes stay
  in the pipe and the peer's writes block (back-pressure). Without them the Session still stops calling
  ``receive`` while paused; only read-ahead inside the transport goes on.
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
