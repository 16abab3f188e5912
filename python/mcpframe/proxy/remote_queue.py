"""What the remote proxy (`proxy/remote.py`) holds back of the client's frames, and what it counts in flight.

`InFlight`: the client's requests posted and not answered yet (bounded); `Cancelled`: those the client
cancelled while in flight, whose answers are not written. `Backlog`: the requests read
while that bound is reached, posted in order as room comes. `Handshake`: in the handshake era, everything
the client writes after its `initialize` until that request's answer is on stdout: the server gives the
session (`Mcp-Session-Id`) with that answer and refuses with HTTP 400 whatever comes without it (a client
that writes `notifications/initialized` and its first calls without waiting for the answer). The 2026-07-28
era has no `initialize` and no session: nothing is held there. Each is bounded; a full one stops the
reading of stdin (module doc of `proxy/remote.py`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcpframe import core, protocol
from mcpframe._api import MessageLike

from .remote_batch import answered_id, frames

__all__ = ["Backlog", "Cancelled", "Handshake", "InFlight"]


class InFlight:
    """The client's requests waiting for their answers, bounded (see `proxy/remote.py`'s docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ids: set[Any] = set()
        self.withdrawn: set[Any] = set()  # of `ids`: cancelled by the client (they get no answer)
        self._room = anyio.Event()
        self.idle = anyio.Event()

    def add(self, rid: Any) -> None:
        self.ids.add(rid)
        if self.idle.is_set():
            self.idle = anyio.Event()

    def done(self, rid: Any) -> None:
        self.ids.discard(rid)
        self.withdrawn.discard(rid)
        if len(self.ids) < self.limit:
            self._room.set()
        if not self.ids:
            self.idle.set()

    def withdraw(self, rid: Any) -> None:
        """The client cancelled `rid`, in flight: it keeps its place until its cancel went, unanswered."""
        self.withdrawn.add(rid)

    def note(self, message: MessageLike) -> None:
        """A request from the client: it counts until answered, or until its cancel was sent on."""
        if message.kind == "request":
            self.add(message.id)

    def unanswered(self) -> list[Any]:
        """The requests still owed an answer (not the cancelled ones)."""
        return [rid for rid in self.ids if rid not in self.withdrawn]

    @property
    def full(self) -> bool:
        return len(self.ids) >= self.limit

    async def wait_for_room(self) -> None:
        while len(self.ids) >= self.limit:
            self._room = anyio.Event()
            await self._room.wait()


class Cancelled:
    """The requests the client cancelled while in flight: an answer to one of them that still comes from
    the transport is not written (the fast lane drops its own: `Lane.withdraw`). Bounded: past `limit` ids
    the oldest is forgotten. (The transport reads a request's answer until it has posted its cancel, which
    it holds back while the request is being written; the request keeps its place in `InFlight` until
    then, so answers can come for at most `max_in_flight` cancelled ids at once, and `limit` is at least
    that. Past `limit`, the answer to the oldest would reach the client, which ignores an answer to a
    request it cancelled.)"""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ids: dict[Any, None] = {}  # in the order cancelled

    def add(self, rid: Any) -> None:
        self.ids[rid] = None
        if len(self.ids) > self.limit:
            del self.ids[next(iter(self.ids))]

    def drop(self, data: bytes) -> tuple[bytes, list[Any]]:
        """`data` (NDJSON frames from the server) without the answers to cancelled requests (each such id
        is then forgotten), and the ids the other answers are for (they count answered once written)."""
        found = False
        answered: list[Any] = []
        for item in frames(data):
            if not isinstance(item, core.FrameError) and item.kind in ("result", "error"):
                if item.id in self.ids:
                    found = True
                else:
                    answered.append(item.id)
        if not found:
            return data, answered
        kept: list[bytes] = []
        for line in data.splitlines(keepends=True):
            rid = answered_id(line)
            if rid is not None and rid in self.ids:
                del self.ids[rid]
                continue
            kept.append(line)
        return b"".join(kept), answered


