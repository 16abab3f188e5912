"""A lean HTTP/1.1 server for one ASGI app, on asyncio Protocols and httptools (opt-in).

Why not uvicorn alone: measured under `benches/bench_http_wire.py`, a tools/call answered through uvicorn
costs two `send()` system calls (uvicorn writes the status line and headers on `http.response.start`, the
body on `http.response.body`) and per-request work this host never needs (proxy-header middleware, a regex
over every header it writes, an access-log check). Here a complete reply (`more_body` false on its first
body message) is written in one piece; a streamed one (SSE) is chunked, its head going out with its first
chunk.

What it keeps: HTTP/1.1 keep-alive (closed after `keepalive_timeout` idle seconds), `Expect: 100-continue`
(answered when the app first waits for the body), a request head that must be complete within
`head_timeout` seconds of its first byte (else 408: a slow-loris client holds a connection for that long
at most, as under uvicorn: `uvicorn_host`), pipelined requests answered in order, `Connection: close` and
HTTP/1.0, a bound on the request head (431), `http.disconnect` when the client goes, and flow control both
ways: reading stops while a request body waits for the app (beyond `_BODY_HIGH` bytes) and while a
response is being answered; `send` waits while the socket's write buffer is full (`pause_writing`), so a
slow client holds back its own stream, never the server's memory.

A graceful stop (`WireServer`: `stop_accepting`, then `drain`) closes the listening socket, lets the caller
settle what runs, then closes each connection as soon as its current answer is out (`connection: close` on
the answers written meanwhile), and cuts what is still open after a bound.

The two timeouts are deadlines on the connection, checked by one sweep per server a few times per
timeout (at most once a second), not a timer per request: arming and cancelling two `call_later` handles
per request (a heap push, a cancel, a heap pop, their `TimerHandle`s) cost more than the rest of a
request's head handling. A timeout therefore fires up to a quarter of itself (at most 1 s) late.

A request is handed to the app once the bytes that carried it have been parsed (at the end of
`data_received`, so a small request's body is already there), and its first step runs at once, eagerly
(`mcpframe.session.eager`, as the Session starts handlers): an answer that needs no waiting is written
before `data_received` returns, with no task created or scheduled for it. One that waits continues in a
task of its own, as before.

A plain request (the common case: see `wire_plain`) is read in one native call where httptools
stands between two requests; everything else (HTTP/1.0, chunked bodies, `Expect`, `Connection: close`, a
head or body split over reads, what is refused with 400 or 431) is httptools', from the same byte on, as
before.

An app whose fast answer waits for one event it is told of (the listening proxy's child answering, a
suspended handler's exchange ending) may return a `Parked`: no task, no future; the app calls its `deliver`
with the response where the event lands (a pipe read, the handler's task), and the response is written
from there; a pipelined request behind it is started from the loop, not inside the app's code. A
`Streamed` answer (SSE) is written by the app itself where its parts come from, its head held for the
first of them or its end. Both are handled in `wire_answers.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any
from urllib.parse import unquote

import httptools

from mcpframe.session import eager

from . import wire_answers
from .asgi import Message, Receive, Scope, Send
from .security import target_host
from .wire_parts import (
    DECLINED,
    REASONS,
    Clock,
    Cycle,
    Declined,
    HeadTooLarge,
    Later,
    Parked,
    Streamed,
    Whole,
    WireAnswer,
    header_lines,
)
from .wire_plain import MAX_PIPELINED, PLAIN, queue_plain

__all__ = ["Later", "Parked", "Streamed", "Whole", "WireAnswer", "WireServer", "serve_asgi"]

logger = logging.getLogger("mcpframe.http")

_MAX_HEAD = 64 * 1024  # request line + headers; uvicorn/h11 use the same order of magnitude
_BODY_HIGH = 256 * 1024  # body bytes buffered for the app before reading stops
_ABORT_WAIT = 1.0  # after `drain`'s bound: how long closed connections get to flush before they are aborted
_SWEEP_MAX = 1.0  # the longest pause between two checks of the connections' deadlines
_SWEEP_MIN = 0.01
# what one socket read takes at most, into the server's one reusable buffer (`_Connection.get_buffer`):
# asyncio's plain `Protocol` reads into a fresh 256 KiB `bytes` each time, past glibc's mmap threshold, so
# every read of a request cost an mmap, an mremap and a munmap (~3 system calls per call measured)
_READ_SIZE = 64 * 1024
# pipelined requests whose answers need no waiting are started from inside the answer before them
# (`_finished` -> `_next`, eager start or the fast path): past this many in one chain the next goes through
# the loop, or a few hundred pipelined requests would exceed the interpreter's recursion limit and the
# connection be cut with every answer after it lost
_NESTED_MAX = 16


class _Connection(asyncio.BufferedProtocol):
    """One client connection; requests are answered one at a time, in the order they came.

    Bytes are read into the server's one buffer (`WireServer.read_buffer`: a read is always handed on,
    copied, before the next one starts, so the connections can share it), then `data_received`."""

    def __init__(self, owner: WireServer, server: tuple[str, int]) -> None:
        self.owner = owner
        self.app = owner.app
        self.keepalive_timeout = owner.keepalive_timeout
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.client: tuple[str, int] | None = None
        self.pending: deque[Cycle] = deque()  # parsed (head at least), not yet answered
        self.current: Cycle | None = None
        self.nested = 0  # requests started from `_finished` on the current call stack (`_NESTED_MAX`)
        self.parsing: Cycle | None = None  # the request whose bytes the parser is reading
        # httptools stands between two requests of a kept-alive connection: a plain request may be read
        # without it (`queue_plain`)
        self.between = PLAIN is not None
        self.lost = False
        self.head_bytes = 0
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.expect_continue = False  # the request asks for `100 Continue`
        self.writable: asyncio.Future[None] | None = None
        self.parked: Parked | None = None  # the current request's answer, parked (`_park`)
        self.refusal: tuple[int, bytes] | None = None  # the parser failed: sent once `pending` is answered
        self.loop = asyncio.get_running_loop()
        # deadlines on the loop's clock, checked by the server's sweep (`expire`); None: not running
        self.idle_deadline: float | None = None
        self.head_deadline: float | None = None

    # ---------------------------------------------------------------- the socket

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.client = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) else None
        self.owner.connections.add(self)
        if self.owner.draining:
            transport.close()  # accepted just before the listener closed: not served
            return
        self._arm_idle()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.owner.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        if nbytes:  # copied out: the buffer is the next read's (every connection reads into it)
            self.data_received(self.owner.read_buffer[:nbytes].tobytes())

    def data_received(self, data: bytes) -> None:
        if self.refusal is not None:  # the parser failed already: what follows is not read (`_refuse_after`)
            return
        if self.current is None and not self.pending:
            self.idle_deadline = None  # (`_disarm_idle`, inlined: this runs for every request)
        try:
            if self.between:
                if self.current is None and not self.pending and self.owner.fast is not None:
                    data = self._answer_plain(data)
                data = queue_plain(data, self.pending, self.transport)
            if data:
                self.parser.feed_data(data)
            if self.current is None and self.pending:
                self._next()
        except httptools.HttpParserUpgrade:
            self._refuse_after(400, b"Upgrade is not supported")
        except httptools.HttpParserError:
            # httptools wraps what a callback raises: the head's size is told apart by its own flag
            if self.head_bytes > _MAX_HEAD:
                self._refuse_after(431, b"Request Header Fields Too Large")
            else:
                self._refuse_after(400, b"Bad Request")

    def _refuse_after(self, status: int, text: bytes) -> None:
        """The parser failed: the requests parsed before the bad bytes are answered first, in order, then
        the refusal, and the connection closes (the bytes after the bad ones cannot be trusted)."""
        parsing, self.parsing = self.parsing, None
        if parsing is not None and parsing is self.current:  # its answer may be under way: no room for
            self._refuse(status, text)  # the refusal after it. As before: written now, and closed
            return
        if parsing is not None and parsing in self.pending:  # the bad request itself: not answered
            self.pending.remove(parsing)
        if self.current is None and not self.pending:
            self._refuse(status, text)
            return
        self.refusal = (status, text)
        if self.transport is not None:
            self.transport.pause_reading()  # the parser is spent: nothing more is read
        if self.current is None:
            self._next()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.idle_deadline = self.head_deadline = None
        self.owner.forget(self)
        current = self.current
        if current is not None and current.on_lost is not None:
            on_lost, current.on_lost = current.on_lost, None
            try:
                on_lost()  # what a response asked to hear of it (`_Receive.on_disconnect`)
            except Exception:  # the rest of this method must still run: the parked answer, `more`, writable
                logger.exception("a disconnect callback failed")
        if self.parked is not None:  # nobody to answer: the app is told (`Parked.cancel`); what it still
            # delivers goes the way of an answer to a client that left (a `Later` still runs and ends the
            # exchange as the full path ends it: a suspended handler is cancelled, a proxied route abandoned)
            parked, self.parked = self.parked, None
            if parked in self.owner.parked:  # not given up by the server's close already
                self.owner.parked.discard(parked)
                with wire_answers.cancelling():
                    parked.cancel()
        for cycle in (self.current, *self.pending):
            if cycle is not None and cycle.more is not None:
                cycle.more.set()  # receive() answers http.disconnect from now on
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    def pause_writing(self) -> None:
        self.writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)
        self.writable = None

    # ---------------------------------------------------------------- the parser's callbacks

    def on_message_begin(self) -> None:
        self.between = False
        self.url, self.headers, self.head_bytes, self.expect_continue = b"", [], 0, False
        self.head_deadline = self.loop.time() + self.owner.head_timeout

    def on_url(self, url: bytes) -> None:
        self.url += url
        self.head_bytes += len(url)
        if self.head_bytes > _MAX_HEAD:
            raise HeadTooLarge

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        self.headers.append((name, value))
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_continue = True
        self.head_bytes += len(name) + len(value) + 4
        if self.head_bytes > _MAX_HEAD:
            raise HeadTooLarge

    def on_headers_complete(self) -> None:
        self.head_deadline = None
        version = self.parser.get_http_version()
        method = self.parser.get_method().decode("ascii")
        cycle = Cycle(method, self.url, version, self.headers, self.parser.should_keep_alive())
        cycle.expecting = version == "1.1" and self.expect_continue
        self.parsing = cycle
        self.pending.append(cycle)  # started once the bytes parsed so far are (see `data_received`)

    def on_body(self, body: bytes) -> None:
        cycle = self.parsing
        if cycle is None or cycle.response_done:
            return  # answered without reading its body (a 413, say): the rest is read and dropped
        cycle.body.append(body)
        if cycle.more is not None:
            cycle.more.set()
        if sum(map(len, cycle.body)) > _BODY_HIGH and self.transport is not None:
            self.transport.pause_reading()  # the app reads it (receive) before more comes in

    def on_message_complete(self) -> None:
        cycle = self.parsing
        if cycle is None:
            return
        self.parsing = None
        # after `Connection: close` (or HTTP/1.0) httptools refuses what follows: it reads all of that
        self.between = cycle.keep_alive and PLAIN is not None
        cycle.complete = True
        if cycle.more is not None:
            cycle.more.set()
        if len(self.pending) > MAX_PIPELINED and self.transport is not None:
            # requests are answered one at a time: a client pipelining many waits for room. Reading goes
            # on otherwise, so that a client leaving is seen at once (the end of an SSE stream)
            self.transport.pause_reading()

    # ---------------------------------------------------------------- requests

    def _next(self) -> None:
        if self.lost or not self.pending:
            return
        self.current = cycle = self.pending.popleft()
        if (offered := cycle.offered) is not None:  # the app was asked already (`_answer_plain`)
            cycle.offered = None
            if isinstance(offered, Declined):
                self.owner.start(self._run(cycle))
            else:
                cycle.delivered = True
                self._answer(cycle, offered)
            return
        fast = self.owner.fast
        full = (writable := self.writable) is not None and not writable.done()  # (`_full`, inlined)
        if fast is not None and cycle.complete and cycle.method == "POST" and not full:
            # the app's hot path, before any ASGI scope is built (`WireAnswer`)
            answer = fast(cycle.target, cycle.headers, b"".join(cycle.body))
            if answer is not None:
                cycle.body.clear()
                cycle.delivered = True
                self._answer(cycle, answer)
                return
        self.owner.start(self._run(cycle))

    def _answer(self, cycle: Cycle, answer: WireAnswer) -> None:
        """Write or start the fast path's answer to the current request `cycle`."""
        if isinstance(answer, tuple):
            self._write_whole(cycle, answer)
        elif isinstance(answer, Parked):
            self._park(cycle, answer)  # no task while it waits
        elif isinstance(answer, Streamed):
            wire_answers.stream(self, cycle, answer)  # no task either: the app writes its parts
        else:
            self.owner.start(self._run(cycle, answer))

    def _answer_plain(self, data: bytes) -> bytes:
        """The plain POSTs at the start of `data`, read while no request waits (`data_received`), answered
        one after the other as `_next` answers them, where a whole answer needs no `Cycle`, no queue and
        none of `_finished`'s bookkeeping: a plain request is HTTP/1.1, kept alive, complete, with no
        `Expect`; reading runs (this is its callback), and nothing was pending before it. The first request
        that is not a POST, or that the app does not answer whole at once, is queued as `queue_plain` queues
        it, with what the app answered (`Cycle.offered`: `_next` does not ask again), and the rest of
        `data` is left to the caller; a `Parked` answer (it comes later) is parked at once instead, and a
        `Streamed` one opened, as `_next` would have done first thing, and the rest of `data` left to the
        caller all the same."""
        assert PLAIN is not None
        fast, transport = self.owner.fast, self.transport
        assert fast is not None
        assert transport is not None
        start, end = 0, len(data)
        while start < end:
            writable = self.writable
            if (writable is not None and not writable.done()) or transport.is_closing():
                break  # the client reads slowly (`_next` waits for room), or a write failed: as before
            request = PLAIN(data, start)
            if request is None:
                break
            method, target, headers, body, start = request
            answer = fast(target, headers, body) if method == "POST" else None
            if type(answer) is tuple:  # (`_write_whole`, for a request that never became a `Cycle`)
                status, lines, payload = answer
                if self.owner.draining:  # stopping: this answer is the connection's last
                    transport.write(
                        b"%s%sconnection: close\r\ncontent-length: %d\r\n\r\n%s"
                        % (Clock.head(status), lines, len(payload), payload)
                    )
                    transport.close()
                    return b""
                transport.write(
                    b"%s%scontent-length: %d\r\n\r\n%s" % (Clock.head(status), lines, len(payload), payload)
                )
                continue
            cycle = Cycle(method, target, "1.1", headers, True)
            cycle.complete = True
            if isinstance(answer, Parked):
                # comes later (a handler that suspended): parked now, as `_next` would park it first thing
                # (nothing is pending), the rest of `data` read after
                cycle.delivered = True
                self.current = cycle
                self._park(cycle, answer)
            elif isinstance(answer, Streamed):  # an SSE answer the app writes: opened now, likewise
                cycle.delivered = True
                self.current = cycle
                wire_answers.stream(self, cycle, answer)
            else:
                self._queue_offered(cycle, body, answer)
            break
        if start and self.current is None and not self.pending:
            self._arm_idle()  # (`_finished`'s, for the requests answered whole here)
        return data[start:] if start else data

    def _queue_offered(self, cycle: Cycle, body: bytes, answer: WireAnswer | None) -> None:
        """`_answer_plain`'s request that is neither answered whole nor parked: queued as `queue_plain`
        queues it, with the app's answer (`_next` goes on from there once the rest of the read is, as
        before)."""
        if answer is None:
            if body:
                cycle.body.append(body)
            if cycle.method == "POST":
                cycle.offered = DECLINED  # not offered again
        else:
            cycle.offered = answer
        self.pending.append(cycle)

    def _park(self, cycle: Cycle, parked: Parked) -> None:
        self.owner.parked.add(parked)
        self.parked = parked
        # what delivers the answer writes it (`_unpark`; a `partial`: no Python frame of its own)
        parked.park(partial(self._unpark, cycle, parked))

    _unpark = wire_answers.unpark
    """A `Parked` answer came (called by whatever delivered it): `wire_answers.unpark`."""

    def _next_if_idle(self) -> None:
        # not after a close that came meanwhile (a drain's `close_when_idle`, a 408): a request started
        # then would run and its answer be lost
        transport = self.transport
        if self.current is None and transport is not None and not transport.is_closing():
            try:
                self._next()
            except Exception:
                cycle = self.current
                assert cycle is not None  # `_next` sets it before anything can raise
                self._failed(cycle)

    def _failed(self, cycle: Cycle) -> None:
        """Answering a parked request, or starting the one after it, failed: a 500, and the connection
        closes."""
        logger.exception("answering %s %r failed", cycle.method, cycle.target)
        self._refuse(500, b"Internal Server Error")

    def _write_whole(self, cycle: Cycle, answer: Whole, *, then: bool = True) -> None:
        """A fast answer (to a POST: it has a body): head and body in one write, then (`then`) the next
        request."""
        assert self.transport is not None
        status, lines, body = answer
        cycle.head_sent = cycle.response_done = True
        if self.owner.draining:
            cycle.keep_alive = False  # stopping: this answer is the connection's last
        close = b"" if cycle.keep_alive else b"connection: close\r\n"
        self.transport.write(
            b"%s%s%scontent-length: %d\r\n\r\n%s" % (Clock.head(status), lines, close, len(body), body)
        )
        if then:
            self._finished(cycle)

    def _scope(self, cycle: Cycle) -> Scope:
        """The request's ASGI scope (built once)."""
        if cycle.scope is None:
            parsed = httptools.parse_url(cycle.target)
            cycle.scope = {
                "type": "http",
                "asgi": {"version": "3.0", "spec_version": "2.4"},
                "http_version": cycle.version,
                "method": cycle.method,
                "scheme": "http",
                # ASGI's path is percent-decoded, raw_path is not
                "path": unquote(parsed.path.decode("latin-1")),
                "raw_path": parsed.path,
                "query_string": parsed.query or b"",
                "root_path": "",
                # an absolute-form target's authority is the Host the app checks (RFC 9112 §3.2.2)
                "headers": target_host(cycle.target, cycle.headers),
                "client": self.client,
                "server": self.server,
            }
        return cycle.scope

    async def _run(self, cycle: Cycle, later: Later | None = None) -> None:
        """The app's ASGI call for the request (or `later`, what its fast path left to do)."""
        try:
            scope = self._scope(cycle) if later is None else None
        except httptools.HttpParserError:  # a request target that is no URL
            self._refuse(400, b"Bad Request")
            return
        try:
            receive: Receive = _Receive(self, cycle)
            send: Send = lambda m: self._send(cycle, m)  # noqa: E731
            if scope is not None:
                await self.app(scope, receive, send)
            elif later is not None:
                await self._finish_later(cycle, later, receive, send)
        except Exception:
            logger.exception("the ASGI app failed on %s %r", cycle.method, cycle.target)
            if not cycle.head_sent:
                self._refuse(500, b"Internal Server Error")
                return
            cycle.keep_alive = False
        if not cycle.response_done:
            cycle.keep_alive = False  # a response cut short: the connection cannot carry another one
        self._finished(cycle)

    async def _finish_later(self, cycle: Cycle, later: Later, receive: Receive, send: Send) -> None:
        whole = await later(receive, send)
        if whole is None:
            return  # answered through `send`
        if self._full():
            await self._room()  # the client reads slowly: wait rather than buffer (as `_send` does)
        if not self.lost:
            self._write_whole(cycle, whole, then=False)

    def _full(self) -> bool:
        """The socket's write buffer is past its high-water mark: writers wait (`_room`). (A `writable`
        that is done counts as room: `resume_writing` clears it, and one cancelled by a mistake must not
        stop the connection for good.)"""
        writable = self.writable
        return writable is not None and not writable.done()

    def _room(self) -> asyncio.Future[None]:
        """A future done once the socket has room again (or the client left), one per waiter: a waiter
        cancelled (its task, or an app's stream producer, `wire_answers.Out.room`) cancels its own, never the
        connection's `writable` that every other waiter and the next request's answer wait on."""
        writable = self.writable
        assert writable is not None
        return asyncio.shield(writable)

    def _finished(self, cycle: Cycle, *, from_loop: bool = False) -> None:
        """`cycle` is answered: close, or go on to the next request (`from_loop`: in a callback of the loop's,
        not from here) or wait for one."""
        self.current = None
        if self.lost or self.transport is None:
            return
        if not cycle.keep_alive or self.owner.draining:
            self.transport.close()
            return
        if self.refusal is not None:  # the parser failed after the requests still pending
            if not self.pending:
                self._refuse(*self.refusal)
                return
        elif len(self.pending) <= MAX_PIPELINED:  # else a client pipelining without reading its answers
            self.transport.resume_reading()  # would have a whole read parsed per answer (unbounded)
        if not self.pending:  # (`_arm_idle`, inlined: this runs after every answer)
            self.idle_deadline = self.loop.time() + self.keepalive_timeout
        elif self.transport.is_closing():
            return  # a write failed (the client left; `connection_lost` is on its way): answer no more
        elif from_loop or self.nested >= _NESTED_MAX:
            self.loop.call_soon(self._next_if_idle)
        else:
            self.nested += 1
            try:
                self._next()
            finally:
                self.nested -= 1

    async def _receive(self, cycle: Cycle) -> Message:
        while True:
            if cycle.body:
                body = cycle.body.popleft() if len(cycle.body) == 1 else b"".join(cycle.body)
                cycle.body.clear()
                if self.transport is not None and not self.lost and not cycle.complete:
                    self.transport.resume_reading()
                cycle.delivered = cycle.complete
                return {"type": "http.request", "body": body, "more_body": not cycle.complete}
            if self.lost or cycle.response_done:
                return {"type": "http.disconnect"}
            if cycle.complete and not cycle.delivered:
                cycle.delivered = True
                return {"type": "http.request", "body": b"", "more_body": False}
            if cycle.expecting and not cycle.complete and self.transport is not None:
                # the client waits for this before it sends the body (RFC 9110 10.1.1): the app reads it
                cycle.expecting = False
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            if cycle.more is None:
                cycle.more = asyncio.Event()
            cycle.more.clear()  # wait: more body, or (body all read) the client leaving
            await cycle.more.wait()

    async def _send(self, cycle: Cycle, message: Message) -> None:
        if self._full():
            await self._room()  # the client reads slowly: wait rather than buffer
        if self.lost or self.transport is None or cycle.response_done:
            return
        kind = message["type"]
        if kind == "http.response.start":
            # held for the body that a complete reply sends right after it (one write for both); a
            # stream that has nothing to send yet still gets its head out within this loop iteration
            cycle.start = message
            asyncio.get_running_loop().call_soon(self._flush_head, cycle)
            return
        if kind != "http.response.body" or cycle.start is None:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        if cycle.head_sent and not cycle.chunked:
            self.transport.write(body)
        elif cycle.head_sent:
            chunk = (b"%x\r\n%s\r\n" % (len(body), body)) if body else b""
            self.transport.write(chunk + (b"" if more else b"0\r\n\r\n"))
        else:
            cycle.head_sent = True
            self.transport.write(self._head(cycle, cycle.start, body, more))
        if not more:
            cycle.response_done = True
            if cycle.more is not None:
                cycle.more.set()

    def _flush_head(self, cycle: Cycle) -> None:
        if cycle.head_sent or cycle.start is None or self.lost or self.transport is None:
            return
        cycle.head_sent = True
        self.transport.write(self._head(cycle, cycle.start, b"", more=True))

    def _head(self, cycle: Cycle, start: Message, body: bytes, more: bool) -> bytes:
        """The status line and headers, with the first (or only) part of the body."""
        status: int = start["status"]
        reason = REASONS.get(status, b"")
        parts = [b"HTTP/1.1 %d %s\r\ndate: %s\r\nserver: mcpframe\r\n" % (status, reason, Clock.date())]
        length = header_lines(cycle, start.get("headers", ()), parts)
        if self.owner.draining or (cycle.expecting and not cycle.complete):
            # stopping: this answer is the connection's last. Or answered before `100 Continue`: the client
            # may or may not send the body now, so the next bytes cannot be trusted to be a new request
            cycle.keep_alive = False
        if not cycle.keep_alive:
            parts.append(b"connection: close\r\n")
        head_only = cycle.method == "HEAD" or status in (204, 304)
        if length is not None or head_only or not more:
            if length is None and not head_only:
                length = b"%d" % len(body)
            if length is not None:
                parts.append(b"content-length: %s\r\n" % length)
            parts.append(b"\r\n")
            if not head_only:
                parts.append(body)
            return b"".join(parts)
        cycle.chunked = True
        parts.append(b"transfer-encoding: chunked\r\n\r\n")
        if body:
            parts.append(b"%x\r\n%s\r\n" % (len(body), body))
        return b"".join(parts)

    # ---------------------------------------------------------------- the rest

    def _refuse(self, status: int, text: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            reason = REASONS.get(status, b"")
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n%s" % (status, reason, len(text), text)
            )
            self.transport.close()

    def expire(self, now: float) -> None:
        """The sweep: act on a deadline that passed (a request head too slow, a keep-alive gone idle)."""
        if self.head_deadline is not None and now >= self.head_deadline:
            self.head_deadline = None
            self._head_late()
        if self.idle_deadline is not None and now >= self.idle_deadline:
            self.idle_deadline = None
            if self.transport is not None:
                self.transport.close()

    def _head_late(self) -> None:
        if self.current is not None or self.pending:
            # a pipelined head behind a request still being answered: reading may wait on that answer
            # (a client that does not read it yet), so the head's time starts again rather than cutting the
            # answer under way and those after it
            self.head_deadline = self.loop.time() + self.owner.head_timeout
            return
        self._refuse(408, b"Request Timeout: the request head came too slowly")

    def close_when_idle(self) -> None:
        """Stopping: close now if no answer is under way, else once the current one is out."""
        if self.current is None and self.transport is not None:
            self.transport.close()

    def _arm_idle(self) -> None:
        if self.transport is not None:
            self.idle_deadline = self.loop.time() + self.keepalive_timeout


