"""Event stores: what makes SSE streams resumable (`Last-Event-ID`).

Every event written on a resumable stream is stored first; its id names the stream it belongs to
(`<stream>.<sequence>`), so a `GET` with `Last-Event-ID` resumes exactly that stream, and only inside the HTTP
session that owns it. Priming events are stored with no message: they exist so a client that saw nothing
else still has an id to resume from.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["EventStore", "MemoryEventStore", "Replay", "split_event_id", "store_now"]

_SEPARATOR = "."

_Events = deque[tuple[int, bytes | None]] | list[tuple[int, bytes | None]]
"""A stored stream's events, `(sequence, message)`: a deque bounded by `max_events_per_stream`, or the
list of a stream stored whole (`MemoryEventStore.store_answer_now`)."""


def split_event_id(event_id: str) -> tuple[str, int] | None:
    """`(stream id, sequence)` of an id this package issued, `None` for anything else."""
    stream, sep, seq = event_id.rpartition(_SEPARATOR)
    if not sep or not stream or not seq.isdigit() or len(seq) > 18:
        return None
    return stream, int(seq)


@dataclasses.dataclass(frozen=True, slots=True)
class Replay:
    """What a store returns for a `Last-Event-ID`: the stream it belongs to and the events after it."""

    stream_id: str
    events: list[tuple[str, bytes]]


@runtime_checkable
class EventStore(Protocol):
    """Where SSE events wait to be replayed. Implementations must be safe to call from one event loop."""

    async def store(self, session_id: str, stream_id: str, message: bytes | None) -> str:
        """Record one event (`None`: a priming event) and return its id (unique, naming the stream)."""
        ...

    async def replay(self, session_id: str, last_event_id: str) -> Replay | None:
        """The events of that id's stream after it; `None` when the id is unknown in this session."""
        ...

    async def forget(self, session_id: str) -> None:
        """Drop everything stored for an ended session."""
        ...


def store_now(store: EventStore | None) -> Callable[[str, str, bytes | None], str] | None:
    """The store's `store_now` when its `store` is the memory store's own (a subclass that overrides
    `store` keeps its awaited `store`), else `None`."""
    if isinstance(store, MemoryEventStore) and type(store).store is MemoryEventStore.store:
        return store.store_now
    return None


