"""POSTs that carry requests: each is answered by a `Lane` (a running JSON-RPC `Session`) on its own stream.

A lane's `Session` reads the POST body and writes to that POST's `Stream`, so whatever a handler sends while
it runs (progress, log messages, sampling or elicitation requests) goes out on the stream of the request that
caused it, before its response. A lane answers one POST at a time; once every request of it is answered, the
lane waits (still running) for the next POST of the same HTTP session, so a POST costs no Session start-up.
Lanes whose POST was cancelled or aborted, or that answered a batch, end instead of being reused.

The requests a handler sends get ids unique in the whole HTTP session (core `IdMap`), so the client's
answer, POSTed separately, finds its way back to the exchange that asked.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcpframe import core
from mcpframe._api import Id, MessageLike
from mcpframe.errors import MCPFrameError
from mcpframe.session import Request, Session

from .pipe import Pipe
from .post import one_line
from .streams import Stream

if TYPE_CHECKING:
    from mcpframe.server.connection import ServerConnection

__all__ = ["Exchange", "ExchangeTransport", "Lane", "LanePool", "RequestHandler", "Router"]

logger = logging.getLogger("mcpframe.http")

NOTIFICATION_PREFIX = b'{"jsonrpc":"2.0","method":'


class ExchangeTransport:
    """The byte pipe of a lane's Session: POST bodies (and routed answers) in, frames out."""

    def __init__(self, lane: Lane) -> None:
        self._lane = lane
        self._pipe = Pipe()

    def feed(self, data: bytes) -> None:
        """Queue bytes for the Session to read (ignored once the lane ended)."""
        if not self._pipe.put(data):
            logger.debug("dropping %d bytes for an ended exchange", len(data))

    def end(self) -> None:
        """Nothing more will be read: the Session sees end of stream."""
        self._pipe.close()

    async def receive(self) -> bytes:
        """The next queued chunk; `b""` once ended."""
        return await self._pipe.get() or b""

    async def send(self, data: bytes) -> None:
        """Frames from the Session: routed onto the current exchange's stream."""
        exchange = self._lane.exchange
        if exchange is None:
            logger.debug("dropping %d bytes written after their exchange ended", len(data))
            return
        await exchange.outgoing(data)

    async def aclose(self) -> None:
        """Idempotent."""
        self._pipe.close()


MAIN = 0
"""The `IdMap` connection number of the HTTP session's main Session (exchanges are numbered from 1)."""


class Router:
    """Per HTTP session: which exchange owns which in-flight request id, in both directions.

    The main Session (the one that handles the client's notifications and writes to the GET stream) is
    connection `MAIN`: a request it sends gets a session-wide id like an exchange's, and the client's
    answer comes back to it through `main` (set by the HTTP session). An exchange enters itself and its
    ids into `exchanges` and `owners` as it starts and takes them out as it ends (`Exchange._register`,
    `Exchange._release`: once per POST, no call here).
    """

    def __init__(self) -> None:
        self.ids = core.IdMap()
        self.exchanges: dict[int, Exchange] = {}
        self.owners: dict[Id, Exchange] = {}
        self.main: Callable[[bytes], None] | None = None
        self._next = 0

    def number(self) -> int:
        """A fresh lane number."""
        self._next += 1
        return self._next

    def release(self, exchange: Exchange, rid: Id | None = None) -> None:
        """The client may reuse `rid` (or every id of the exchange): its answer has been sent."""
        owners = self.owners
        for key in exchange.request_ids if rid is None else (rid,):
            if owners.get(key) is exchange:
                del owners[key]

    def stamped(self, number: int, request: MessageLike) -> bytes:
        """A server request of connection `number` (an exchange, or `MAIN`) with its session-wide id."""
        rid = request.id
        assert rid is not None  # a request has an id (the callers sort by kind first)
        return request.with_id(self.ids.outbound(number, rid))

    def busy(self, rid: Id) -> bool:
        """Whether a client request with this id is still being answered."""
        return rid in self.owners

    def response(self, message: MessageLike) -> bool:
        """A client's answer to a server request: back, with its original id, to the exchange that asked.
        `False` when no request of this router has that id (a shared store asks the other instances)."""
        if message.id is None:
            logger.debug("dropping a client error response without an id: %r", message.error)
            return True
        try:
            number, original = self.ids.inbound(message.id)
        except MCPFrameError:
            logger.debug("dropping a response to unknown request id %r", message.id)
            return False
        if number == MAIN:
            if self.main is not None:
                self.main(one_line(message.with_id(original)))
            return True
        exchange = self.exchanges.get(number)
        if exchange is not None:
            exchange.transport.feed(one_line(message.with_id(original)))
        return True

    def cancelled(self, message: MessageLike) -> None:
        """`notifications/cancelled` from the client: deliver it to the exchange running that request."""
        params = message.params
        rid = params.get("requestId") if isinstance(params, dict) else None
        exchange = self.owners.get(rid) if isinstance(rid, int | str) else None
        if exchange is not None:
            assert isinstance(rid, int | str)
            exchange.cancelled(rid, one_line(message.raw))


