"""A lean keep-alive HTTP/1.1 client for the Streamable HTTP transport's POSTs (`HttpClientOptions.lean`).

httpx costs most of the client's CPU per call (request building, five layers of `handle_async_request`,
h11 events, cookies). For plain `http://` URLs, with no caller's `http_client`, no `auth` and no proxy in the
environment, `LeanPool` posts instead: an asyncio Protocol per connection, httptools' C response parser, one
request in flight per connection, idle connections kept for the next request (as many as were in use at
once, 100 at most). Its `LeanResponse` offers what
the transport's answer reader reads of an `httpx.Response` (`status_code`, `headers`, `aiter_bytes`, `aread`,
`aclose`), so JSON bodies and SSE streams, chunked or with a length, take the same path as with httpx.

Failures are raised as httpx's own exception types (`ConnectError`, `ConnectTimeout`, `WriteTimeout`,
`RemoteProtocolError`, `ReadError`), so the transport's error handling is the same for both paths. A reused
connection the server closed while idle (nothing came back) is retried once on a new connection. Reading is
flow-controlled: past `_HIGH_WATER` unread bytes the socket stops being read until the reader catches up.
Only asyncio runs it (trio keeps httpx).
"""

from __future__ import annotations

import asyncio
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Final

import httpx
import sniffio

try:  # the `http` extra installs it; without it the transport keeps httpx
    import httptools

    _HTTPTOOLS = True
except ImportError:  # pragma: no cover - the extra is installed wherever the client runs
    _HTTPTOOLS = False

__all__ = ["LeanConnection", "LeanHeaders", "LeanPool", "LeanResponse", "lean_applicable"]

_HIGH_WATER: Final = 256 * 1024  # unread body bytes before the socket is paused
_MAX_IDLE: Final = 100  # idle connections kept per pool: as many as were busy at once (the server closes
# those it finds idle too long); fewer made a proxy with 64 calls in flight reconnect for one call in six
_OURS: Final = frozenset({"host", "content-length", "transfer-encoding", "accept-encoding", "connection"})
_FRAMING: Final = frozenset({b"content-type", b"content-length", b"transfer-encoding"})
"""The headers read of every response (`LeanHeaders.raw_value` finds them without a search)."""
_MAX_OPEN: Final = 100  # connections at once (as httpx's default pool); more requests wait for one


def lean_applicable(url: str, *, has_client: bool, has_auth: bool) -> bool:
    """Whether the lean path can post to `url`: plain `http://`, no caller's client or auth, no proxy in
    the environment (httpx would honour it), httptools installed and asyncio running. A URL with user info
    (httpx turns it into basic auth) or non-ASCII characters (httpx percent-encodes them) stays with httpx."""
    if has_client or has_auth or not _HTTPTOOLS or not url.startswith("http://") or not url.isascii():
        return False
    if "@" in urllib.parse.urlsplit(url).netloc:
        return False
    proxies = urllib.request.getproxies()
    if "http" in proxies or "all" in proxies:
        return False
    try:
        return sniffio.current_async_library() == "asyncio"
    except sniffio.AsyncLibraryNotFoundError:
        return False


class LeanHeaders(Mapping[str, str]):
    """A response's headers: names compared without case; repeated headers joined with `, `.

    `add` only keeps the raw pair: the mapping is built on first use, since a proxy's fast lane reads one
    header of seven (decoding them all was a tenth of its CPU per call)."""

    __slots__ = ("_framing", "_items", "_raw")

    def __init__(self) -> None:
        self._raw: list[tuple[bytes, bytes]] = []
        self._items: dict[str, str] | None = None
        self._framing: dict[bytes, bytes] = {}  # the first value of each of `_FRAMING`, kept as they come

    def add(self, name: bytes, value: bytes) -> None:
        self._raw.append((name, value))
        self._items = None
        key = name.lower()
        if key in _FRAMING and key not in self._framing:
            self._framing[key] = value

    def raw_value(self, lowered: bytes) -> bytes | None:
        """The first value of the header named `lowered` (lower-case bytes), without building the mapping."""
        if lowered in _FRAMING:
            return self._framing.get(lowered)
        for name, value in self._raw:
            if name.lower() == lowered:
                return value
        return None

    def _mapping(self) -> dict[str, str]:
        items = self._items
        if items is None:
            items = self._items = {}
            for name, value in self._raw:
                key = name.decode("latin-1").lower()
                text = value.decode("latin-1")
                old = items.get(key)
                items[key] = text if old is None else f"{old}, {text}"
        return items

    def __getitem__(self, name: str) -> str:
        return self._mapping()[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())