class WireServer:
    """The lean server on one listening socket, and its graceful stop.

    `listen(sock)` starts serving; `stop_accepting()` closes the listener (connections open stay served);
    `drain(bound)` closes every idle connection and each busy one after its current answer, waits up to
    `bound` seconds for them, then closes what is left and cancels the app calls still running.
    """

    def __init__(self, app: Any, *, keepalive_timeout: float = 5.0, head_timeout: float = 10.0) -> None:
        self.app = app
        self.keepalive_timeout = keepalive_timeout
        self.head_timeout = head_timeout
        self.connections: set[_Connection] = set()
        self.tasks: set[asyncio.Task[None]] = set()  # the app calls running (one per busy connection)
        self.parked: set[Parked] = set()  # fast answers the app will deliver (no task: see `Parked`)
        self.draining = False
        self._server: asyncio.Server | None = None
        self._all_closed: asyncio.Event | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._eager: eager.EagerStarter | None = None
        # the app's hot path for a complete POST (`WireAnswer`), e.g. `StreamableHTTPServer.wire_fast`
        self.fast: Callable[[bytes, list[tuple[bytes, bytes]], bytes], WireAnswer | None] | None
        self.fast = getattr(app, "wire_fast", None)
        self.read_buffer = memoryview(bytearray(_READ_SIZE))  # every connection's reads (`get_buffer`)
        self._sweep_every = min(_SWEEP_MAX, max(_SWEEP_MIN, min(keepalive_timeout, head_timeout) / 4))

    async def listen(self, sock: Any) -> None:
        """Serve on the listening socket `sock` (returns once accepting)."""
        loop = asyncio.get_running_loop()
        name = sock.getsockname()
        bound = (str(name[0]), int(name[1]))
        self._server = await loop.create_server(lambda: _Connection(self, bound), sock=sock)
        if self._sweeper is None:
            self._sweeper = loop.create_task(self._sweep())
        if self._eager is None and eager.AVAILABLE:
            self._eager = eager.EagerStarter(loop, self._spawn)

    def start(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run an app call: its first step now when it can (see the module doc), the rest in a task."""
        if self._eager is None:
            self._spawn(coro)
        elif (task := self._eager.start(coro)) is not None:
            self.track(task)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self.track(task)
        return task

    async def _sweep(self) -> None:
        """Check every connection's deadlines a few times per timeout (see the module doc)."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._sweep_every)
            now = loop.time()
            for connection in list(self.connections):
                connection.expire(now)

    def stop_accepting(self) -> None:
        """Close the listener: no new connection; those open are served as before."""
        if self._server is not None:
            self._server.close()

    async def drain(self, bound: float) -> None:
        """Close the connections as their answers finish, waiting at most `bound` seconds; then cut."""
        self.stop_accepting()
        self.draining = True
        for connection in list(self.connections):
            connection.close_when_idle()
        self._all_closed = asyncio.Event()
        if self.connections:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._all_closed.wait(), bound)
        await self.close()

    async def close(self) -> None:
        """Close every connection (flushing what was written) and cancel the app calls still running."""
        self.stop_accepting()
        self.draining = True
        for connection in list(self.connections):
            if connection.transport is not None:
                connection.transport.close()
        self._cancel_parked()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=_ABORT_WAIT)
        if self.connections:
            self._all_closed = asyncio.Event()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._all_closed.wait(), _ABORT_WAIT)
        for connection in list(self.connections):
            if connection.transport is not None:
                connection.transport.abort()  # a client that never reads its last bytes
        if self._sweeper is not None:
            self._sweeper.cancel()  # not awaited: this close may itself be under cancellation
            self._sweeper = None
        if self._eager is not None:
            self._eager.close()  # its idle host task ends on its own
            self._eager = None

    def _cancel_parked(self) -> None:
        """Closing: the parked answers are given up (a delivery after this is dropped)."""
        for parked in list(self.parked):
            self.cancel_parked(parked)

    def cancel_parked(self, parked: Parked) -> None:
        """A parked answer the closing server will not write: given up by the app (`Parked.cancel`), a
        delivery after this dropped. Once only."""
        if parked not in self.parked:
            return
        self.parked.discard(parked)
        with wire_answers.cancelling():
            parked.give_up()

    def track(self, task: asyncio.Task[None]) -> None:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def forget(self, connection: _Connection) -> None:
        self.connections.discard(connection)
        if not self.connections and self._all_closed is not None:
            self._all_closed.set()