RequestHandler = Callable[[Request], Awaitable[Any]]


class Lane:
    """A Session answering POSTs one after the other (see the module's docstring)."""

    def __init__(
        self, router: Router, make_session: Callable[[Lane], Session], *, reusable: bool = True
    ) -> None:
        self.router = router
        self.number = router.number()
        self.transport = ExchangeTransport(self)
        self.handler: RequestHandler | None = None  # what `handle` calls (set per POST where it varies)
        self.session = make_session(self)
        self.exchange: Exchange | None = None
        self.reusable = reusable
        self.pool: LanePool | None = None
        self.reused = False  # taken from the pool's idle lanes: its Session is running
        self.idled = 0  # the pool's sweep round when it last went idle
        # a stateless lane's connection of the MCP server, bound to its Session once and kept for the
        # requests the lean server's fast path starts on it (`fast._stateless_start`); closed as it ends
        self.connection: ServerConnection | None = None

    def handle(self, request: Request) -> Awaitable[Any]:
        """A request handler for `make_session` that calls this lane's current `handler`: its awaitable,
        not a coroutine of this method around it (the Session awaits what a handler returns: no frame here
        on each step of a handler that suspends)."""
        assert self.handler is not None
        return self.handler(request)

    async def run(self, runner: Callable[[Session], Awaitable[None]] | None = None) -> None:
        """Run the Session (with `runner`, default `Session.run`) until it ends; its exchange ends with it."""
        try:
            await (self.session.run() if runner is None else runner(self.session))
        finally:
            self.reusable = False
            if self.connection is not None:
                self.connection.close()
            if self.pool is not None:
                self.pool.forget(self)
            if self.exchange is not None:
                self.exchange.close()
            self.router.ids.drop_connection(self.number)

    def done(self) -> None:
        """The exchange ended: wait for the next POST, or end (not reusable, or enough lanes are waiting)."""
        if self.reusable and self.pool is not None and not self.session.closed and self.pool.put(self):
            return
        self.reusable = False
        self.transport.end()


class LanePool:
    """The idle lanes of one HTTP session (or of the stateless requests), newest first.

    Idle lanes past `keep` decay: `sweep` (run by the sessions' reaper, every few seconds) ends those no POST
    took since the sweep before, so the lanes a burst of requests in flight made end once it is over, while
    a client that keeps that many in flight keeps finding them. (The newest is taken first, so the stack
    holds its lanes in the order they went idle, oldest at the bottom; a lane notes the sweep round it went
    idle in: no clock and no timer.)
    """

    def __init__(
        self,
        router: Router,
        make_session: Callable[[Lane], Session],
        spawn: Callable[..., Any],
        *,
        keep: int = 8,
        most: int | None = None,
    ) -> None:
        self.router = router
        self.make_session = make_session
        self.spawn = spawn
        self.keep = keep
        # idle lanes kept: `keep`, or as many lanes as ran at once so far (up to `most`), so a client with
        # more requests in flight than `keep` finds an idle lane for each, not a new Session per request
        self.most = keep if most is None else max(keep, most)
        self.live = 0  # lanes made by this pool whose Session still runs (idle or answering)
        self.peak = 0  # the most of them at once so far
        self._idle: list[Lane] = []
        self._sweeps = 0  # `sweep` rounds so far
        self.closed = False

    def acquire(self) -> Lane:
        """An idle lane, or a new one (started in the background)."""
        lane = self.take_idle()
        if lane is not None:
            return lane
        lane = Lane(self.router, self.make_session, reusable=not self.closed)
        lane.pool = self
        self.live += 1
        self.peak = max(self.peak, self.live)
        self.spawn(lane.run)
        return lane

    def take_idle(self) -> Lane | None:
        """An idle lane whose Session runs (what `acquire` prefers), or `None`: no new lane is made."""
        idle = self._idle
        while idle:
            lane = idle.pop()
            if lane.reusable and not lane.session.closed:
                lane.reused = True
                return lane
        return None

    def put(self, lane: Lane) -> bool:
        """Keep a lane for the next POST; `False` when the pool is closed or holds enough already: `keep`,
        or the most lanes that ran at once (at most `most`)."""
        if self.closed or len(self._idle) >= max(self.keep, min(self.peak, self.most)):
            return False
        lane.idled = self._sweeps
        self._idle.append(lane)
        return True

    def forget(self, lane: Lane) -> None:
        """A lane ended."""
        self.live -= 1
        if lane in self._idle:
            self._idle.remove(lane)

    def sweep(self) -> int:
        """End the idle lanes past `keep` that no POST took since the previous sweep, the oldest first;
        returns how many (see the class doc)."""
        idle = self._idle
        extra = 0
        while extra < len(idle) - self.keep and idle[extra].idled < self._sweeps:
            extra += 1
        ended, idle[:extra] = idle[:extra], []
        for lane in ended:
            lane.reusable = False
            lane.transport.end()  # its Session ends; `forget` then counts it out of `live`
        self._sweeps += 1
        return extra

    def close(self) -> None:
        """End the idle lanes; lanes in use end when their exchange does."""
        self.closed = True
        for lane in self._idle:
            lane.reusable = False
            lane.transport.end()
        self._idle.clear()


