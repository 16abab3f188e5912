"""The lean HTTP/1.1 server's parts that are not the connection: what a request is while it is answered
(`Cycle`), the `Date` header's clock, the app's header lines, and the fast path's answer types."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, Protocol

from .asgi import Message, Receive, Scope, Send

__all__ = [
    "DECLINED", "GIVEN_UP", "REASONS", "Clock", "Cycle", "Declined", "HeadTooLarge", "Later", "Parked",
    "StreamOut", "Streamed", "Whole", "WireAnswer", "header_lines",
]  # fmt: skip

REASONS = {status.value: status.phrase.encode() for status in HTTPStatus}
"""The reason phrase of each status code."""

Whole = tuple[int, bytes, bytes]
"""A whole response to a POST: status, its header lines (`name: value\r\n`, no Content-Length; checked by
the app) and the body."""
Later = Callable[[Receive, Send], Awaitable[Whole | None]]
"""The rest of an answer the app started: a coroutine function that returns the `Whole` response, or
answers on ASGI `receive` and `send` itself (and returns `None`)."""


async def _never(receive: Receive, send: Send) -> None:
    """What a `Parked` holds once the server gave it up: no answer goes out after that."""


GIVEN_UP: Later = _never
"""A `Parked`'s answer once the server gave it up (`Parked.give_up`): never written."""


class Parked:
    """A fast answer that is not ready yet: the app returns it from `wire_fast`, keeps it, and calls
    `deliver` once, with the `Whole` response or with the `Later` that finishes it, from wherever the answer
    lands (the listening proxy's pipe read, a handler's task ending its exchange, a timer). The wire server
    writes a whole answer there and then (no task, no future, no loop turn between the event and the write)
    and runs a `Later` in a task. Only the first delivery counts. If the client leaves first, the server
    calls `cancel` (what is delivered after that is handled as an answer to a client that left: a `Later`
    still runs, so the app's full path ends what it started); if the server closes first, it gives the
    answer up (`give_up`: `cancel`, and a delivery after that is dropped). Subclasses add the slots they
    need."""

    __slots__ = ("_answer", "_then")

    def __init__(self) -> None:
        self._answer: Whole | Later | None = None
        self._then: Callable[[Whole | Later], None] | None = None

    def deliver(self, answer: Whole | Later) -> None:
        """Give the answer (the first one counts; given before the server waits for it, it is kept)."""
        if self._answer is not None:
            return
        self._answer = answer
        then = self._then
        if then is not None:
            self._then = None
            then(answer)

    def cancel(self) -> None:
        """The server closes, or the client left, before the answer came: give the request up (nothing by
        default)."""

    def park(self, then: Callable[[Whole | Later], None]) -> None:
        """The wire server's: call `then(answer)` once the answer comes (now, if it came already)."""
        answer = self._answer
        if answer is None:
            self._then = then
        elif answer is not GIVEN_UP:
            then(answer)

    def give_up(self) -> None:
        """The wire server's, as it closes: forget the answer's way out, then `cancel`."""
        self._then = None
        self._answer = GIVEN_UP
        self.cancel()


class StreamOut(Protocol):
    """The way out of a `Streamed` answer (the wire server's, given to `Streamed.opened`)."""

    def write(self, data: bytes) -> None:
        """Write one part (a chunk), after the response's head if that is not out yet (`b""`: the head
        alone, or nothing); nothing once the answer ended or the client left."""

    def end(self, last: bytes = b"") -> None:
        """The answer is complete: the head if it is not out yet, `last` (its last part, if any) and the
        end written in one piece; the connection goes on to the next request."""

    def room(self) -> asyncio.Future[None] | None:
        """While the client reads too slowly (the socket's write buffer is full): a future done once there
        is room again, which a producer that can wait awaits; `None` otherwise. A new future per call:
        a waiter cancelled cancels its own, never what other writers on the connection wait on."""


class Streamed:
    """A streamed answer (HTTP/1.1 chunked, as an SSE response) the app writes from the code that produces
    its parts, with no task: returned from `wire_fast`, its status and header lines are taken (`head`),
    then the server calls `opened(out)` and the app writes on `out` from wherever its parts come (a
    handler's task, a timer) and ends with `out.end()`. The head goes out with the first `write` or with
    the `end`: an answer complete soon after it started is one write, head to end. If the client leaves
    first, or the server closes, it calls `lost()` once (no `end` is needed then). Subclasses implement
    the three."""

    __slots__ = ()

    def head(self) -> tuple[int, bytes]:
        """The status and the header lines (as a `Whole`'s, no length or transfer coding)."""
        raise NotImplementedError

    def opened(self, out: StreamOut) -> None:
        """Write the answer on `out` (its head is held until the first `write` or the `end`)."""
        raise NotImplementedError

    def lost(self) -> None:
        """The client left (or the server closed) before `out.end()`: nothing more is written."""
        raise NotImplementedError


