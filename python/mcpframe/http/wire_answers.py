"""The lean HTTP server's fast answers that are not written whole where they were made: a `Parked` answer,
written where the app delivers it, and a `Streamed` one, which the app writes itself on an `Out`.

Both run inside the app's code (a pipe read, a handler's task, a timer), not in a task of the server's: what
fails there costs the connection (a 500, and it closes), never the app's step; a request pipelined behind
one is started from the loop, not from inside that code. (Split from `wire.py`, whose `_Connection` they
serve: its `_park` and `_next` hand these answers here.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .asgi import Receive, Send
from .wire_parts import Clock, Cycle, Later, Parked, Streamed, Whole

if TYPE_CHECKING:
    from .wire import _Connection

__all__ = ["Out", "cancelling", "stream", "unpark"]

logger = logging.getLogger("mcpframe.http")


def unpark(connection: _Connection, cycle: Cycle, parked: Parked, answer: Whole | Later) -> None:
    """A `Parked` answer came (called by whatever delivered it): a whole one is written now, unless the
    client reads slowly (then a task waits for room, as `_send` does); a `Later` runs in a task. (A task of
    its own, not started eagerly: this runs inside the app's code, in the middle of its own work, a pipe
    read or a handler's task; what fails here costs the connection, a 500 and closed, never its silence nor
    the app's step.)"""
    connection.owner.parked.discard(parked)
    connection.parked = None
    try:
        if not isinstance(answer, tuple):
            connection.owner._spawn(connection._run(cycle, answer))
            return
        writable = connection.writable  # (`_full`, inlined: this runs for every parked answer)
        if writable is not None and not writable.done() and not connection.lost:
            connection.owner._spawn(connection._run(cycle, _ready(answer)))
            return
        if not connection.lost:
            connection._write_whole(cycle, answer, then=False)
    except Exception:
        connection._failed(cycle)
        return
    # a pipelined request is started from the loop, not inside the code that delivered this answer (a
    # handler's task, in the middle of ending its exchange)
    connection._finished(cycle, from_loop=True)


def stream(connection: _Connection, cycle: Cycle, streamed: Streamed) -> None:
    """A `Streamed` answer: the app writes it (`Out`), its head held for the first part or the end."""
    cycle.chunked = True
    cycle.on_lost = streamed.lost  # `connection_lost` calls it (once: it clears it first)
    streamed.opened(Out(connection, cycle, streamed))


@contextlib.contextmanager
def cancelling() -> Iterator[None]:
    """Around the app's `Parked.cancel`: what it raises is logged, so a close or a lost connection still
    finishes its work."""
    try:
        yield
    except Exception:
        logger.exception("cancelling a parked answer failed")


class Out:
    """The way out of a `Streamed` answer (`StreamOut`): chunks written where the app makes them, the first
    after the response's head."""

    __slots__ = ("_connection", "_cycle", "_streamed")

    def __init__(self, connection: _Connection, cycle: Cycle, streamed: Streamed) -> None:
        self._connection = connection
        self._cycle = cycle
        self._streamed: Streamed | None = streamed  # `None` once its head is out

    def _head(self) -> bytes:
        """The response's head if it is not out yet (then it is, once the caller writes it), else `b""`."""
        streamed = self._streamed
        if streamed is None:
            return b""
        self._streamed = None
        cycle = self._cycle
        cycle.head_sent = True
        status, lines = streamed.head()
        if self._connection.owner.draining:
            cycle.keep_alive = False  # stopping: this answer is the connection's last
        close = b"" if cycle.keep_alive else b"connection: close\r\n"
        return b"%s%s%stransfer-encoding: chunked\r\n\r\n" % (Clock.head(status), lines, close)

    def write(self, data: bytes) -> None:
        transport = self._connection.transport
        if self._cycle.response_done or self._connection.lost or transport is None:
            return
        if data:
            transport.write(b"%s%x\r\n%s\r\n" % (self._head(), len(data), data))
        elif self._streamed is not None:
            transport.write(self._head())

    def end(self, last: bytes = b"") -> None:
        cycle, connection = self._cycle, self._connection
        if cycle.response_done:
            return
        cycle.response_done = True
        cycle.on_lost = None
        if connection.lost or connection.transport is None:
            return
        head = b"" if self._streamed is None else self._head()
        if last:
            connection.transport.write(b"%s%x\r\n%s\r\n0\r\n\r\n" % (head, len(last), last))
        else:
            connection.transport.write(b"%s0\r\n\r\n" % head)
        # a pipelined request is started from the loop, not inside the app's code that ended this one
        connection._finished(cycle, from_loop=True)

    def room(self) -> asyncio.Future[None] | None:
        writable = self._connection.writable  # (`_full`, inlined: asked once per event)
        return None if writable is None or writable.done() else asyncio.shield(writable)


def _ready(whole: Whole) -> Later:
    """A `Later` that gives `whole` at once (a `Parked` answer the socket has no room for yet: written
    once it has, `_finish_later`)."""

    async def ready(receive: Receive, send: Send) -> Whole:
        return whole

    return ready
