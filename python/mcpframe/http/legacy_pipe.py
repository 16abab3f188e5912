"""The byte queues of a legacy HTTP+SSE session (2024-11-05): bounded both ways, so a slow side waits.

A legacy session has one Session and two queues: POST bodies in (`LegacyTransport.feed`), SSE events out
(read by the GET `/sse` response). Both are bounded in bytes, and a full queue makes its writer wait
instead of growing: a client that stops reading its stream stops the session's writes, then (through the
Session's own outbox bound) its handlers and its reading; a client that posts faster than the session
reads waits for its `202`.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcpframe.transports.base import TransportClosedError

from .pipe import BoundedPipe
from .streams import format_event

__all__ = ["BoundedPipe", "LegacyTransport"]  # BoundedPipe: re-exported from .pipe


class LegacyTransport:
    """The Session's pipe in a legacy SSE session: POSTed frames in, SSE `message` events out.

    `inbound` holds at most `max_body` bytes of posted frames (one body always fits, since no body is
    longer); `outbound` holds at most `max_events` bytes of formatted events, the same bound as the
    Session's outbox, so what a stalled reader costs is two outbox bounds per session.
    """

    def __init__(self, *, max_body: int, max_events: int) -> None:
        self.inbound = BoundedPipe(max_body)
        self.outbound = BoundedPipe(max_events)

    async def feed(self, frames: bytes) -> bool:
        """Queue posted NDJSON frames for the Session (waits for room); `False` once the session ended."""
        return await self.inbound.put(frames)

    def end_input(self) -> None:
        """No more POSTs: the Session reads its end of input and finishes what runs (a shutdown)."""
        self.inbound.close()

    async def receive(self) -> bytes:
        """The next posted frames; `b""` once the session ends."""
        chunk = await self.inbound.get()
        return chunk or b""

    async def send(self, data: bytes) -> None:
        """Each frame as one SSE `message` event, queued for the stream (waits while it is full).

        The Session hands over what its outbox joined (up to its mark and more), so the events are queued
        in pieces of at most the queue's bound: the queue never holds more, unless one event is longer.
        """
        outbound = self.outbound
        if b"\n" not in data.rstrip(b"\n"):
            pieces = [format_event(data)]
        else:
            pieces = _pieces((format_event(f) for f in data.split(b"\n") if f), outbound.limit)
        for piece in pieces:
            if not await outbound.put(piece):
                raise TransportClosedError("the SSE stream of this session is closed")

    async def aclose(self) -> None:
        """Idempotent: the stream ends after the events already queued."""
        self.inbound.close()
        self.outbound.close()


def _pieces(events: Iterable[bytes], limit: int) -> list[bytes]:
    """The events joined into as few pieces as fit in `limit` bytes each (an event is never cut)."""
    pieces: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for event in events:
        if current and size + len(event) > limit:
            pieces.append(b"".join(current))
            current, size = [], 0
        current.append(event)
        size += len(event)
    if current:
        pieces.append(b"".join(current))
    return pieces