class Exchange:
    """One POST's requests, the lane answering them, and the stream the answers go to."""

    def __init__(self, lane: Lane, stream: Stream, request_ids: list[Id], *, batch: bool = False) -> None:
        self.stream = stream
        self._register(lane, request_ids, batch=batch)

    def _register(self, lane: Lane, request_ids: list[Id], *, batch: bool) -> None:
        """Everything but the stream: the lane's current exchange, owning `request_ids` in the router (a
        subclass that makes its stream only when it needs one calls this alone)."""
        self.lane = lane
        self.router = lane.router
        self.number = lane.number
        self.transport = lane.transport
        self.request_ids = request_ids
        # a batch is answered by one array (its end), single requests one by one
        self._expected: set[Id] | None = None if batch else set(request_ids)
        self._batch_answered = False
        self.extra: list[bytes] = []  # answers to invalid batch elements, joined into the batch's answer
        self.on_close: list[Callable[[], None]] = []  # called once, in order, when the exchange ends
        self.closed = False
        lane.exchange = self
        router = self.router  # it owns `request_ids` (the router's maps, written here: once per POST)
        router.exchanges[self.number] = self
        for rid in request_ids:
            router.owners[rid] = self

    @property
    def session(self) -> Session:
        """The Session answering this POST."""
        return self.lane.session

    def _release(self) -> bool:
        """Mark it closed, off its lane, its ids out of the router; `False` if it was closed already."""
        if self.closed:
            return False
        self.closed = True
        if self.lane.exchange is self:
            self.lane.exchange = None
        # the router forgets it and the ids it still held (its `release` of every id, inline: once per POST)
        router, number = self.router, self.number
        if router.exchanges.get(number) is self:
            del router.exchanges[number]
        router.ids.drop_connection(number)
        owners = router.owners
        for key in self.request_ids:
            if owners.get(key) is self:
                del owners[key]
        return True

    @property
    def complete(self) -> bool:
        """Every request of the POST has been answered (or cancelled)."""
        if self._expected is None:
            return self._batch_answered
        return not self._expected

    def close(self) -> None:
        """The exchange ended: its stream ends, its ids are released, the `on_close` callbacks run."""
        if not self._release():
            return
        self.stream.finish()
        for callback in self.on_close:
            callback()

    async def abort(self) -> None:
        """Stop now: cancel running handlers (nobody can receive their answers any more).

        A no-op once the exchange ended: its lane may be answering another POST by then.
        """
        if self.closed:
            return
        self.lane.reusable = False
        # no drain: what its handlers sent may be held behind a client that reads nothing (a full SSE
        # socket), and would hold this end, a DELETE with it, for the session's `drain_timeout`
        await self.lane.session.aclose(drain=False)

    async def outgoing(self, data: bytes) -> None:
        """Frames the Session wrote: renumber its requests, note its responses, emit them all in order."""
        for frame in data.split(b"\n"):
            if frame:
                await self._emit(frame)
        if self.complete and not self.closed:
            self.close()
            self.lane.done()

    async def _emit(self, frame: bytes) -> None:
        if frame.startswith(b"["):  # the answer to a batch, all of it at once
            self._batch_answered = True
            if self.extra:
                frame = b"[" + b",".join(self.extra) + b"," + frame[1:]
            self.router.release(self)
            await self.stream.emit(frame, response=True)
            return
        if frame.startswith(NOTIFICATION_PREFIX):  # the core encoders' key order: no need to decode it
            await self.stream.emit(frame, response=False)
            return
        message: Any = core.decode(frame, lazy=True)[0]
        kind = getattr(message, "kind", None)
        if kind == "request":
            await self.stream.emit(self.router.stamped(self.number, message), response=False)
        elif kind in ("result", "error"):
            if self._expected is not None:
                self._expected.discard(message.id)
                self.router.release(self, message.id)
            await self.stream.emit(frame, response=True)
        else:
            await self.stream.emit(frame, response=False)

    async def answer(self, rid: Id, frame: bytes) -> None:
        """The response to `rid` made outside the lane's Session (`session.inline`, the direct path): emitted
        as the Session's own would be, without decoding it again (ignored once the exchange ended)."""
        if self.closed:
            return
        if self._expected is not None:
            self._expected.discard(rid)
            self.router.release(self, rid)
        complete = self.complete  # then the stream ends right after this frame: written with its end
        await self.stream.emit(frame, response=True, last=complete)
        if complete and not self.closed:
            self.close()
            self.lane.done()

    def cancelled(self, rid: Id, frame: bytes) -> None:
        """The client cancelled one of this POST's requests: it gets no response, so stop waiting for it."""
        self.lane.reusable = False  # its handler may still write while it stops: the lane is not reused
        self.transport.feed(frame)
        if self._expected is not None:
            self._expected.discard(rid)
            self.router.release(self, rid)
            if self.complete:
                self.close()
                self.lane.done()
