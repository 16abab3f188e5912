"""SSE streams: one per POST that carries requests, plus the standalone GET stream of an HTTP session.

A `Stream` receives JSON-RPC frames from the server side and hands them to whichever HTTP response is
attached to it. On a resumable stream every event is first stored (`EventStore`) under an id naming the
stream, so a client that lost the connection resumes with `GET` + `Last-Event-ID`; the server may also close
the connection on purpose (SSE polling, 2025-11-25) after telling the client how long to wait (`retry`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Callable, Iterable

from .events import EventStore, MemoryEventStore, store_now
from .pipe import SSE_HIGH_WATER, MeteredPipe, Pipe
from .store import StoreUnavailable

__all__ = [
    "KEEPALIVE",
    "DirectPipe",
    "Stream",
    "answer_events",
    "events_now",
    "format_event",
    "new_stream_id",
]

KEEPALIVE = b": keepalive\n\n"

logger = logging.getLogger("mcpframe.http")


class _Ids:
    """Randomness for stream ids, drawn from `secrets` 256 ids at a time (see `new_stream_id`)."""

    size = 12  # bytes per id
    batch = b""
    taken = 0  # bytes of `batch` already used

    @classmethod
    def forget(cls) -> None:
        """A forked child draws its own: two processes must never hand out the same ids."""
        cls.batch, cls.taken = b"", 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_Ids.forget)


def new_stream_id() -> str:
    """A fresh, unguessable stream id: 12 bytes of `secrets` randomness in hex (URL-safe, never containing
    the event-id separator).

    Every POST with requests gets a stream: the bytes are drawn 256 ids at a time, since one
    `secrets.token_urlsafe` per id (a system call and a base64 round) cost more than the rest of a stream.
    """
    ids = _Ids
    start = ids.taken
    if start >= len(ids.batch):
        ids.batch, start = secrets.token_bytes(ids.size * 256), 0
    ids.taken = start + ids.size
    return ids.batch[start : ids.taken].hex()


def format_event(frame: bytes, event_id: str | None = None) -> bytes:
    """One SSE `message` event carrying one JSON-RPC frame (its trailing newline dropped)."""
    data = frame.rstrip(b"\r\n")
    # never from the core encoders, but SSE data lines must not break (`find`: see wire.py's header check)
    if data.find(b"\n") >= 0 or data.find(b"\r") >= 0:
        data = b"\ndata: ".join(data.splitlines())
    head = b"" if event_id is None else b"id: " + event_id.encode() + b"\n"
    return head + b"event: message\ndata: " + data + b"\n\n"


def _priming(event_id: str, retry_ms: int) -> bytes:
    return b"id: " + event_id.encode() + b"\nretry: " + str(retry_ms).encode() + b"\ndata: \n\n"


def events_now(
    store: Callable[[str, str, bytes | None], str] | None,
    session_id: str | None,
    stream_id: str,
    frames: Iterable[bytes],
    retry_ms: int | None,
) -> tuple[str | None, bytes]:
    """The first events of the stream `stream_id`: a priming event if `retry_ms`, then `frames`, each stored
    first (`store`: the memory store's `store_now`) when the stream is resumable (a store and a session);
    with the priming event's id (`None`: none). What `Stream.attach` writes first, made without waiting."""
    if store is None or session_id is None:
        return None, b"".join([format_event(frame) for frame in frames])
    chunks: list[bytes] = []
    priming_id = None
    if retry_ms is not None:
        priming_id = store(session_id, stream_id, None)
        chunks.append(_priming(priming_id, retry_ms))
    for frame in frames:
        chunks.append(format_event(frame, store(session_id, stream_id, frame)))
    return priming_id, b"".join(chunks)


_ANSWER_EVENTS = b"id: %s.%d\nretry: %d\ndata: \n\nid: %s.%d\nevent: message\ndata: %s\n\n"
"""A priming event and an answer's event (`_priming`, `format_event`), formatted at once."""


def answer_events(
    store: EventStore | None, session_id: str | None, frame: bytes, retry_ms: int | None
) -> bytes:
    """The whole body of a new stream whose one event is a request's answer `frame`: `events_now`'s for
    `(frame,)`, with the memory store's two events stored in one call (`store_answer_now`) and formatted
    at once when the stream is primed and `frame` is one line (the common case: ~6k instructions less per
    SSE answer than a `store_now` and a `format_event` per event). A subclass of the memory store keeps
    its own `store_now` (`events_now`)."""
    if retry_ms is not None and session_id is not None and type(store) is MemoryEventStore:
        data = frame.rstrip(b"\r\n")
        if data.find(b"\n") < 0 and data.find(b"\r") < 0:  # (else `format_event` splits it over lines)
            stream_id = new_stream_id()
            seq = store.store_answer_now(session_id, stream_id, frame)
            name = stream_id.encode()
            return _ANSWER_EVENTS % (name, seq, retry_ms, name, seq + 1, data)
    return events_now(store_now(store), session_id, new_stream_id(), (frame,), retry_ms)[1]


class DirectPipe(Pipe):
    """A pipe nobody reads from: what is put goes on to the socket at once (the lean server's SSE writer,
    `sse_wire`), so a producer waits for room on the socket (`room`) rather than for a reader."""

    __slots__ = ()

    def put(self, data: bytes, *, last: bool = False) -> bool:
        """`Pipe.put`; `last`: the stream finishes right after this (its `close` follows within the same
        step, unless the producer waits for `room` first), so `data` may wait to be written with the end."""
        return super().put(data)

    def room(self) -> asyncio.Future[None] | None:
        """A future done once the client can take more (`None`: it can now)."""
        return None


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
        # frames emitted before any response attached: stored (if resumable) only once one attaches, so a POST
        # answered with plain JSON stores nothing. Bounded by what its client takes (`for_client`): SSE, past
        # `SSE_HIGH_WATER` bytes the producers of what is not a response wait (`_backlog_room`) until a
        # response attaches or the stream ends; JSON only, nothing but responses is kept
        self._backlog: list[tuple[bytes, bool]] = []
        self._backlog_size = 0
        self._backlog_rooms: list[asyncio.Future[None]] = []  # one per waiting producer (as `MeteredPipe`)
        self._keep_others = True
        self._bounded = False
        self.saw_other = False  # a frame that is not a response was emitted (the answer must be SSE)
        self._pipe: Pipe | None = None  # to the attached HTTP response
        self._lock = asyncio.Lock()
        # once anything took the lock (attach, resume, a frame for an attached response), every frame does;
        # before, a frame kept for later needs no lock: that is nothing awaited, in order
        self._serialized = False
        self._priming_id: str | None = None
        # called (at most once: it is cleared first) when `wake` is set: by the frame that is not a
        # response, or by `finish` (the last thing it does). For a POST whose answer waits without a task
        # (`fast.py`); what it raises is logged, never passed on to whoever woke it (`Exchange.close`
        # finishes the stream before its own `on_close` work: an admission slot, the session's streams)
        self.on_wake: Callable[[], None] | None = None

    @property
    def resumable(self) -> bool:
        """Whether its events are stored and can be replayed."""
        return self.store is not None

    @property
    def attached(self) -> bool:
        """Whether an HTTP response is reading it right now."""
        return self._pipe is not None

    def queued(self) -> int:
        """Events waiting to be written to the attached response (0 when none is attached): what a
        producer that must not outrun a slow client (the proxy's bridge) watches."""
        pipe = self._pipe
        return pipe.queued() if pipe is not None else 0

    def held(self) -> int:
        """Bytes the attached response's pipe holds, not yet written to its client (0 when none is
        attached, or its pipe counts none): what a producer that must not wait for one slow client (the
        proxy's shared stateless child, `emit(wait=False)`) watches instead."""
        pipe = self._pipe
        return pipe.size if isinstance(pipe, MeteredPipe) else 0

    def taken(self) -> int:
        """Bytes the attached response's client ever took from its pipe (0 when none is attached, or its
        pipe counts none): rising while it reads, however slowly."""
        pipe = self._pipe
        return pipe.taken if isinstance(pipe, MeteredPipe) else 0

    def drop_unsent(self) -> None:
        """Drop the events the attached response has not written yet (a client cut for reading too slowly
        gets its error event alone, and the proxy stops holding what it would never take)."""
        pipe = self._pipe
        if isinstance(pipe, MeteredPipe):
            pipe.clear()

    def response_frames(self) -> list[bytes]:
        """The responses emitted before any HTTP response attached (the body of a plain JSON answer)."""
        return [frame for frame, response in self._backlog if response]

    def for_client(self, *, sse: bool) -> None:
        """What its client takes, told before the stream's first frame by the answer's owner.

        `sse=False` (plain JSON only): it can never receive a frame that is not a response (a log, progress,
        a request of the handler), so none is kept for it, however many the handler sends. `sse=True`:
        past `SSE_HIGH_WATER` bytes kept before a response attaches, the producer of what is not a response
        waits, as over the SSE pipe; only for an owner that attaches a response once such a frame came
        (`PostHandler.respond`: the answer switches to SSE), else that wait would hold back its own end.
        Untold (a stream of the proxy's), what comes is kept and nothing waits.
        """
        self._keep_others = sse
        self._bounded = sse

    def _keep(self, frame: bytes, response: bool) -> None:
        """Keep a frame emitted before any response attached (see `_backlog`)."""
        if response or self._keep_others:
            self._backlog.append((frame, response))
            self._backlog_size += len(frame)

    def _backlog_room(self) -> asyncio.Future[None] | None:
        """`None` while the backlog holds less than `SSE_HIGH_WATER` bytes (or the stream ended), else a
        future done once a response attached (the backlog went to its pipe) or the stream ended."""
        if not self._bounded or self._backlog_size < SSE_HIGH_WATER or self.finished.is_set():
            return None
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._backlog_rooms.append(waiter)
        return waiter

    def _drop_backlog(self) -> None:
        """The backlog went to an attached response (or was replaced by a replay): its producers go on."""
        self._backlog.clear()
        self._backlog_size = 0
        if self._backlog_rooms:
            self._free_backlog()

    def _free_backlog(self) -> None:
        rooms, self._backlog_rooms = self._backlog_rooms, []
        for waiter in rooms:
            if not waiter.done():  # a producer cancelled while it waited left its future cancelled
                waiter.set_result(None)

    async def _store(self, frame: bytes | None) -> str | None:
        if self.store is None or self.session_id is None:
            return None
        try:
            return await self.store.store(self.session_id, self.id, frame)
        except StoreUnavailable as exc:  # a shared store failed mid-stream: go on live, no longer resumable
            logger.warning("SSE stream %s is no longer resumable: %s", self.id, exc)
            self.store = None
            return None

    async def _store_all(self, messages: list[bytes | None]) -> list[str | None]:
        """Store several events in order, in one round trip (a shared store's
        `store_many`: the priming event and a handler's quick answer go to Redis together)."""
        many = getattr(self.store, "store_many", None)
        if many is None or self.session_id is None:
            return [None] * len(messages)
        try:
            ids: list[str | None] = await many(self.session_id, self.id, messages)
        except StoreUnavailable as exc:
            logger.warning("SSE stream %s is no longer resumable: %s", self.id, exc)
            self.store = None
            return [None] * len(messages)
        return ids

    async def emit(self, frame: bytes, *, response: bool, last: bool = False, wait: bool = True) -> None:
        """Deliver the frame to the attached response (stored first if resumable), or keep it for later.
        `last`: the stream finishes right after it (`DirectPipe.put`). `wait=False`: never wait for a
        slow client's room (a producer shared by many clients, which watches `held()` itself)."""
        room = None
        if not self._serialized and self._pipe is None and self._buffering and not self.attached_once:
            # kept for later, as under the lock: nothing is awaited, and nobody has taken the lock yet
            if response or self._keep_others:  # `_keep`, inline: every JSON answer's response comes here
                self._backlog.append((frame, response))
                self._backlog_size += len(frame)
            if wait and not response:
                room = self._backlog_room()
        elif isinstance(pipe := self._pipe, DirectPipe):
            if self._lock.locked() or not self._store_to(pipe, frame, last):
                await self._emit_locked(frame, response)
            if wait:
                room = pipe.room()  # its client reads slowly: the producer waits, nothing piles up here
        else:
            await self._emit_locked(frame, response)
            # its response's client reads slowly (`MeteredPipe`), or none attached yet and the backlog is
            # full: the producer of what has no bound of its own waits (a response, one per request, is
            # bounded by the requests admitted: it never waits, so the proxy's bridge never holds back every
            # client's answers for one slow client)
            if wait and not response:
                pipe = self._pipe
                room = pipe.room() if pipe is not None else self._backlog_room()
        if not response:
            # before waiting: what attaches a response (and so ends the wait) may be waiting for this
            self.saw_other = True
            self.wake.set()
            self._woken()
        if room is not None:
            await room

    def _store_to(self, pipe: DirectPipe, frame: bytes, last: bool) -> bool:
        """What `_emit_locked` does, without the lock, when nothing in it waits (no store, or the memory
        store) and nobody holds the lock; `False`, nothing done, otherwise."""
        event_id = None
        if self.store is not None and self.session_id is not None:
            store = store_now(self.store)
            if store is None:
                return False
            event_id = store(self.session_id, self.id, frame)
        if not pipe.put(format_event(frame, event_id), last=last) and self._pipe is pipe:
            self._pipe = None
        return True

    async def _emit_locked(self, frame: bytes, response: bool) -> None:
        self._serialized = True
        async with self._lock:
            if self._pipe is None and self._buffering and not self.attached_once:
                self._keep(frame, response)
            else:
                event_id = await self._store(frame)
                if self._pipe is not None:
                    self._deliver(self._pipe, format_event(frame, event_id))

    def _deliver(self, pipe: Pipe, chunk: bytes) -> None:
        if not pipe.put(chunk) and self._pipe is pipe:
            self._pipe = None

    def finish(self) -> None:
        """No more frames: attached responses end once they have written what they hold."""
        self.finished.set()
        self.wake.set()
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
        if self._backlog_rooms:
            self._free_backlog()
        self._woken()

    def _woken(self) -> None:
        on_wake = self.on_wake
        if on_wake is not None:
            self.on_wake = None
            try:
                on_wake()
            except Exception:
                logger.exception("SSE stream %s: a wake-up callback failed", self.id)

    async def attach(self, *, retry_ms: int | None) -> Pipe:
        """Start an HTTP response on this stream: the priming event (if `retry_ms`), then the backlog."""
        self._serialized = True
        async with self._lock:
            pipe = MeteredPipe()
            if self._backlog and getattr(self.store, "store_many", None) is not None:
                await self._attach_shared(pipe, retry_ms)
            else:
                if retry_ms is not None and self.store is not None and self.session_id is not None:
                    if self._priming_id is None or self.attached_once:
                        self._priming_id = await self._store(None)
                    if self._priming_id is not None:  # None: the store failed, the stream goes on live
                        pipe.put(_priming(self._priming_id, retry_ms))
                for frame, _ in self._backlog:  # stored now, after the priming event
                    pipe.put(format_event(frame, await self._store(frame)))
            self._drop_backlog()
            self.attached_once = True
            self._connect(pipe)
            return pipe

    def finished_body(self, *, retry_ms: int | None) -> bytes | None:
        """For a finished stream never attached: what `attach` and the SSE reply would write, made now (the
        priming event if `retry_ms`, then every frame, stored first when resumable), or `None` when that
        needs waiting (a store that is not the memory store, the lock held, not finished, attached)."""
        if not self.finished.is_set():
            return None
        return self._first_now(retry_ms)

    def attach_now(self, pipe: DirectPipe, *, retry_ms: int | None) -> bytes | None:
        """`attach` without waiting, for a stream not finished and never attached: the response's first
        bytes (as `finished_body`), with `pipe` attached for what follows; `None`, nothing done, when that
        needs waiting (as `finished_body`)."""
        if self.finished.is_set():
            return None
        first = self._first_now(retry_ms)
        if first is not None:
            self._serialized = True  # from now on frames take the lock (as after `attach`)
            self._pipe = pipe
        return first

    def _first_now(self, retry_ms: int | None) -> bytes | None:
        if self.attached_once or self._serialized:
            return None
        store = store_now(self.store)
        if self.store is not None and store is None:
            return None
        frames = [frame for frame, _ in self._backlog]
        priming_id, first = events_now(store, self.session_id, self.id, frames, retry_ms)
        if priming_id is not None:
            self._priming_id = priming_id
        self._drop_backlog()
        self.attached_once = True
        return first

    async def _attach_shared(self, pipe: Pipe, retry_ms: int | None) -> None:
        """`attach` on a shared store: the priming event and the backlog stored in one round trip (a quick
        handler's answer is already in the backlog), not one each."""
        prime = retry_ms is not None and self.store is not None and self.session_id is not None
        fresh = prime and (self._priming_id is None or self.attached_once)
        frames = [frame for frame, _ in self._backlog]
        messages: list[bytes | None] = [None, *frames] if fresh else [*frames]
        ids = await self._store_all(messages)
        if fresh:
            self._priming_id = ids.pop(0)
        if retry_ms is not None and prime and self._priming_id is not None:  # None: the store failed
            pipe.put(_priming(self._priming_id, retry_ms))
        for frame, event_id in zip(frames, ids, strict=True):
            pipe.put(format_event(frame, event_id))

    async def resume(self, last_event_id: str) -> Pipe | None:
        """Reattach after `last_event_id`: replay what followed it, then go on live. `None`: unknown id."""
        if self.store is None or self.session_id is None:
            return None
        self._serialized = True
        async with self._lock:
            replay = await self.store.replay(self.session_id, last_event_id)
            if replay is None or replay.stream_id != self.id:
                return None
            pipe = MeteredPipe()
            for event_id, frame in replay.events:
                pipe.put(format_event(frame, event_id))
            self.attached_once = True
            self._drop_backlog()
            self._connect(pipe)
            return pipe

    def _connect(self, pipe: Pipe) -> None:
        if self._pipe is not None:
            self._pipe.close()  # a newer connection replaces the old one
        if self.finished.is_set():
            pipe.close()
            self._pipe = None
        else:
            self._pipe = pipe

    def detach(self, pipe: Pipe) -> None:
        """The HTTP response reading `pipe` ended (client gone, or the server closed it)."""
        pipe.close()
        if self._pipe is pipe:
            self._pipe = None