class Backlog:
    """The client's requests read while `in_flight` is full: posted in order as room comes (by `run`).

    Reading stdin goes on meanwhile (the answers a tool in flight waits for are behind them) until
    `limit` requests wait; the caller then stops reading until one is posted."""

    def __init__(self, in_flight: InFlight, limit: int, post: Callable[[MessageLike], Awaitable[None]]):
        self.in_flight = in_flight
        self.limit = limit
        self.waiting: deque[MessageLike] = deque()
        self.posting = False  # `run` holds a request it is posting
        self.closed = False  # the client's input ended: `run` returns once the backlog is empty
        self._post = post
        self._wake = anyio.Event()
        self._room = anyio.Event()
        self.done = anyio.Event()
        """Set once `run` returned (closed and every waiting request posted)."""

    @property
    def clear(self) -> bool:
        """Whether a request just read may be posted at once (nothing before it waits)."""
        return not self.waiting and not self.posting and not self.in_flight.full

    def add(self, message: MessageLike) -> None:
        self.waiting.append(message)
        self._wake.set()

    def cancel(self, rid: Any) -> bool:
        """Drop waiting request `rid` (the server never saw it: neither it nor its cancel is sent)."""
        for message in self.waiting:
            if message.id == rid:
                self.waiting.remove(message)
                self._room.set()
                return True
        return False

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def wait_for_room(self) -> None:
        """Until fewer than `limit` requests wait."""
        while len(self.waiting) >= self.limit:
            self._room = anyio.Event()
            await self._room.wait()

    async def run(self) -> None:
        """Post the waiting requests from the head as the bound allows; return once closed and empty."""
        while True:
            if not self.waiting:
                if self.closed:
                    self.done.set()
                    return
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            await self.in_flight.wait_for_room()
            if not self.waiting:  # its head was cancelled meanwhile
                continue
            message = self.waiting.popleft()
            self._room.set()
            self.posting = True
            try:
                self.in_flight.note(message)
                await self._post(message)
            finally:
                self.posting = False


def opens_session(message: MessageLike) -> bool:
    """Whether `message` is a handshake-era `initialize` (no 2026-07-28 version stamp in `_meta`): what
    follows it needs the session its answer brings."""
    if message.kind != "request" or message.method != protocol.INITIALIZE:
        return False
    params = message.params
    meta = params.get("_meta") if isinstance(params, dict) else None
    return not (isinstance(meta, dict) and isinstance(meta.get(protocol.PROTOCOL_VERSION_KEY), str))


class Handshake:
    """The client's frames read after its `initialize` (`opens_session`), held in order until the answer
    to it was written to the client (then the transport knows the session id), then replayed.

    The reader `hold`s while `engaged`; whoever writes an answer calls `answered(id)`, which starts
    `replay` (the caller's: it dispatches the held frames as the reader would, `take` by `take`) when
    something is held. Bounded: `wait_for_room` (before each read of stdin) waits while `limit` frames are
    held. `idle` is set while nothing is awaited, held or being replayed (the end of input waits for it)."""

    def __init__(self, limit: int, replay: Callable[[], object]) -> None:
        self.limit = max(limit, 1)
        self.awaited: Any = None
        self.waiting = False  # an `initialize`'s answer is awaited (its id: `awaited`)
        self.held: deque[MessageLike] = deque()
        self.replaying = False
        self._replay = replay
        self._room = anyio.Event()
        self.idle = anyio.Event()
        self.idle.set()

    @property
    def engaged(self) -> bool:
        """Whether a frame read now must be held (something before it is not sent yet)."""
        return self.waiting or self.replaying or bool(self.held)

    def engage(self, rid: Any) -> None:
        """`initialize` request `rid` went (or waits in the backlog): what follows is held."""
        self.awaited = rid
        self.waiting = True
        if self.idle.is_set():
            self.idle = anyio.Event()

    def hold(self, message: MessageLike) -> None:
        self.held.append(message)

    def answered(self, rid: Any) -> None:
        """The answer to request `rid` was written: the held frames go, if it was the awaited one."""
        if not self.waiting or rid != self.awaited:
            return
        self.waiting = False
        self.awaited = None
        if self.held and not self.replaying:
            self.replaying = True
            self._replay()
        elif not self.engaged:
            self.idle.set()

    def take(self) -> MessageLike | None:
        """The next held frame to dispatch (`None`: none, or a replayed `initialize` is awaited again)."""
        if self.waiting or not self.held:
            return None
        message = self.held.popleft()
        if len(self.held) < self.limit:
            self._room.set()
        return message

    def replayed(self) -> None:
        """The replay stopped (nothing left, or a new `initialize` awaited with the rest held)."""
        self.replaying = False
        if not self.engaged:
            self.idle.set()

    def unanswered(self) -> list[Any]:
        """The ids of the held requests (at the end: owed an error answer)."""
        return [message.id for message in self.held if message.kind == "request"]

    async def wait_for_room(self) -> None:
        while len(self.held) >= self.limit:
            self._room = anyio.Event()
            await self._room.wait()