class MemoryEventStore:
    """The default store, in this process: per session, the latest `max_streams_per_session` streams, each a
    deque of its latest `max_events_per_stream` events.

    Past the bound each new stream evicts the session's oldest, found at the front of a deque of its stream
    ids (one step). `next(iter(streams))` on the dict itself walked every dead slot the earlier evictions
    left at its front (until the dict next resized): a scan growing with the bound, on every new stream.

    Ids never repeat within a session: once it evicted a stream, a stream the session stores anew starts
    its sequence at the highest any evicted stream reached (one int per session), so a live stream that
    writes again after its eviction carries on past every id it issued, and a `Last-Event-ID` from before
    the eviction cannot resume (`None`, as for an unknown id) instead of silently skipping the events the
    eviction dropped. Likewise a stream longer than `max_events_per_stream` cannot be resumed from an id whose
    next events fell off its deque.

    A session's stored messages also stay under `max_bytes_per_session` (16 MiB): past it, its other streams
    go, oldest first, then the oldest events of the stream being written (its newest event always stays).
    Counts alone let a session that streams big notifications keep 1,024 of them per stream, for each of its
    256 latest streams (100 KB logs: ~100 MB kept per call)."""

    def __init__(
        self,
        *,
        max_events_per_stream: int = 1024,
        max_streams_per_session: int = 256,
        max_bytes_per_session: int = 16 << 20,
    ) -> None:
        if max_events_per_stream < 1 or max_streams_per_session < 1 or max_bytes_per_session < 1:
            raise ValueError(
                "max_events_per_stream, max_streams_per_session and max_bytes_per_session must be at least 1"
            )
        self.max_events_per_stream = max_events_per_stream
        self.max_streams_per_session = max_streams_per_session
        self.max_bytes_per_session = max_bytes_per_session
        self._bytes: dict[str, int] = {}  # per session, the size of its stored messages
        self._sessions: dict[str, dict[str, _Events]] = {}
        self._order: dict[str, deque[str]] = {}  # per session, its streams' ids, oldest first
        self._next: dict[str, int] = {}  # per stream, its next sequence
        self._first: dict[str, int] = {}  # per stored stream, the sequence its deque began at
        self._floor: dict[str, int] = {}  # per session, the highest next sequence of a stream it evicted

    async def store(self, session_id: str, stream_id: str, message: bytes | None) -> str:
        """Append the event to its stream's deque (the oldest falls off past the bound)."""
        return self.store_now(session_id, stream_id, message)

    def store_now(self, session_id: str, stream_id: str, message: bytes | None) -> str:
        """`store` without awaiting (it never waits): what lets a finished stream be answered at once."""
        streams = self._sessions.get(session_id)
        if streams is None:
            streams = self._sessions[session_id] = {}
            self._order[session_id] = deque()
        events = streams.get(stream_id)
        if events is None:
            if len(streams) >= self.max_streams_per_session:
                self._evict(session_id, streams)
            self._order[session_id].append(stream_id)
            events = streams[stream_id] = deque(maxlen=self.max_events_per_stream)
            self._first[stream_id] = self._next[stream_id] = self._floor.get(session_id, 0)
        seq = self._next[stream_id]
        self._next[stream_id] = seq + 1
        size = 0 if message is None else len(message)
        if len(events) == self.max_events_per_stream and isinstance(events, deque):
            size -= _size(events[0])  # the append below drops it
        events.append((seq, message))
        total = self._bytes[session_id] = self._bytes.get(session_id, 0) + size
        if total > self.max_bytes_per_session:
            self._shed(session_id, streams, stream_id)
        return f"{stream_id}{_SEPARATOR}{seq}"

    def store_answer_now(self, session_id: str, stream_id: str, message: bytes) -> int:
        """A new stream (`stream_id` never stored before) of two events stored at once, without awaiting: a
        priming event, then `message`, the stream's last (a request's answer, whole); the priming event's
        sequence (the answer's is the next). The same as two `store_now`, for a stream that gets no more
        events: kept as a list, not a deque (nothing to bound), with no lookup but the session's."""
        streams = self._sessions.get(session_id)
        if streams is None:
            streams = self._sessions[session_id] = {}
            order = self._order[session_id] = deque()
        else:
            order = self._order[session_id]
        floor = self._floor.get(session_id, 0)
        if len(streams) >= self.max_streams_per_session:  # `_evict` and `_drop`, inline: at the bound a
            # session evicts a stream for every new one (each SSE answer), ~3k instructions in calls
            oldest = order.popleft()
            size = 0
            for _, stored in streams.pop(oldest):
                if stored is not None:
                    size += len(stored)
            self._bytes[session_id] -= size
            self._first.pop(oldest, None)
            reached = self._next.pop(oldest, 0)
            if reached > floor:
                floor = self._floor[session_id] = reached
        order.append(stream_id)
        seq = self._first[stream_id] = floor
        if self.max_events_per_stream >= 2:
            streams[stream_id] = [(seq, None), (seq + 1, message)]
        else:  # the bound keeps the last event alone (as the deque would)
            streams[stream_id] = [(seq + 1, message)]
        self._next[stream_id] = seq + 2
        total = self._bytes[session_id] = self._bytes.get(session_id, 0) + len(message)
        if total > self.max_bytes_per_session:
            self._shed(session_id, streams, stream_id)
        return seq

    def _evict(self, session_id: str, streams: dict[str, _Events]) -> None:
        """The session's oldest stream goes (it is at the bound and stores a new one)."""
        self._drop(session_id, streams, self._order[session_id].popleft())

    def _shed(self, session_id: str, streams: dict[str, _Events], current: str) -> None:
        """The session is past `max_bytes_per_session`: its other streams go, oldest first, then the oldest
        events of `current` (the stream just written), all but its newest if need be."""
        order = self._order[session_id]
        for stream_id in [s for s in order if s != current]:
            if self._bytes[session_id] <= self.max_bytes_per_session:
                return
            order.remove(stream_id)
            self._drop(session_id, streams, stream_id)
        events = streams[current]
        if not isinstance(events, deque):  # an answer stored whole: it stays whole
            return
        while self._bytes[session_id] > self.max_bytes_per_session and len(events) > 1:
            self._bytes[session_id] -= _size(events.popleft())

    def _drop(self, session_id: str, streams: dict[str, _Events], oldest: str) -> None:
        """Forget one stream of the session (already out of its order), its bytes and its sequence."""
        size = 0
        for _, message in streams.pop(oldest):  # a plain loop (no generator): once per evicted stream
            if message is not None:
                size += len(message)
        self._bytes[session_id] -= size
        self._first.pop(oldest, None)
        reached = self._next.pop(oldest, 0)
        if reached > self._floor.get(session_id, 0):
            self._floor[session_id] = reached

    async def replay(self, session_id: str, last_event_id: str) -> Replay | None:
        """The stream's stored events after `last_event_id`, priming events left out."""
        parsed = split_event_id(last_event_id)
        if parsed is None:
            return None
        stream_id, seq = parsed
        events = self._sessions.get(session_id, {}).get(stream_id)
        if events is None or not self._first[stream_id] <= seq < self._next[stream_id]:
            return None  # unknown, or issued before the stream's eviction: the events between are gone
        if events[0][0] > seq + 1:
            return None  # the events right after the id fell off the bound: a replay would skip them
        after = [
            (f"{stream_id}{_SEPARATOR}{n}", message)
            for n, message in events
            if n > seq and message is not None
        ]
        return Replay(stream_id, after)

    async def forget(self, session_id: str) -> None:
        """Drop the session's streams."""
        self._order.pop(session_id, None)
        self._floor.pop(session_id, None)
        self._bytes.pop(session_id, None)
        for stream_id in self._sessions.pop(session_id, {}):
            self._next.pop(stream_id, None)
            self._first.pop(stream_id, None)

    def __len__(self) -> int:
        """How many sessions have stored events (for tests and metrics)."""
        return len(self._sessions)


def _size(event: tuple[int, bytes | None]) -> int:
    """The bytes a stored event's message holds (none for a priming event)."""
    message = event[1]
    return 0 if message is None else len(message)