class LeanConnection(asyncio.Protocol):
    """One keep-alive connection; httptools feeds the response of the request in flight into its fields."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.loop = asyncio.get_running_loop()
        self.lost = False
        self.error: Exception | None = None
        self.reset()
        self._writable: asyncio.Future[None] | None = None

    def reset(self) -> None:
        """Ready for the next response."""
        self.headers = LeanHeaders()
        self.status = 0
        self.head_done = False
        self.complete = False
        self.received = False  # any byte of this response
        self.framed = False  # Content-Length or chunked: the end is known without a close
        self.keep_alive = False
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.paused = False
        self.waiter: asyncio.Future[None] | None = None

    # ---------------------------------------------------------------- the socket

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"invalid HTTP response from the server: {exc}"))
            assert self.transport is not None
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.head_done and not self.complete and not self.framed:
            self.complete = True  # a body delimited by the close
        elif not self.complete:
            if not self.received:
                what = "the server closed the connection without sending a response"
            else:
                what = "the server closed the connection before the response ended"
            self._fail(httpx.RemoteProtocolError(what) if exc is None else httpx.ReadError(f"{what}: {exc}"))
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    @property
    def writing_paused(self) -> bool:
        """Whether the socket's write buffer is above its high-water mark."""
        return self._writable is not None

    async def writable(self) -> None:
        """Wait until the socket's write buffer drained below its high-water mark."""
        if self._writable is not None:
            await self._writable

    def _fail(self, error: Exception) -> None:
        if self.error is None:
            self.error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # ---------------------------------------------------------------- httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.add(name, value)

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        raw = self.headers.raw_value
        chunked = b"chunked" in (raw(b"transfer-encoding") or b"").lower()
        self.framed = chunked or raw(b"content-length") is not None
        if 100 <= self.status < 200:  # an interim response (100 Continue): the real one follows
            self.headers = LeanHeaders()
            return
        self.head_done = True
        # asked here: once the message is complete the parser has reset and says no
        self.keep_alive = self.parser.should_keep_alive()
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()  # the reader is slow: the server slows down with it
        self._wake()

    def on_message_complete(self) -> None:
        if self.head_done:
            self.complete = True
            self._wake()

    # ---------------------------------------------------------------- for the response

    async def wait(self) -> None:
        """Until something changed (head, body, end, failure)."""
        self.waiter = self.loop.create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    def take(self) -> bytes | None:
        """The body bytes received so far (`None`: none now); resumes a paused socket."""
        if not self.chunks:
            return None
        data = self.chunks.popleft() if len(self.chunks) == 1 else b"".join(self.chunks)
        self.chunks.clear()
        self.buffered = 0
        if self.paused and self.transport is not None and not self.lost:
            self.paused = False
            self.transport.resume_reading()
        return data

    @property
    def reusable(self) -> bool:
        return self.complete and not self.lost and self.error is None and self.keep_alive


