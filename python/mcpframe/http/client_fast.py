"""`FastLane`: plain requests of a running Streamable HTTP session, posted and answered without the
transport's per-request machinery (a forwarding proxy's hot path, `mcpframe proxy URL`).

`StreamableHTTPTransport` spends most of a proxied call's CPU around the bytes: a task and a cancel scope
per request, a header dict built per request, an async context manager per POST, the answer decoded into
the inbox, then decoded again by the proxy to count it answered. The lane skips all that for the common
case and leaves everything else to the transport, unchanged:

- **What it takes**: a request (not `initialize`) once the session is running (`initialize` answered, no
  new session being started, the server known to speak Streamable HTTP over the lean pool), with no
  2026-07-28 version stamp. Anything else is the transport's.
- **Posting**: one write of prebuilt header bytes (the caller's headers, session id, protocol version,
  `Mcp-Method`: built once per session and method; only `Mcp-Name` and `Content-Length` vary) and the
  frame as it came, on a keep-alive connection of the lane's own pool, one request per connection.
- **Reading**: in the connection's callbacks, without a task: a 200 `application/json` body once complete,
  or a 200 `text/event-stream` as its events arrive (the spec's SSE parser, `SSEParser`). Each message is
  checked by the core's decoder and sorted as the transport's `AnswerReader` sorts it (`sort`), then its
  NDJSON bytes (as they came) are queued for `run`'s writer, in order: a request's progress is always
  written before its answer.
- **Handing over**: any other status (4xx, 5xx, 404 session expiry, 503 busy) or content type goes to the
  transport with the open response (`take_over`), which reads it exactly as if it had posted the request;
  an SSE stream that ends without the answer is resumed there (GET + `Last-Event-ID`), once the writer
  wrote the stream's messages read here (the resumed answer must not overtake them); a connection the
  server closed while idle has the request posted again there.

Flow control: at most `max_open` connections (a request waits for one past it, which holds back whoever
posts, i.e. the proxy's stdin); the writer's queue holds the messages of requests in flight, which the
caller bounds (`proxy.remote.MAX_IN_FLIGHT`), and an answer counts as answered only once written. Past
`max_queued` bytes queued for the writer (a slow stdout reader, a server streaming many notifications)
the lane stops taking what its connections received; each then stops reading its socket past its own
mark (`client_lean`), so the server slows down with the writer; the writer resumes them after each
write.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

import anyio
import httpx

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import Id, MessageLike
from mcpframe.http.client import StreamableHTTPTransport
from mcpframe.http.client_lean import LeanConnection, LeanResponse
from mcpframe.http.client_wire import (
    SSEEventTooLarge,
    SSEParser,
    StreamState,
    answer_missing,
    encode_header_value,
    ndjson_frame,
    synthesized_error,
)
from mcpframe.http.headers import CLIENT_NAME_PARAMS

__all__ = ["FastLane"]

logger = logging.getLogger("mcpframe.http.client")

_STAMP: Final = protocol.PROTOCOL_VERSION_KEY.encode()
"""A frame holding these bytes may carry a 2026-07-28 version stamp: the transport's (a false alarm costs
only the fast path)."""
_JSON: Final = b"application/json"
_SSE: Final = b"text/event-stream"
_MAX_HEADS: Final = 256  # prebuilt heads kept (one per method): bounded against a client inventing methods
MAX_QUEUED: Final = 1024 * 1024
"""Bytes queued for the writer past which the lane stops reading its connections (`FastLane`)."""


class _Exchange:
    """One request on a lane connection: what its answer has shown so far."""

    __slots__ = (
        "body",
        "forwarded",
        "found",
        "kind",
        "message",
        "parser",
        "rid",
        "sent_session",
        "size",
        "stream",
    )

    def __init__(self, message: MessageLike, rid: Id, sent_session: str | None) -> None:
        self.message = message
        self.rid = rid
        self.sent_session = sent_session
        self.kind: bytes | None = None  # the answer's content type, once its head came
        self.parser: SSEParser | None = None
        self.stream: StreamState | None = None
        self.found = False
        self.forwarded = False  # some of the answer's messages went out already
        self.body: list[bytes] = []  # a JSON answer's bytes so far (taken: the connection reads on)
        self.size = 0  # their length


class _LaneConnection(LeanConnection):
    """A lean connection that tells its lane whenever something arrived (read in the callback)."""

    def __init__(self, lane: FastLane) -> None:
        super().__init__()
        self.lane = lane
        self.exchange: _Exchange | None = None
        self.reused = False
        self.counted = True  # in the lane's count of open connections
        self.held = False  # left unread while the writer's queue is full

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.exchange is not None:
            self.lane.progress(self, self.exchange)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.exchange is not None:
            self.lane.progress(self, self.exchange)


class FastLane:
    """Posts `transport`'s plain in-session requests itself (see the module doc); asyncio only.

    `accepts(message)` says whether a request may take the lane, `await post(message)` posts it, and
    `run(write, answered)` writes what comes back (`write`: the bytes, in order; `answered(id)`: after the
    answer to request `id` was written). Created for a transport, it registers itself there so a request
    the caller cancels (or the server answers on another stream) is abandoned here too; a caller that
    reads the cancel itself calls `withdraw(id)` before sending it, and gets no answer to it from then on.
    """

    def __init__(
        self, transport: StreamableHTTPTransport, *, max_open: int = 100, max_queued: int = MAX_QUEUED
    ) -> None:
        self._transport = transport
        self._max_open = max_open
        self._max_queued = max_queued
        self._open = 0
        self._idle: list[_LaneConnection] = []
        self._room = anyio.Event()
        self._busy: dict[Id, _LaneConnection] = {}
        self._posting: set[Id] = set()  # requests `post` holds while it waits for a connection
        self._withdrawn: set[Id] = set()  # posted requests the client cancelled: nothing more of them read
        self._key: tuple[str | None, str | None, dict[str, str]] | None = None
        self._heads: dict[str, bytes] = {}
        self._names: dict[bytes, bytes] = {}  # a name's JSON bytes -> its `mcp-name` line
        self._out: list[bytes] = []
        self.queued = 0
        """Bytes queued for the writer or being written (what `max_queued` bounds)."""
        self.most_queued = 0
        """The most `queued` has been (what the bound allowed: `max_queued` plus one connection's read)."""
        self._held: list[_LaneConnection] = []
        self._handovers: list[tuple[MessageLike, StreamState]] = []  # after what is queued is written
        self._answered: list[Id] = []
        self._wake = anyio.Event()
        self._closed = False
        self.posted = 0
        """Requests posted by the lane (the rest went the transport's way)."""
        self.handed_over = 0
        """Of those, answers handed to the transport (an error status, a resumed stream...)."""
        transport.lane = self

    # ------------------------------------------------------------------ posting

    def accepts(self, message: MessageLike) -> bool:
        """Whether `message` may take the lane (see the module doc)."""
        transport = self._transport
        return (
            message.kind == "request"
            and message.method != protocol.INITIALIZE
            and not self._closed
            and transport.probe is None
            and transport.lean_pool is not None
            and transport.session_ready
            and message.id not in self._busy
            and message.id not in self._posting
            and _STAMP not in message.raw
        )

    async def post(self, message: MessageLike) -> None:
        """Post request `message` (it `accepts`); returns once it is written, its answer comes to `run`.
        Waits for a connection while `max_open` are in use; a failure to connect or an illegal header
        hands the request to the transport, which reports it as it always does."""
        rid = message.id
        assert rid is not None
        posting = self._posting
        posting.add(rid)
        try:
            data = self._head(message) + b"content-length: %d\r\n\r\n" % len(message.raw) + message.raw
            conn = await self._acquire()
        except (httpx.HTTPError, OSError):
            if rid in posting:  # not withdrawn meanwhile
                posting.discard(rid)
                self._transport.take_over(message)
            return
        except BaseException:
            posting.discard(rid)
            raise
        if rid not in posting:  # the client cancelled it while it waited: never posted
            self._release(conn)
            return
        posting.discard(rid)
        exchange = _Exchange(message, rid, self._transport.session_id)
        conn.reset()
        conn.exchange = exchange
        self._busy[rid] = conn
        self.posted += 1
        assert conn.transport is not None
        conn.transport.write(data)
        if conn.writing_paused:
            await self._writable(conn)

    async def _writable(self, conn: _LaneConnection) -> None:
        """Wait while the socket's buffer is full (a slow server holds the poster back), boundedly."""
        try:
            with anyio.fail_after(self._timeout):
                await conn.writable()
        except TimeoutError:
            conn._fail(httpx.WriteTimeout("writing the request timed out"))
            if conn.transport is not None:
                conn.transport.close()

    @property
    def _timeout(self) -> float:
        pool = self._transport.lean_pool
        return pool.connect_timeout if pool is not None else 10.0

    def _head(self, message: MessageLike) -> bytes:
        """The request's head up to `content-length`: prebuilt per session and method, plus `Mcp-Name`."""
        transport = self._transport
        key = transport.session_key()
        if key != self._key or len(self._heads) >= _MAX_HEADS:
            self._key = (key[0], key[1], dict(key[2]))  # a copy: the caller's headers may change in place
            self._heads.clear()
            self._names.clear()
        method = message.method or ""
        head = self._heads.get(method)
        if head is None:
            pool = transport.lean_pool
            assert pool is not None
            head = self._heads[method] = pool.request_head(transport.session_headers(method))
        param = CLIENT_NAME_PARAMS.get(method)
        if param is None:
            return head
        raw = message.raw
        span = core.value_span(raw, ["params", param])
        if span is None:
            return head
        value = raw[span[0] : span[1]]
        line = self._names.get(value)
        if line is None:
            name = json.loads(value)
            line = (
                b"mcp-name: " + encode_header_value(name).encode("ascii") + b"\r\n"
                if isinstance(name, str)
                else b""
            )
            if len(self._names) < _MAX_HEADS:
                self._names[value] = line
        return head + line

    async def _acquire(self) -> _LaneConnection:
        """An idle connection still open, else a new one (at most `max_open`; past it wait for one)."""
        while True:
            while self._idle:
                conn = self._idle.pop()
                if conn.lost or conn.transport is None or conn.transport.is_closing():
                    self._discard(conn)
                    continue
                conn.reused = True
                return conn
            if self._open < self._max_open:
                return await self._connect()
            self._room = anyio.Event()
            await self._room.wait()

    async def _connect(self) -> _LaneConnection:
        pool = self._transport.lean_pool
        assert pool is not None
        host, port = pool.address
        self._open += 1
        loop = asyncio.get_running_loop()
        try:
            with anyio.fail_after(pool.connect_timeout):
                _, conn = await loop.create_connection(lambda: _LaneConnection(self), host, port)
        except BaseException:
            self._open -= 1
            self._room.set()
            raise
        if self._closed:  # closed while connecting (shutdown): nobody would close this one
            self._discard(conn)
            raise httpx.ConnectError("the fast lane is closed")
        return conn

    # ------------------------------------------------------------------ connections

    def _release(self, conn: _LaneConnection) -> None:
        """`conn`'s exchange is over: kept for the next request when its response ended cleanly."""
        conn.exchange = None
        if conn.reusable and not conn.chunks and not self._closed:
            self._idle.append(conn)
            self._room.set()
        else:
            self._discard(conn)

    def _discard(self, conn: _LaneConnection) -> None:
        conn.exchange = None
        if conn.transport is not None:
            conn.transport.close()
        if conn.counted:
            conn.counted = False
            self._open -= 1
            self._room.set()

    def abandon(self, rid: Id) -> None:
        """Stop waiting for request `rid` (cancelled, or answered on another stream): its connection is
        closed, and nothing of its answer not written yet is (as `withdraw`)."""
        self.withdraw(rid)
        self._withdrawn.discard(rid)
        conn = self._busy.pop(rid, None)
        if conn is not None:
            self._discard(conn)

    def withdraw(self, rid: Id) -> None:
        """The client cancelled request `rid` (called before its cancel is posted): it gets no answer from
        here on. Waiting for a connection, it is never posted; posted, what comes back on its connection
        is no longer read (the connection stays open until the transport, having posted the cancel,
        `abandon`s it: the server sees the cancel before the stream closes); its answer queued for the
        writer is taken out; its stream queued for the transport to resume is not resumed."""
        self._posting.discard(rid)
        if rid in self._busy:
            self._withdrawn.add(rid)
        if rid in self._answered:
            self._unqueue(rid)
        if self._handovers:
            self._handovers = [(message, state) for message, state in self._handovers if message.id != rid]

    def _unqueue(self, rid: Id) -> None:
        """Take the answer to `rid` out of the writer's queue (not taken by the writer yet)."""
        self._answered.remove(rid)
        out = self._out
        for index in range(len(out) - 1, -1, -1):
            (item,) = core.decode(out[index], lazy=True)
            if not isinstance(item, core.FrameError) and item.kind in ("result", "error") and item.id == rid:
                self.queued -= len(out.pop(index))
                return

    # ------------------------------------------------------------------ reading

    def progress(self, conn: _LaneConnection, exchange: _Exchange) -> None:
        """Something arrived on `conn` (or it closed): read what can be read of `exchange`'s answer."""
        if self._withdrawn and self._dropped(conn, exchange):
            return
        if conn.error is not None or (conn.lost and not conn.complete):
            self._failed(conn, exchange)
            return
        if not conn.head_done:
            return
        if exchange.kind is None:
            raw = conn.headers.raw_value(b"content-type") or b""
            kind = raw.partition(b";")[0].strip().lower()
            if conn.status != 200 or kind not in (_JSON, _SSE):
                self._hand_over(conn, exchange)
                return
            exchange.kind = kind
            if kind == _SSE:
                exchange.parser = SSEParser(self._transport.options.max_message)
                exchange.stream = StreamState()
        if self.queued >= self._max_queued:  # the writer is behind: read on once it wrote
            if not conn.held:
                conn.held = True
                self._held.append(conn)
            return
        if exchange.kind == _JSON:
            self._read_json(conn, exchange)
        else:
            self._read_sse(conn, exchange)

    def _dropped(self, conn: _LaneConnection, exchange: _Exchange) -> bool:
        """Whether `exchange` was withdrawn (nothing of it is read; its connection ends once the answer's
        end came or it failed, if `abandon` did not end it first)."""
        if exchange.rid not in self._withdrawn:
            return False
        if conn.error is not None or conn.lost or conn.complete:
            self._forget(conn, exchange)
            self._discard(conn)
        return True

    def _read_json(self, conn: _LaneConnection, exchange: _Exchange) -> None:
        # taken as it comes: left in the connection, a body past its mark would pause the socket for good
        data = conn.take()
        if data:
            exchange.body.append(data)
            exchange.size += len(data)
        limit = self._transport.options.max_message
        if exchange.size > limit:
            why = f"the server's JSON answer exceeds {limit} bytes (HttpClientOptions.max_message); not read"
            self._finish(conn, exchange, synthesized_error(exchange.rid, jsonrpc.INTERNAL_ERROR, why))
            return
        if not conn.complete:
            return
        body = exchange.body[0] if len(exchange.body) == 1 else b"".join(exchange.body)
        exchange.body = []
        self._deliver(exchange, core.decode(body, lazy=True))
        self._finish(conn, exchange, None if exchange.found else self._missing(exchange))

    def _read_sse(self, conn: _LaneConnection, exchange: _Exchange) -> None:
        parser, stream = exchange.parser, exchange.stream
        assert parser is not None
        assert stream is not None
        data = conn.take()
        if data:
            try:
                events = parser.feed(data)
            except SSEEventTooLarge as exc:
                logger.warning("closing an SSE stream from %s: %s", self._transport.url, exc)
                why = (
                    f"the server's SSE event exceeds {parser.max_event} bytes (HttpClientOptions.max_message)"
                )
                self._finish(conn, exchange, synthesized_error(exchange.rid, jsonrpc.INTERNAL_ERROR, why))
                return
            stream.last_event_id = parser.last_event_id
            if parser.retry is not None:
                stream.retry_ms = parser.retry
            for event in events:
                if event.event == "message" and event.data:
                    self._deliver(exchange, core.decode(event.data, lazy=True))
                    if exchange.found:
                        break  # what follows the answer is not read (as the transport does)
        if exchange.found:
            self._finish(conn, exchange, None)
        elif conn.complete:  # the stream ended without the answer: resumed by the transport
            self._forget(conn, exchange)
            self._release(conn)
            self._resume_there(exchange, stream)

    def _deliver(self, exchange: _Exchange, items: Iterable[MessageLike | core.FrameError]) -> None:
        """Queue the messages for the writer, sorted as the transport sorts them."""
        found, forward = self._transport.reader.sort(items, exchange.rid, False)
        if forward:
            exchange.forwarded = True
            self._queue([ndjson_frame(message) for message in forward])
        if found is not False:
            exchange.found = True
            self._answered.append(exchange.rid)

    def _queue(self, frames: list[bytes]) -> None:
        self._out += frames
        self.queued += sum(map(len, frames))
        self.most_queued = max(self.most_queued, self.queued)
        self._wake.set()

    def _missing(self, exchange: _Exchange) -> MessageLike:
        return answer_missing(exchange.rid, stream=False)

    def _finish(self, conn: _LaneConnection, exchange: _Exchange, failure: MessageLike | None) -> None:
        """`exchange` is over: `failure` (if any) is its answer; the connection kept if it ended cleanly."""
        self._forget(conn, exchange)
        if failure is not None:
            self._queue([ndjson_frame(failure)])
            self._answered.append(exchange.rid)
        self._release(conn)

    def _forget(self, conn: _LaneConnection, exchange: _Exchange) -> None:
        if self._busy.get(exchange.rid) is conn:
            del self._busy[exchange.rid]
            if self._withdrawn:
                self._withdrawn.discard(exchange.rid)
        conn.exchange = None

    def _failed(self, conn: _LaneConnection, exchange: _Exchange) -> None:
        """The connection failed under `exchange`: as the transport would have it."""
        self._forget(conn, exchange)
        self._discard(conn)
        if exchange.stream is not None:  # an SSE answer cut short: resumed (or failed) by the transport
            self._resume_there(exchange, exchange.stream)
        elif conn.reused and not conn.received:  # closed by the server while idle: posted again there
            self.handed_over += 1
            self._transport.take_over(exchange.message)
        else:
            error = conn.error or httpx.RemoteProtocolError("the server closed the connection")
            text = f"HTTP request failed: {error!r}"
            self._finish(conn, exchange, synthesized_error(exchange.rid, jsonrpc.CONNECTION_CLOSED, text))

    def _resume_there(self, exchange: _Exchange, stream: StreamState) -> None:
        """The transport resumes `exchange`'s stream; once the writer wrote what is queued when some of
        the stream's messages went out here (the transport's writes must not overtake them)."""
        self.handed_over += 1
        if exchange.forwarded and self.queued:
            self._handovers.append((exchange.message, stream))
            self._wake.set()
        else:
            self._transport.take_over(exchange.message, stream)

    def _hand_over(self, conn: _LaneConnection, exchange: _Exchange) -> None:
        """An answer the lane does not read (status, content type): the transport reads it."""
        self._forget(conn, exchange)
        self.handed_over += 1
        response = LeanResponse(conn, self._transport.url)
        self._transport.take_over(
            exchange.message, (response, exchange.sent_session), done=lambda: self._release(conn)
        )

    # ------------------------------------------------------------------ writing

    async def run(self, write: Callable[[bytes], Awaitable[None]], answered: Callable[[Id], None]) -> None:
        """Write what the lane's requests got back, in order, until cancelled; then close the lane."""
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                out, self._out = self._out, []
                ids, self._answered = self._answered, []
                handovers = list(self._handovers)  # queued behind `out`; `withdraw` may drop some meanwhile
                if out:
                    data = b"".join(out)
                    await write(data)
                    self.queued -= len(data)
                for rid in ids:
                    answered(rid)
                for handover in handovers:
                    if handover in self._handovers:
                        self._handovers.remove(handover)
                        self._transport.take_over(*handover)
                self._resume()
        finally:
            self.close()

    def _resume(self) -> None:
        """Read on the connections held while the queue was full (until it fills again)."""
        held, self._held = self._held, []
        for conn in held:
            conn.held = False
            if conn.exchange is not None:
                self.progress(conn, conn.exchange)

    def close(self) -> None:
        """Close every connection of the lane; it takes no more requests. Idempotent."""
        self._closed = True
        for conn in [*self._idle, *self._busy.values()]:
            self._discard(conn)
        self._idle.clear()
        self._busy.clear()
        self._held.clear()
        self._handovers.clear()
        if self._transport.lane is self:
            self._transport.lane = None
