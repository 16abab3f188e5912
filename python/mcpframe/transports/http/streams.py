"""SSE streams: one per POST that carries requests, plus the standalone GET stream of an HTTP session.

A `Stream` receives JSON-RPC frames from the server side and hands them to whichever HTTP response is
attached to it. On a resumable stream every event is first stored (`EventStore`) under an id naming the
stream, so a client that lost the connection resumes with `GET` + `Last-Event-ID`; the server may also close
the connection on purpose (SSE polling, 2025-11-25) after telling the client how long to wait (`retry`).
"""

from __future__ import annotations

import asyncio
import math
import secrets

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .events import EventStore

__all__ = ["KEEPALIVE", "Stream", "format_event", "new_stream_id"]

KEEPALIVE = b": keepalive\n\n"


def new_stream_id() -> str:
    """A fresh, unguessable stream id (URL-safe, never containing the event-id separator)."""
    return secrets.token_urlsafe(12)


def format_event(frame: bytes, event_id: str | None = None) -> bytes:
    """One SSE `message` event carrying one JSON-RPC frame (its trailing newline dropped)."""
    data = frame.rstrip(b"\r\n")
    if b"\n" in data or b"\r" in data:  # never from the core encoders, but SSE data lines must not break
        data = b"\ndata: ".join(data.splitlines())
    head = b"" if event_id is None else b"id: " + event_id.encode() + b"\n"
    return head + b"event: message\ndata: " + data + b"\n\n"


def _priming(event_id: str, retry_ms: int) -> bytes:
    return b"id: " + event_id.encode() + b"\nretry: " + str(retry_ms).encode() + b"\ndata: \n\n"


def _pipe() -> tuple[MemoryObjectSendStream[bytes], MemoryObjectReceiveStream[bytes]]:
    send: MemoryObjectSendStream[bytes]
    receive: MemoryObjectReceiveStream[bytes]
    send, receive = anyio.create_memory_object_stream(math.inf)  # unsubscripted: no typing alias per call
    return send, receive


class Stream:
    """Frames on their way to an SSE response; resumable when it has a store and a session id."""

    def __init__(
        self,
        session_id: str | None,
        store: EventStore | None,
        *,
        buffer_until_attached: bool = True,
    ) -> None:
        self.id = new_stream_id()
        self.session_id = session_id
        self.store = store if session_id is not None else None
        # asyncio primitives (the Sessions behind the streams run on asyncio): cheaper than anyio's, and an
        # uncontended lock is taken without a trip through the event loop
        self.finished = asyncio.Event()
        self.wake = asyncio.Event()  # set by a frame that is not a response, and by finish()
        self.attached_once = False
        self._buffering = buffer_until_attached
        self._backlog: list[tuple[str | None, bytes, bool]] = []
        self.saw_other = False  # a frame that is not a response was emitted (the answer must be SSE)
        self._listener: MemoryObjectSendStream[bytes] | None = None
        self._reader: MemoryObjectReceiveStream[bytes] | None = None
        self._lock = asyncio.Lock()
        self._priming_id: str | None = None

    @property
    def resumable(self) -> bool:
        """Whether its events are stored and can be replayed."""
        return self.store is not None

    @property
    def attached(self) -> bool:
        """Whether an HTTP response is reading it right now."""
        return self._listener is not None

    async def open(self) -> None:
        """Reserve the priming event's id, so that it precedes every other event of the stream."""
        if self.store is not None and self.session_id is not None:
            self._priming_id = await self.store.store(self.session_id, self.id, None)

    def response_frames(self) -> list[bytes]:
        """The responses emitted before any HTTP response attached (the body of a plain JSON answer)."""
        return [frame for _, frame, response in self._backlog if response]

    async def emit(self, frame: bytes, *, response: bool) -> None:
        """Store the frame (if resumable) and deliver it to the attached response, or keep it for later."""
        async with self._lock:
            event_id: str | None = None
            if self.store is not None and self.session_id is not None:
                event_id = await self.store.store(self.session_id, self.id, frame)
            if self._listener is not None:
                self._deliver(self._listener, format_event(frame, event_id))
            elif self._buffering and not self.attached_once:
                self._backlog.append((event_id, frame, response))
        if not response:
            self.saw_other = True
            self.wake.set()

    def _deliver(self, listener: MemoryObjectSendStream[bytes], chunk: bytes) -> None:
        try:
            listener.send_nowait(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            if self._listener is listener:
                self._listener = self._reader = None

    def finish(self) -> None:
        """No more frames: attached responses end once they have written what they hold."""
        self.finished.set()
        self.wake.set()
        if self._listener is not None:
            self._listener.close()
            self._listener = self._reader = None

    async def attach(self, *, retry_ms: int | None) -> MemoryObjectReceiveStream[bytes]:
        """Start an HTTP response on this stream: the priming event (if `retry_ms`), then the backlog."""
        async with self._lock:
            send, receive = _pipe()
            if retry_ms is not None and self.store is not None and self.session_id is not None:
                if self._priming_id is None or self.attached_once:
                    self._priming_id = await self.store.store(self.session_id, self.id, None)
                send.send_nowait(_priming(self._priming_id, retry_ms))
            for event_id, frame, _ in self._backlog:
                send.send_nowait(format_event(frame, event_id))
            self._backlog.clear()
            self.attached_once = True
            self._connect(send, receive)
            return receive

    async def resume(self, last_event_id: str) -> MemoryObjectReceiveStream[bytes] | None:
        """Reattach after `last_event_id`: replay what followed it, then go on live. `None`: unknown id."""
        if self.store is None or self.session_id is None:
            return None
        async with self._lock:
            replay = await self.store.replay(self.session_id, last_event_id)
            if replay is None or replay.stream_id != self.id:
                return None
            send, receive = _pipe()
            for event_id, frame in replay.events:
                send.send_nowait(format_event(frame, event_id))
            self.attached_once = True
            self._backlog.clear()
            self._connect(send, receive)
            return receive

    def _connect(
        self, send: MemoryObjectSendStream[bytes], receive: MemoryObjectReceiveStream[bytes]
    ) -> None:
        if self._listener is not None:
            self._listener.close()  # a newer connection replaces the old one
        if self.finished.is_set():
            send.close()
            self._listener = self._reader = None
        else:
            self._listener, self._reader = send, receive

    def detach(self, receive: MemoryObjectReceiveStream[bytes]) -> None:
        """The HTTP response reading `receive` ended (client gone, or the server closed it)."""
        receive.close()
        if self._reader is receive:
            if self._listener is not None:
                self._listener.close()
            self._listener = self._reader = None