class LeanResponse:
    """The response to one lean request, read like an `httpx.Response` streamed by the transport."""

    __slots__ = ("_conn", "closed", "headers", "status_code", "url")

    def __init__(self, conn: LeanConnection, url: str) -> None:
        self._conn = conn
        self.status_code = conn.status
        self.headers: Mapping[str, str] = conn.headers
        self.url = url
        self.closed = False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives; `httpx.RemoteProtocolError`/`ReadError` when the connection drops."""
        conn = self._conn
        while not self.closed:
            data = conn.take()
            if data is not None:
                yield data
                continue
            if conn.complete:
                return
            if conn.error is not None:
                raise conn.error
            await conn.wait()

    @property
    def finished(self) -> bool:
        """Whether the whole body arrived and was read (nothing is left to drain)."""
        return self._conn.complete and not self._conn.chunks

    async def aread(self) -> bytes:
        """The whole body (unbounded: only for bodies the transport discards or bounds itself)."""
        return b"".join([chunk async for chunk in self.aiter_bytes()])

    async def aclose(self) -> None:
        """Stop reading; a connection whose response was not read to its end is closed, not reused."""
        self.closed = True


class LeanPool:
    """Keep-alive connections to one `http://` origin, for POSTs and their streamed answers."""

    def __init__(self, url: str, *, connect_timeout: float, user_agent: str = "mcpframe") -> None:
        parts = urllib.parse.urlsplit(url)
        self.url = url
        self._host = parts.hostname or "localhost"
        self._port = parts.port or 80
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = parts.netloc.rpartition("@")[2]
        self._prefix = f"POST {self._target} HTTP/1.1\r\nhost: {host}\r\n"
        self._user_agent = f"user-agent: {user_agent}\r\n"
        self._connect_timeout = connect_timeout
        self._idle: list[LeanConnection] = []
        self._slots = asyncio.Semaphore(_MAX_OPEN)
        self._closed = False

    async def _connect(self) -> LeanConnection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, conn = await loop.create_connection(LeanConnection, self._host, self._port)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connecting to {self._host}:{self._port} timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {self._host}:{self._port}: {exc}") from exc
        return conn

    def _request_bytes(self, content: bytes, headers: Mapping[str, str]) -> bytes:
        return self.request_head(headers) + b"content-length: %d\r\n\r\n" % len(content) + content

    def request_head(self, headers: Mapping[str, str]) -> bytes:
        """The start of a POST with `headers`, up to the `content-length` line (ours to add, with the blank
        line); the fast lane prebuilds it once per session and method."""
        lines = [self._prefix]
        agent = True
        for name, value in headers.items():
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
                raise httpx.LocalProtocolError(f"illegal header {name!r}: line breaks are not allowed")
            if name.lower() in _OURS:
                continue  # the framing is ours to state
            agent = agent and name.lower() != "user-agent"
            lines.append(f"{name}: {value}\r\n")
        if agent:
            lines.append(self._user_agent)
        lines.append("accept-encoding: identity\r\n")
        return "".join(lines).encode("latin-1")

    @property
    def address(self) -> tuple[str, int]:
        """The origin's host and port."""
        return self._host, self._port

    @property
    def connect_timeout(self) -> float:
        """Seconds a connection (and writing a request) may take."""
        return self._connect_timeout

    async def _head(
        self,
        data: bytes,
        written: Callable[[], None] | None,
        cancelled: Callable[[], bool] | None,
        sending: Callable[[], None] | None = None,
    ) -> LeanConnection:
        """A connection whose response head arrived. An idle one the server closed meanwhile (nothing came
        back: most likely it closed before the request arrived) is dropped and the request sent on the next
        one, then on a new connection (httpx would fail it; a server that took the request and died without
        a byte of answer could see it twice). Not once `cancelled()`: `written` fired for the dead write, so
        the request's cancel may be on its way already, and the request sent again would overtake it."""
        while self._idle:
            conn = self._idle.pop()
            if conn.lost or conn.transport is None or conn.transport.is_closing():
                continue
            conn.reset()
            try:
                await self._await_head(conn, data, written, sending, cancelled)
            except httpx.TransportError:
                if conn.received or (cancelled is not None and cancelled()):
                    raise
                continue  # the server dropped it while idle: try another connection
            return conn
        conn = await self._connect()
        await self._await_head(conn, data, written, sending, cancelled)
        return conn

    async def _await_head(
        self,
        conn: LeanConnection,
        data: bytes,
        written: Callable[[], None] | None,
        sending: Callable[[], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        try:
            await self._send_or_wait(conn, data, written, sending, cancelled)
        except BaseException:
            if conn.transport is not None:
                conn.transport.close()
            raise

    async def _send_or_wait(
        self,
        conn: LeanConnection,
        data: bytes,
        written: Callable[[], None] | None,
        sending: Callable[[], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        # the connect timeout bounds writing only: the head of an answer may come as late as the tool likes
        assert conn.transport is not None
        if cancelled is not None and cancelled():
            # Cancelled while none of it was sent (its task resumed from the connect in the same loop pass
            # as the cancel, whose cancellation lands at the next await): it must not go out now, since the
            # caller dropped its cancel. Yield to let the cancellation land; else fail it unsent.
            await asyncio.sleep(0)
            raise httpx.WriteError("the request was cancelled before it was sent")
        if sending is not None:  # no await between it and the write: a cancel before it finds nothing sent
            sending()
        conn.transport.write(data)
        if conn.writing_paused:
            try:
                async with asyncio.timeout(self._connect_timeout):
                    await conn.writable()
            except TimeoutError:
                raise httpx.WriteTimeout("writing the request timed out") from None
        if written is not None:
            written()
        while not conn.head_done and conn.error is None and not conn.lost:
            await conn.wait()
        if conn.error is not None:
            raise conn.error
        if not conn.head_done:
            raise httpx.RemoteProtocolError("the server closed the connection without sending a response")

    @asynccontextmanager
    async def stream(
        self,
        content: bytes,
        headers: Mapping[str, str],
        written: Callable[[], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        *,
        sending: Callable[[], None] | None = None,
    ) -> AsyncIterator[LeanResponse]:
        """POST `content`; the response is read inside the block (headers first, then its body). `written`
        is called once the request was handed to the socket, before its response head came; `cancelled`
        says whether the caller cancelled it (then it is not sent, nor sent again: see `_head`); `sending`
        right before any of it is handed to a socket (each time it is)."""
        if self._closed:
            raise httpx.ConnectError("the HTTP transport is closed")
        data = self._request_bytes(content, headers)
        async with self._slots:
            conn = await self._head(data, written, cancelled, sending)
            response = LeanResponse(conn, self.url)
            try:
                yield response
            finally:
                self._release(conn)

    def _release(self, conn: LeanConnection) -> None:
        if conn.reusable and not conn.chunks and len(self._idle) < _MAX_IDLE and not self._closed:
            self._idle.append(conn)
        elif conn.transport is not None:
            conn.transport.close()

    def close(self) -> None:
        """Close the idle connections; those in use close when their response is done."""
        self._closed = True
        for conn in self._idle:
            if conn.transport is not None:
                conn.transport.close()
        self._idle.clear()