class _Receive:
    """A request's ASGI `receive`, which also tells of the client leaving by a callback (`on_disconnect`):
    what an SSE response (`responses.SseReply`) would else learn from a task of its own waiting on
    `receive` (that task measured ~55k instructions per SSE answer)."""

    __slots__ = ("_connection", "_cycle")

    def __init__(self, connection: _Connection, cycle: Cycle) -> None:
        self._connection = connection
        self._cycle = cycle

    def __call__(self) -> Coroutine[Any, Any, Message]:
        return self._connection._receive(self._cycle)

    def on_disconnect(self, callback: Callable[[], None] | None) -> None:
        """Call `callback()` once if the client leaves while this response is being written (at once if it
        has left already); `None` forgets the callback given before."""
        if callback is not None and self._connection.lost:
            callback()
            return
        self._cycle.on_lost = callback

    @property
    def transport(self) -> asyncio.Transport | None:
        """The connection's transport: for an app that must tell a client that reads slowly from one that
        stopped (the proxy's shared stateless child asks its socket, `proxy.listen_stateless.ClientMeter`).
        Here, not in the scope: a request that does not ask pays nothing."""
        return self._connection.transport


_Out = wire_answers.Out  # (the name the tests know it by)


async def serve_asgi(
    app: Any, sock: Any, *, keepalive_timeout: float = 5.0, head_timeout: float = 10.0
) -> None:
    """Serve `app` (its lifespan run by the caller) on the listening socket `sock` until cancelled.

    Cancelled, it stops at once (connections closed, app calls cancelled); a graceful stop is
    `WireServer`'s `stop_accepting` and `drain`.
    """
    wire = WireServer(app, keepalive_timeout=keepalive_timeout, head_timeout=head_timeout)
    await wire.listen(sock)
    try:
        await asyncio.get_running_loop().create_future()  # until cancelled
    finally:
        await asyncio.shield(wire.close())