WireAnswer = Whole | Later | Parked | Streamed
"""What an app's `wire_fast(target, headers, body)` answers a complete POST with (`None` instead: the app's
ASGI call answers it). See `wire._Connection._next`."""


class Clock:
    """The `Date` header, formatted at most once a second (RFC 9110 asks an origin server with a clock
    to send it; formatting it per response would cost more than the rest of the head)."""

    second = -1
    value = b""
    ok = b""  # a 200's status line, `Date` and `Server`, as of `second`

    @classmethod
    def date(cls) -> bytes:
        now = int(time.time())
        if now != cls.second:
            cls.second, cls.value = now, formatdate(now, usegmt=True).encode()
            cls.ok = b"HTTP/1.1 200 OK\r\ndate: %s\r\nserver: mcpframe\r\n" % cls.value
        return cls.value

    @classmethod
    def head(cls, status: int) -> bytes:
        """The status line, `Date` and `Server` of a response (a 200's made once a second)."""
        if status == 200 and int(time.time()) == cls.second:  # (no `date` call: every answer asks)
            return cls.ok
        date = cls.date()
        if status == 200:
            return cls.ok
        reason = REASONS.get(status, b"")
        return b"HTTP/1.1 %d %s\r\ndate: %s\r\nserver: mcpframe\r\n" % (status, reason, date)


class Cycle:
    """One request: its scope, its body as it arrives, and its response's progress."""

    __slots__ = (
        "body", "chunked", "complete", "delivered", "expecting", "head_sent", "headers", "keep_alive",
        "method", "more", "offered", "on_lost", "response_done", "scope", "start", "target", "version",
    )  # fmt: skip

    def __init__(
        self, method: str, target: bytes, version: str, headers: list[tuple[bytes, bytes]], keep_alive: bool
    ) -> None:
        self.method = method
        self.target = target  # the raw request target (path and query)
        self.version = version
        self.headers = headers
        self.scope: Scope | None = None  # built when the ASGI app is called (not on the fast path)
        self.body: deque[bytes] = deque()
        self.complete = False  # the whole request body has been read
        self.delivered = False  # ... and handed to the app
        self.chunked = False
        # body arrived, the body completed, or the client left: made when `_receive` first waits (most
        # requests are complete before the app reads them, and the fast path never reads)
        self.more: asyncio.Event | None = None
        self.keep_alive = keep_alive
        self.start: Message | None = None  # `http.response.start`, held until the first body message
        self.head_sent = False
        self.response_done = False
        self.expecting = False  # `Expect: 100-continue` and no `100 Continue` sent yet
        self.on_lost: Callable[[], None] | None = (
            None  # called if the client leaves (`_Receive.on_disconnect`)
        )
        # what the app's fast path answered before the request was queued (`wire._Connection._answer_plain`):
        # `DECLINED` for its `None`; `None`: not asked yet
        self.offered: WireAnswer | Declined | None = None


def header_lines(cycle: Cycle, headers: Any, parts: list[bytes]) -> bytes | None:
    """Append the app's headers to `parts`; the Content-Length it gave, if any."""
    length = None
    for name, value in headers:
        # the values are the app's own, but one holding CR/LF would split the response: refuse it (`find`,
        # not `in`: `b"\r" in value` first tries the needle as an int and raises and clears a TypeError)
        if value.find(b"\r") >= 0 or value.find(b"\n") >= 0:
            raise RuntimeError("an HTTP header value holds CR or LF")
        low = name.lower()
        if low == b"content-length":
            length = value  # written once, by the caller
            continue
        if low == b"connection" and b"close" in value.lower():
            cycle.keep_alive = False
            continue
        parts.append(b"%s: %s\r\n" % (name, value))
    return length


class Declined:
    """The type of `DECLINED`."""

    __slots__ = ()


DECLINED = Declined()
"""A `Cycle.offered`: the app's fast path was asked and declined (`None`): its ASGI call answers."""


class HeadTooLarge(Exception):
    """Raised from a parser callback to stop parsing (httptools re-raises it as its callback error)."""
