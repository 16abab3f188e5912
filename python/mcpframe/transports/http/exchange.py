"""One POST that carries requests: a JSON-RPC `Session` of its own, answering on the POST's stream.

Each such POST gets a `Session` whose transport reads the POST body and writes to that POST's `Stream`, so
whatever a handler sends while it runs (progress, log messages, sampling or elicitation requests) goes out
on the stream of the request that caused it, before its response. The requests a handler sends get ids
unique in the whole HTTP session (core `IdMap`), so the client's answer, POSTed separately, finds its way
back to the exchange that asked.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcpframe import core
from mcpframe._api import MessageLike
from mcpframe.errors import MCPFrameError
from mcpframe.session import Session

from .streams import Stream

__all__ = ["Exchange", "ExchangeTransport", "Router"]

logger = logging.getLogger("mcpframe.http")

Id = int | str
_NOTIFICATION = b'{"jsonrpc":"2.0","method":'


class ExchangeTransport:
    """The byte pipe of an exchange's Session: the body (and routed answers) in, frames out."""

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange
        self._in, self._out = anyio.create_memory_object_stream[bytes](math.inf)

    def feed(self, data: bytes) -> None:
        """Queue bytes for the Session to read (ignored once the exchange ended)."""
        try:
            self._in.send_nowait(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("dropping %d bytes for an ended exchange", len(data))

    def end(self) -> None:
        """Nothing more will be read: the Session sees end of stream."""
        self._in.close()

    async def receive(self) -> bytes:
        """The next queued chunk; `b""` once ended."""
        try:
            return await self._out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""

    async def send(self, data: bytes) -> None:
        """Frames from the Session: routed onto the exchange's stream."""
        await self._exchange.outgoing(data)

    async def aclose(self) -> None:
        """Idempotent."""
        self._in.close()
        self._out.close()


class Router:
    """Per HTTP session: which exchange owns which in-flight request id, in both directions."""

    def __init__(self) -> None:
        self.ids = core.IdMap()
        self.exchanges: dict[int, Exchange] = {}
        self.owners: dict[Id, Exchange] = {}
        self._next = 0

    def number(self) -> int:
        """A fresh exchange number."""
        self._next += 1
        return self._next

    def add(self, exchange: Exchange, request_ids: list[Id]) -> None:
        """Register a starting exchange and the client request ids it answers."""
        self.exchanges[exchange.number] = exchange
        for rid in request_ids:
            self.owners[rid] = exchange

    def remove(self, exchange: Exchange) -> None:
        """Forget an ended exchange and the ids it still held."""
        self.exchanges.pop(exchange.number, None)
        self.ids.drop_connection(exchange.number)
        self.release(exchange)

    def release(self, exchange: Exchange, rid: Id | None = None) -> None:
        """The client may reuse `rid` (or every id of the exchange): its answer has been sent."""
        if rid is not None:
            if self.owners.get(rid) is exchange:
                del self.owners[rid]
            return
        for done in [key for key, owner in self.owners.items() if owner is exchange]:
            del self.owners[done]

    def busy(self, rid: Id) -> bool:
        """Whether a client request with this id is still being answered."""
        return rid in self.owners

    def response(self, message: MessageLike) -> None:
        """A client's answer to a server request: back, with its original id, to the exchange that asked."""
        if message.id is None:
            logger.debug("dropping a client error response without an id: %r", message.error)
            return
        try:
            number, original = self.ids.inbound(message.id)
        except MCPFrameError:
            logger.debug("dropping a response to unknown request id %r", message.id)
            return
        exchange = self.exchanges.get(number)
        if exchange is not None:
            exchange.transport.feed(message.with_id(original) + b"\n")

    def cancelled(self, message: MessageLike) -> None:
        """`notifications/cancelled` from the client: deliver it to the exchange running that request."""
        params = message.params
        rid = params.get("requestId") if isinstance(params, dict) else None
        exchange = self.owners.get(rid) if isinstance(rid, int | str) else None
        if exchange is not None:
            assert isinstance(rid, int | str)
            exchange.cancelled(rid, message.raw + b"\n")


class Exchange:
    """The Session answering one POST, and the stream it writes to."""

    def __init__(
        self,
        router: Router,
        stream: Stream,
        request_ids: list[Id] | None,
        make_session: Callable[[ExchangeTransport], Session],
    ) -> None:
        self.router = router
        self.number = router.number()
        self.stream = stream
        self.transport = ExchangeTransport(self)
        self.session = make_session(self.transport)
        self._expected: set[Id] | None = None if request_ids is None else set(request_ids)
        self._batch_answered = False
        self.extra: list[bytes] = []  # answers to invalid batch elements, joined into the batch's answer
        self.on_done: Callable[[], None] | None = None
        router.add(self, request_ids or [])

    @property
    def complete(self) -> bool:
        """Every request of the POST has been answered (or cancelled)."""
        if self._expected is None:
            return self._batch_answered
        return not self._expected

    async def run(self, runner: Callable[[Session], Awaitable[None]] | None = None) -> None:
        """Run the Session (with `runner`, default `Session.run`) until every request is answered.

        Feed it the body first. Afterwards the exchange's ids are released, its stream ends, and
        `on_done` (if set) is called.
        """
        try:
            await (self.session.run() if runner is None else runner(self.session))
        finally:
            self.router.remove(self)
            self.stream.finish()
            if self.on_done is not None:
                self.on_done()

    async def abort(self) -> None:
        """Stop now: cancel running handlers (nobody can receive their answers any more)."""
        await self.session.aclose()

    async def outgoing(self, data: bytes) -> None:
        """Frames the Session wrote: renumber its requests, note its responses, emit them all in order."""
        for frame in data.split(b"\n"):
            if frame:
                await self._emit(frame)
        if self.complete:
            self.stream.finish()
            self.transport.end()

    async def _emit(self, frame: bytes) -> None:
        if frame.startswith(b"["):  # the answer to a batch, all of it at once
            self._batch_answered = True
            if self.extra:
                frame = b"[" + b",".join(self.extra) + b"," + frame[1:]
            self.router.release(self)
            await self.stream.emit(frame, response=True)
            return
        if frame.startswith(_NOTIFICATION):  # the core encoders' key order: no need to decode it
            await self.stream.emit(frame, response=False)
            return
        message: Any = core.decode(frame, lazy=True)[0]
        kind = getattr(message, "kind", None)
        if kind == "request":
            upstream = self.router.ids.outbound(self.number, message.id)
            await self.stream.emit(message.with_id(upstream), response=False)
        elif kind in ("result", "error"):
            if self._expected is not None:
                self._expected.discard(message.id)
                self.router.release(self, message.id)
            await self.stream.emit(frame, response=True)
        else:
            await self.stream.emit(frame, response=False)

    def cancelled(self, rid: Id, frame: bytes) -> None:
        """The client cancelled one of this POST's requests: it gets no response, so stop waiting for it."""
        self.transport.feed(frame)
        if self._expected is not None:
            self._expected.discard(rid)
            self.router.release(self, rid)
            if self.complete:
                self.stream.finish()
                self.transport.end()
