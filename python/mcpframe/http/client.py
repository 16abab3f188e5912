"""The Streamable HTTP client, as a `Transport`: the Session above it keeps speaking NDJSON.

`async with StreamableHTTPTransport(url) as t, Session(t) as session: ...`, or `mcpframe.http.connect(url)`.
Each outgoing message becomes one POST (`Accept: application/json, text/event-stream`). Requests are posted
from background tasks, so a call may wait for its answer while other messages go out; notifications and
responses are posted in order before `send` returns. Answers arrive as JSON bodies or SSE streams and are
handed to `receive` as NDJSON frames, as are the server's own requests and notifications (also from the
standalone GET stream opened after `notifications/initialized`).

HTTP-level failures (an error status, a body or stream without the answer, a connection failure) become
JSON-RPC errors for the requests they concern, so a caller never waits forever; a 503 with a short
`Retry-After` (a busy server that did not start the request) is first waited out and the request sent
again. A session the server no longer knows (404 for our `Mcp-Session-Id`) is re-initialized with the
original `initialize` params and the message sent again. An SSE stream closed before its answer arrived is
resumed with `GET` + `Last-Event-ID` after the server's `retry` delay. A request the caller cancels has its
stream closed. Its `notifications/cancelled` never overtakes it (a POST on another connection could): a
request none of which was sent yet (not posted, or waiting for a connection) is dropped with its cancel and
never goes on the wire; one being written has its cancel held in a task of the transport's and posted once
it was written (`send` returns at once: the session's other messages do not wait for a slow write;
`held_cancel` tells a caller counting requests in flight when that cancel went); a cancelled request is
not sent again (503, new session).

A message carrying `_meta["io.modelcontextprotocol/protocolVersion"]` (2026-07-28, stateless) is sent with
that version in `MCP-Protocol-Version` and without a session id; every request and notification carries
`Mcp-Method` and, for named targets, `Mcp-Name`.

A caller may pipeline the handshake: send `initialize`, then `notifications/initialized` and its first
requests without waiting for the answer. The server gives the session (`Mcp-Session-Id`) and the version
with that answer, and a strict one refuses what comes without them, so `send` holds every message after a
handshake-era `initialize` (the `send` call waits) until its answer arrived, or its exchange ended without
one; a cancel of that `initialize` itself is not held (as the remote proxy's `Handshake` holds frames).

This module owns the transport's lifecycle, the `Transport` interface, headers, posting (one exchange per
request, with re-initialization of an expired session) and the standalone GET stream. The transport is
composed of: its `HttpClientOptions` (`options.py`), the `SessionState` it shares with its `AnswerReader`
and its `Inbox` (`client_answers.py`: reading JSON bodies and SSE streams, resuming them, handing messages
to `receive`); the wire helpers (SSE parsing, header values) are in `client_wire.py`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Literal, Protocol

import anyio
import anyio.abc
import httpx

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import Id, MessageLike
from mcpframe.http.client_answers import AnswerReader, Inbox, Undeliverable
from mcpframe.http.client_lean import LeanPool, lean_applicable
from mcpframe.http.client_wire import (
    BackgroundTransport,
    HttpResponse,
    SessionState,
    StreamState,
    answer_missing,
    content_type,
    encode_header_value,
    mcp_name,
    refusal_reason,
    request_id,
    retry_after,
    stamped_version,
    synthesized_error,
)
from mcpframe.http.headers import MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID
from mcpframe.http.options import HttpClientOptions
from mcpframe.transports.base import TransportClosedError

__all__ = ["HttpClientOptions", "Probe", "StreamableHTTPTransport"]

logger = logging.getLogger("mcpframe.http.client")

_ACCEPT: Final = "application/json, text/event-stream"
GET_OPEN_WAIT: Final = 1.0
"""Seconds the requests after `notifications/initialized` wait at most for the GET stream's answer head
(a server that holds its headers back until its first event costs the client this much, once)."""

PendingAnswer = tuple[HttpResponse, str | None]
"""A response to a request posted already, and the session id it was posted with (`_exchange`)."""


class _Posting:
    """A request this transport posts: the scope of its exchange, and how far its POST got (`send` holds
    the request's cancel back until the server can have the request: see `_cancel`)."""

    __slots__ = ("_waiter", "cancelled", "scope", "sending", "started", "written")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.started = False  # its task began posting it (it may still wait for a connection)
        self.sending = False  # some of it may be on the wire: its head or body was handed to a socket
        self.written = False  # all of it went out (or its answer's head came, or the exchange ended)
        self.cancelled = False  # the caller sent its cancel: it is not sent again (503, new session)
        self._waiter: anyio.Event | None = None  # made only for a cancel that waits (most never do)

    def is_cancelled(self) -> bool:
        return self.cancelled

    def on_sending(self) -> None:
        self.sending = True

    def on_written(self) -> None:
        self.written = True
        if self._waiter is not None:
            self._waiter.set()

    def body(self, content: bytes) -> _Body:
        """The request's body as httpx streams it (see `_Body`)."""
        return _Body(content, self)

    async def trace(self, event: str, info: Any) -> None:
        """httpcore's `trace` extension, for a client whose `httpx.Auth` reads the body before sending it
        (to send it again), which would take it from `body` before anything was sent."""
        if event.endswith("send_request_headers.started"):
            self.on_sending()
        elif event.endswith("send_request_body.complete"):
            self.on_written()

    async def wait_written(self) -> None:
        if not self.written:
            if self._waiter is None:
                self._waiter = anyio.Event()
            await self._waiter.wait()

    def again(self) -> None:
        """It is sent again (a 503, a new session): a cancel from now on waits for the new POST (or drops
        it, until some of it is sent)."""
        self.sending = False
        self.written = False
        self._waiter = None  # set already, if any: `written` was


class _Body:
    """A request's body that tells its `_Posting` when it was written: the transport asks for more once it
    has written all of it (httpcore), or once the app read it (`httpx.ASGITransport`). Iterable again and
    again (not a generator, which httpx refuses to replay): an `httpx.Auth` that answers a 401 by sending
    the request again, or a client following a 307/308, sends the body twice."""

    __slots__ = ("_content", "_posting")

    def __init__(self, content: bytes, posting: _Posting) -> None:
        self._content = content
        self._posting = posting

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._posting.on_sending()  # httpx writes what it is handed (its head went just before)
        yield self._content
        self._posting.on_written()


class Abandoning(Protocol):
    """What the transport tells a fast lane (`client_fast.FastLane`): stop waiting for request `rid`."""

    def abandon(self, rid: Id) -> None: ...


Probe = Callable[[MessageLike, HttpResponse], Awaitable[bool]]
"""`StreamableHTTPTransport.probe`: given a request and the response to its POST (status and headers read,
body not yet), returns `True` when it took the request over (its answer will come another way)."""


class StreamableHTTPTransport(BackgroundTransport):
    """A `Transport` speaking MCP Streamable HTTP to one endpoint (see the module doc).

    `headers` go with every request (e.g. `Authorization`); `http_client` is an `httpx.AsyncClient` to send
    them with (proxies, TLS, event hooks; the caller closes it); `options` are the transport's knobs.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        options: HttpClientOptions | None = None,
        auth: httpx.Auth | None = None,
    ) -> None:
        super().__init__(url, http_client, options, auth)
        opts = self.options
        self._state = SessionState(headers)
        self._inbox = Inbox(opts.max_buffer)
        self._reader = AnswerReader(
            self._http,
            url,
            state=self._state,
            inbox=self._inbox,
            options=opts,
            answered_elsewhere=self._stop_waiting,
        )
        self._reinit_count = 0
        # `HttpClientOptions.lean`: the pool is made in `run()`, where the event loop is known
        self._lean_wanted = opts.lean and http_client is None and auth is None
        self._lean: LeanPool | None = None
        self._exchanges: dict[Id, _Posting] = {}
        self._held: dict[Id, anyio.Event] = {}  # cancels held until their request was written (`_cancel`)
        self._reinit_lock = anyio.Lock()
        self._get_running = False
        self._get_open = anyio.Event()  # the GET stream's answer head came (or it failed, or none is kept)
        self._tg: anyio.abc.TaskGroup | None = None
        self._closing = anyio.Event()
        self._closed = False
        # `connect(transport="auto")` sets it until the server is known to speak Streamable HTTP: a 400,
        # 404 or 405 to the first POST may mean a legacy HTTP+SSE server (`http/client_sse_auto.py`).
        self.probe: Probe | None = None
        # `client_fast.FastLane` sets it while it posts some requests itself: a cancelled request, or one
        # answered on another stream, is abandoned there too
        self.lane: Abandoning | None = None

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the background work (POST exchanges, SSE streams) until `aclose()`; for `TaskGroup.start`."""
        if self._lean_wanted and lean_applicable(self.url, has_client=False, has_auth=False):
            self._lean = LeanPool(self.url, connect_timeout=self.options.connect_timeout)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                await self._closing.wait()
                tg.cancel_scope.cancel()
        finally:
            self._tg = None
            if self._lean is not None:
                self._lean.close()
            if self._own_http:
                with anyio.CancelScope(shield=True):
                    await self._http.aclose()

    async def aclose(self) -> None:
        """End the HTTP session (`DELETE`, best effort, 2 s at most) and stop everything. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._inbox.close()
        if self._state.opening is not None:
            self._state.opening.set()  # a `send` holding messages for the handshake ends (closed)
        if self.options.terminate_on_close and self.session_id is not None and self._tg is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2.0):
                try:
                    await self._http.delete(self.url, headers=self._state.headers())
                except httpx.HTTPError as exc:
                    logger.debug("DELETE of the HTTP session failed: %s", exc)
        self._closing.set()

    @property
    def closed(self) -> bool:
        """Whether `aclose` was called."""
        return self._closed

    @property
    def in_flight(self) -> int:
        """How many requests are still being posted or waiting for their answer stream."""
        return len(self._exchanges)

    @property
    def headers(self) -> dict[str, str]:
        """The caller's headers, sent with every request (mutable: e.g. a refreshed `Authorization`)."""
        return self._state.base

    @property
    def session_id(self) -> str | None:
        """The HTTP session's `Mcp-Session-Id` (`None` before `initialize` was answered, and stateless)."""
        return self._state.session_id

    @property
    def protocol_version(self) -> str | None:
        """The version negotiated by `initialize`, sent as `MCP-Protocol-Version` inside the session."""
        return self._state.protocol_version

    # ------------------------------------------------------------------ the Transport interface

    async def receive(self) -> bytes:
        """The next message(s) from the server as NDJSON; `b""` once closed."""
        return await self._inbox.receive()

    async def send(self, data: bytes) -> None:
        """Post each message in `data`: requests in the background, the rest before returning (but for a
        cancel of a request being written, held in a task until the request was written: `_cancel`)."""
        if self._closed:
            raise TransportClosedError("the HTTP transport is closed")
        tg = self._tg
        if tg is None:
            raise TransportClosedError("the HTTP transport is not running (use `async with` or run())")
        decoder = core.Decoder(lazy=True)
        for item in [*decoder.feed(data), *decoder.close()]:
            if isinstance(item, core.FrameError):
                logger.warning("not sending an invalid frame: %s", item.message)
                continue
            if self._state.opening is not None or item.method == protocol.INITIALIZE:
                await self._handshake(item)  # (the test first: no coroutine per message on the hot path)
            if item.kind == "request":
                posting = _Posting()
                tg.start_soon(self._post_request, item, posting)  # raises if the task group is gone
                self._exchanges[request_id(item)] = posting  # before its task runs: see `_cancel`
            elif item.method == protocol.NOTIFICATIONS_CANCELLED:
                await self._cancel(item, tg)
            else:
                await self._post_other(item)

    @property
    def batches(self) -> bool:
        """Whether a JSON-RPC batch may be posted whole (`send_batch`): the session is running and it
        negotiated 2025-03-26, the one revision with batches (`protocol.batches_allowed`)."""
        return (
            self.session_ready
            and self._state.opening is None
            and protocol.batches_allowed(self._state.protocol_version)
        )

    async def send_batch(self, data: bytes, ids: Sequence[Id]) -> None:
        """Post `data`, one JSON-RPC batch (a JSON array) whose requests are `ids` (not empty), as one body
        in the session, from a task as a request is (`batches` must hold). Its answers go to `receive` one
        NDJSON line each, as any other; a request of `ids` the server's answer lacks (an error status, a
        dropped connection, a stream cut short: a batch is neither resumed nor sent again) gets an error
        answer. A cancel of one of its requests is posted at once (the server may not have it yet)."""
        tg = self._tg
        if self._closed or tg is None:
            raise TransportClosedError("the HTTP transport is closed")
        tg.start_soon(self._post_batch, data, set(ids))

    async def _post_batch(self, data: bytes, owed: set[Id]) -> None:
        headers = self._state.headers()
        headers["accept"] = _ACCEPT
        headers["content-type"] = "application/json"
        why: str | None = None  # the HTTP failure, if any
        try:
            async with self._post(data, headers) as resp:
                await self._reader.batch(resp, owed)
        except Undeliverable:
            return
        except httpx.HTTPError as exc:
            why = f"HTTP request failed: {exc!r}"
        if owed:
            await self._inbox.push(
                [
                    answer_missing(rid, stream=False)
                    if why is None
                    else synthesized_error(rid, jsonrpc.CONNECTION_CLOSED, why)
                    for rid in owed
                ]
            )

    async def _handshake(self, message: MessageLike) -> None:
        """Hold `message` while an `initialize` sent before waits for its answer (see the module doc:
        pipelining); note an `initialize`, and whether what follows it must wait for its session id."""
        state = self._state
        if state.opening is not None and not self._cancels_opening(message):
            await self.handshake_answered()
            if self._closed:
                raise TransportClosedError("the HTTP transport is closed")
        if message.kind == "request" and message.method == protocol.INITIALIZE:
            state.init_request = message
            if stamped_version(message.params) is None:  # a session opens: what follows waits
                state.opening = anyio.Event()

    def _cancels_opening(self, message: MessageLike) -> bool:
        """Whether `message` cancels the `initialize` being answered: it must not wait for that answer."""
        init = self._state.init_request
        params = message.params if message.method == protocol.NOTIFICATIONS_CANCELLED else None
        return init is not None and isinstance(params, dict) and params.get("requestId") == init.id

    async def handshake_answered(self) -> None:
        """Return once no `initialize` sent here waits for its answer (at once when none does): what `send`
        waits for before a message that follows it (see the module doc: pipelining)."""
        opening = self._state.opening
        if opening is not None:
            await opening.wait()
            if self._state.opening is opening:
                self._state.opening = None

    async def _cancel(self, message: MessageLike, tg: anyio.abc.TaskGroup) -> None:
        """Post a `notifications/cancelled`, never before the request it names: that request is posted from
        a task of its own, on another connection, and a server that got the cancel first would ignore it
        and then run the request. None of it sent yet (not posted, or waiting for a connection), the request
        is dropped with its cancel: its exchange ends now and the server hears of neither. Being written,
        the cancel is held in a task until the request was written (at most the write timeout), then goes
        (`held_cancel` says when), and `send` returns at once: its caller's other messages (answers to the
        server's requests, pings, the next requests) do not wait for a slow write."""
        params = message.params
        rid = params.get("requestId") if isinstance(params, dict) else None
        posting = self._exchanges.get(rid) if isinstance(rid, int | str) else None
        if posting is not None:  # before any await: a 503 answered meanwhile must not send it again
            posting.cancelled = True
        if posting is not None and not posting.written:
            assert isinstance(rid, int | str)  # it names a posting
            if not posting.sending:
                logger.debug("request %r cancelled before any of it was sent: neither is sent", rid)
                self._abandon(params)
                return
            taken = self._held[rid] = anyio.Event()
            tg.start_soon(self._cancel_once_written, message, rid, posting, taken)
            return
        await self._post_other(message)  # ours and out already, the lane's, or answered
        self._abandon(params)

    async def _cancel_once_written(
        self, message: MessageLike, rid: Id, posting: _Posting, taken: anyio.Event
    ) -> None:
        params = message.params
        try:
            await posting.wait_written()
            if not self._closed:  # closed meanwhile: the request's exchange ended with the transport
                await self._post_other(message)
        except Exception:  # in a task of the transport's: a bug must cost this cancel only
            logger.exception("posting the cancel of request %r failed", params)
        finally:
            self._abandon(params)
            if self._held.get(rid) is taken:
                del self._held[rid]
            taken.set()

    def held_cancel(self, rid: Id) -> anyio.Event | None:
        """The event set once the cancel of request `rid` that `send` held back (its request was being
        written) was posted and the request's exchange ended (or the transport closed); `None` when no
        cancel of `rid` is held: one `send` took was posted, or dropped with its request, before it
        returned. A caller bounding its requests in flight waits for it before it counts `rid` done."""
        return self._held.get(rid)

    def _abandon(self, params: Any) -> None:
        """The caller gave up on a request: stop waiting for its answer and close its stream (in 2026-07-28
        closing the stream is itself the cancellation)."""
        rid = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(rid, int | str):
            self._stop_waiting(rid)

    def _stop_waiting(self, rid: Id) -> None:
        """End the exchange of request `rid` (if still running): its answer came elsewhere, or never will."""
        posting = self._exchanges.get(rid)
        if posting is not None:
            posting.scope.cancel()
        if self.lane is not None:
            self.lane.abandon(rid)

    # ------------------------------------------------------------------ headers

    def _post_headers(self, message: MessageLike) -> dict[str, str]:
        params = message.params if message.method is not None else None
        version = stamped_version(params)
        if message.method == protocol.INITIALIZE:
            headers = dict(self._state.base)  # a new session: no session id, no version yet
        elif version is None:
            headers = self._state.headers()
        else:
            headers = dict(self._state.base)
            headers[MCP_PROTOCOL_VERSION] = version
        headers["accept"] = _ACCEPT
        headers["content-type"] = "application/json"
        if message.method is not None:
            headers[MCP_METHOD] = encode_header_value(message.method)
            name = mcp_name(message.method, params)
            if name is not None:
                headers[MCP_NAME] = encode_header_value(name)
        return headers

    # ------------------------------------------------------------------ for the fast lane (client_fast.py)

    @property
    def lean_pool(self) -> LeanPool | None:
        """The lean keep-alive pool when the lean path is in use (`HttpClientOptions.lean`), else `None`."""
        return self._lean

    @property
    def reader(self) -> AnswerReader:
        """The answer reader, whose `sort` the fast lane uses to check what it forwards."""
        return self._reader

    @property
    def session_ready(self) -> bool:
        """Whether a request may be posted in the running session by someone else than this transport:
        `initialize` answered, no new session being started, the transport running and open."""
        state = self._state
        return (
            state.protocol_version is not None
            and self._tg is not None
            and not self._closed
            and not self._reinit_lock.locked()
        )

    def session_key(self) -> tuple[str | None, str | None, dict[str, str]]:
        """What the headers of a request in the session depend on: the session id, the version and the
        caller's headers (the live dict: compare it with a copy)."""
        state = self._state
        return (state.session_id, state.protocol_version, state.base)

    def session_headers(self, method: str) -> dict[str, str]:
        """The headers of a `method` request in the running session, but `Mcp-Name` (per request)."""
        headers = self._state.headers()
        headers["accept"] = _ACCEPT
        headers["content-type"] = "application/json"
        headers[MCP_METHOD] = encode_header_value(method)
        return headers

    def take_over(
        self,
        message: MessageLike,
        pending: PendingAnswer | StreamState | None = None,
        *,
        done: Callable[[], None] | None = None,
    ) -> None:
        """Finish request `message` here, as if this transport had posted it: read `pending`, a response to
        it (404, 503, errors and all), or resume its SSE stream; post it (again) when `None`. `done` is
        called once the response was read (the caller's connection is free again)."""
        if self._tg is None:
            if done is not None:
                done()
            return
        posting = _Posting()
        if pending is not None:  # the fast lane posted it: the server has it
            posting.started = True
            posting.on_sending()
            posting.on_written()
        self._tg.start_soon(self._post_request, message, posting, pending, done)
        self._exchanges[request_id(message)] = posting  # before its task runs: see `_cancel`

    # ------------------------------------------------------------------ posting

    def _post(
        self, content: bytes, headers: Mapping[str, str], posting: _Posting | None = None
    ) -> AbstractAsyncContextManager[HttpResponse]:
        """POST `content`, the response streamed inside the block: over the lean pool when in use.
        `posting` (a request's) learns when the request was written."""
        if self._lean is not None:
            if posting is None:
                return self._lean.stream(content, headers)
            return self._lean.stream(
                content, headers, posting.on_written, posting.is_cancelled, sending=posting.on_sending
            )
        if posting is None:
            return self._http.stream("POST", self.url, content=content, headers=headers)
        if getattr(self._http.auth, "requires_request_body", False):  # it would read `body` before sending
            extensions = {"trace": posting.trace}
            return self._http.stream(
                "POST", self.url, content=content, headers=headers, extensions=extensions
            )
        sized = {**headers, "content-length": str(len(content))}  # not chunked: httpx's plain framing
        return self._http.stream("POST", self.url, content=posting.body(content), headers=sized)

    async def _post_request(
        self,
        message: MessageLike,
        posting: _Posting,
        pending: PendingAnswer | StreamState | None = None,
        done: Callable[[], None] | None = None,
    ) -> None:
        rid = request_id(message)
        try:
            if posting.scope.cancel_called:  # cancelled before it could be posted: never posted
                return
            posting.started = True
            with posting.scope:
                failure = await self._exchange_or_failure(message, posting, pending)
                if failure is not None:
                    await self._inbox.push([failure])
        except Undeliverable:
            pass
        finally:
            opening = self._state.opening
            if opening is not None and self._state.init_request is message:
                opening.set()  # its exchange ended without an answer: what waits goes (and fails as it will)
            if not posting.written:  # a cancel held back for it goes now (useless, or harmless)
                posting.on_written()
            if self._exchanges.get(rid) is posting:
                del self._exchanges[rid]
            if done is not None:
                done()

    async def _exchange_or_failure(
        self, message: MessageLike, posting: _Posting, pending: PendingAnswer | StreamState | None = None
    ) -> MessageLike | None:
        """Run the exchange; what went wrong becomes an error response for the request."""
        rid = request_id(message)
        try:
            await self._exchange(message, posting, pending)
        except Undeliverable:
            raise
        except httpx.HTTPError as exc:
            return synthesized_error(rid, jsonrpc.CONNECTION_CLOSED, f"HTTP request failed: {exc!r}")
        except Exception as exc:  # a bug must not take the whole client down: fail this request only
            logger.exception("posting request %r failed", rid)
            return synthesized_error(
                rid, jsonrpc.INTERNAL_ERROR, f"HTTP transport error ({type(exc).__name__})"
            )
        return None

    async def _post_other(self, message: MessageLike) -> None:
        """Notifications and responses: the server answers 202; any body is ignored (it answers nothing)."""
        try:
            for attempt in range(2):
                sent_session = None if stamped_version(message.params) else self.session_id
                async with self._post(message.raw, self._post_headers(message)) as response:
                    body = await response.aread()
                if response.status_code == 404 and sent_session is not None and attempt == 0:
                    await self._reinitialize(sent_session)
                    continue
                if response.status_code >= 400:
                    reason = refusal_reason(body)
                    logger.warning(
                        "the server refused %s: HTTP %d%s",
                        message.method or f"a {message.kind}",  # a response has no method
                        response.status_code,
                        f" ({reason})" if reason else "",
                    )
                break
        except httpx.HTTPError as exc:
            logger.warning("posting a %s failed: %r", message.kind, exc)
            return
        if message.method == protocol.NOTIFICATIONS_INITIALIZED and self._start_get_stream():
            # The next requests wait (briefly) until the GET stream is open: a server may send what belongs
            # to no request (an elicitation from a tool, logs) only on the GET stream and drop it while none
            # is open. Without the wait the order is a race: the lean POSTs usually win it over httpx's GET.
            with anyio.move_on_after(GET_OPEN_WAIT):
                await self._get_open.wait()

    async def _exchange(
        self, message: MessageLike, posting: _Posting, pending: PendingAnswer | StreamState | None = None
    ) -> None:
        """Post one request and deliver its answer (`pending`: it was posted already, by the fast lane,
        whose response is read here as if this method had posted it; or the fast lane read an SSE answer
        that ended without the response, and the stream is resumed here).

        A 404 for our session re-initializes it and sends the request again (once). A 503 with a short
        `Retry-After` (the server's queue was full, so the request never started) is waited out and the
        request sent again, up to `max_reconnects` times; after that the 503's error is the answer.
        """
        if isinstance(pending, StreamState):
            await self._resume(message, pending)
            return
        renewed = False
        busy = 0
        while True:
            if pending is not None:
                (resp, sent_session), pending = pending, None
                step = await self._answer_step(message, resp, sent_session, renewed=renewed, busy=busy)
            else:
                sent_session = None if stamped_version(message.params) else self.session_id
                if posting.written:  # sent again (503, new session): a cancel waits for this one
                    if posting.cancelled:  # its cancel went (or goes) already: the server must not run it
                        logger.debug("request %r was cancelled: not sending it again", message.id)
                        return
                    posting.again()
                async with self._post(message.raw, self._post_headers(message), posting) as resp:
                    if not posting.written:  # its answer's head came (the body may not have been read)
                        posting.on_written()
                    step = await self._answer_step(message, resp, sent_session, renewed=renewed, busy=busy)
            if step is None:
                return
            if step == "renewed":
                renewed = True
                continue
            busy += 1
            logger.debug("the server is busy (503): sending request %r again in %g s", message.id, step)
            await anyio.sleep(step)

    async def _resume(self, message: MessageLike, stream: StreamState) -> None:
        rid = request_id(message)
        found = await self._reader.resume(stream, rid, intercept=False)
        if found is False:
            found = answer_missing(rid, stream=True)
        if not isinstance(found, bool):
            await self._inbox.push([found])

    async def _answer_step(
        self, message: MessageLike, resp: HttpResponse, sent_session: str | None, *, renewed: bool, busy: int
    ) -> float | Literal["renewed"] | None:
        """Read one response to `message`: `None` once answered, `"renewed"` to send it again in a new
        session, or the seconds to wait before sending it again (a 503)."""
        if self.probe is not None and await self.probe(message, resp):
            return None
        expired = resp.status_code == 404 and sent_session is not None and not renewed
        if expired and message.method != protocol.INITIALIZE:
            await resp.aread()
            if await self._reinitialize(sent_session):  # type: ignore[arg-type]
                return "renewed"
        delay = retry_after(resp) if busy < self.options.max_reconnects else None
        if delay is None:
            answer = await self._reader.answer(message, resp, intercept=False)
            if answer is not None:
                await self._inbox.push([answer])
            return None
        await resp.aread()
        return delay

    # ------------------------------------------------------------------ the standalone GET stream

    def _start_get_stream(self) -> bool:
        """Open the standalone GET stream in the background unless it runs; whether it was started."""
        if self.options.get_stream and not self._get_running and self._tg is not None and not self._closed:
            self._get_running = True
            self._get_open = anyio.Event()
            self._tg.start_soon(self._get_stream)
            return True
        return False

    async def _get_stream(self) -> None:
        """The standalone stream for server-initiated messages; ends quietly if the server has none."""
        try:
            headers = self._state.headers()
            headers["accept"] = "text/event-stream"
            async with self._http.stream("GET", self.url, headers=headers) as resp:
                self._get_open.set()
                if resp.status_code != 200 or content_type(resp) != "text/event-stream":
                    logger.debug("no standalone SSE stream: HTTP %d", resp.status_code)
                    return
                await self._reader.follow(resp, None, intercept=False)
        except httpx.HTTPError as exc:
            logger.debug("the standalone SSE stream failed: %r", exc)
        except Undeliverable:
            pass
        finally:
            self._get_open.set()
            self._get_running = False

    # ------------------------------------------------------------------ session expiry

    async def _reinitialize(self, stale: str) -> bool:
        """Start a new HTTP session after a 404 for `stale`; `True` when the message may be sent again."""
        async with self._reinit_lock:
            state = self._state
            if state.session_id != stale:
                return state.session_id is not None  # another task already did it
            state.session_id = None
            init = state.init_request
            if init is None:
                return False
            self._reinit_count += 1
            request = core.decode(init.with_id(f"mcpframe-reinit-{self._reinit_count}"), lazy=True)[0]
            assert not isinstance(request, core.FrameError)
            async with self._http.stream(
                "POST", self.url, content=request.raw, headers=self._post_headers(request)
            ) as resp:
                if resp.status_code >= 300:
                    logger.warning("re-initializing the HTTP session failed: HTTP %d", resp.status_code)
                    return False
                state.session_id = resp.headers.get(MCP_SESSION_ID)
                answer = await self._reader.answer(request, resp, intercept=True)
            if answer is None or answer.kind != "result":
                return False
            result = answer.result
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                state.protocol_version = result["protocolVersion"]
            initialized = core.decode(core.encode_notification(protocol.NOTIFICATIONS_INITIALIZED))[0]
            assert not isinstance(initialized, core.FrameError)
            await self._http.post(self.url, content=initialized.raw, headers=self._post_headers(initialized))
        self._start_get_stream()
        return True
