"""HTTP replies written straight to ASGI `send`: whole bodies (JSON-RPC errors, JSON answers) and SSE."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mcpframe import core, jsonrpc, protocol

from .asgi import Receive, Send, watch_disconnect
from .deadlines import Deadlines
from .pipe import Pipe
from .streams import KEEPALIVE, Stream

if TYPE_CHECKING:
    from .sessions import HttpSession

__all__ = [
    "SSE_HEADERS",
    "Answer",
    "Reply",
    "SseReply",
    "StreamReplies",
    "error_response",
    "json_response",
    "no_answer",
    "session_ended_text",
    "too_slow",
    "unanswered",
]

_JSON = "application/json"
SSE_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    "x-accel-buffering": "no",
}


_LINES: dict[tuple[tuple[str, str], ...], bytes] = {}  # `Reply.header_lines`, by the headers' items
_LINES_KEPT = 1024


def _raw_headers(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


class Reply:
    """A complete response: status, headers (lower-case names) and body, sent with two ASGI messages."""

    __slots__ = ("body", "headers", "status")

    def __init__(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        media_type: str | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.headers = {name.lower(): value for name, value in headers.items()} if headers else {}
        if media_type is not None:
            self.headers["content-type"] = media_type

    def header_lines(self) -> bytes:
        """Its headers as HTTP/1.1 lines (`name: value\r\n`, no Content-Length); `ValueError` for a value
        holding CR or LF, which would split the response. The same headers (a session's answers) are
        formatted once (`_LINES`)."""
        key = tuple(self.headers.items())
        lines = _LINES.get(key)
        if lines is not None:
            return lines
        lines = b"".join([b"%s: %s\r\n" % pair for pair in _raw_headers(self.headers)])
        if lines.count(b"\r") != lines.count(b"\n") or lines.count(b"\r\n") != len(self.headers):
            raise ValueError("an HTTP header holds CR or LF")
        if len(_LINES) >= _LINES_KEPT:
            _LINES.clear()  # many sessions: start over rather than grow
        _LINES[key] = lines
        return lines

    async def __call__(self, receive: Receive, send: Send) -> None:
        """Write it."""
        raw = [(b"content-length", b"%d" % len(self.body)), *_raw_headers(self.headers)]
        await send({"type": "http.response.start", "status": self.status, "headers": raw})
        await send({"type": "http.response.body", "body": self.body})


class SseReply:
    """A `text/event-stream` response fed by a `Stream`'s reader, until the stream ends or the client leaves.

    What is already queued goes out in one write (the end of the stream included); while nothing comes, a
    comment is written every `keepalive` seconds, and with `close_idle` a resumable stream is closed once it
    has had no event for that long (keep-alive comments are not events). `first_wait` is what is left of
    that quiet: the POST already waited quietly for the rest of it (the listening proxy's hold), so the
    quiet is counted from the POST, not from this response; a message on the stream (`Stream.saw_other`)
    before the first wait ends the quiet, and it is counted from there.
    """

    def __init__(
        self,
        stream: Stream,
        reader: Pipe,
        *,
        keepalive: float,
        close_idle: float | None = None,
        headers: dict[str, str] | None = None,
        on_end: Callable[[], Any] | None = None,
        first_wait: float | None = None,
    ) -> None:
        self.stream = stream
        self.reader = reader
        self.keepalive = keepalive
        self.close_idle = close_idle
        self.first_wait = first_wait
        self._window = math.inf if close_idle is None else close_idle
        self._quiet_left = self._window  # seconds of quiet before the stream closes (`inf`: it never does)
        self.headers = {**SSE_HEADERS, **{k.lower(): v for k, v in (headers or {}).items()}}
        self.on_end = on_end
        self.status = 200

    async def __call__(self, receive: Receive, send: Send) -> None:
        """Write the events; a disconnecting client ends the stream's reading (and so this response).

        The lean server's `receive` tells of the client leaving by a callback (`on_disconnect`); any other
        server's is watched by a task of its own.
        """
        unwatch = watch_disconnect(receive, self._left)
        try:
            headers = _raw_headers(self.headers)
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            while True:
                chunk, ended = await self._next()
                await send({"type": "http.response.body", "body": chunk, "more_body": not ended})
                if ended:
                    return
        finally:
            unwatch()
            self.stream.detach(self.reader)
            if self.on_end is not None:
                self.on_end()

    def _left(self) -> None:
        self.stream.detach(self.reader)  # its reader sees the end: the response ends

    async def _next(self) -> tuple[bytes, bool]:
        """What to write next, and whether the response ends with it."""
        chunks, ended = self._drain()
        if chunks:
            self._quiet_left = self._window
        while not chunks and not ended:
            if self.first_wait is not None:  # only while the quiet lasts: no message came on the stream
                if self.close_idle is not None and not self.stream.saw_other:
                    self._quiet_left = self.first_wait
                self.first_wait = None
            # the next keep-alive, or the end of the quiet `close_idle` allows, whichever is first
            wait = self.keepalive
            closes = self._quiet_left <= wait
            if closes:
                wait = self._quiet_left
            # on the loop's one timer for waits of that length (`Deadlines`), not a timer per wait
            entry = None if wait == math.inf else Deadlines.of(wait).add(self.reader.nudge)
            try:
                chunk = await self.reader.get()  # `None`: woken by the timer, nothing came
            finally:
                if entry is not None:
                    entry[1] = None
            if chunk:
                self._quiet_left = self._window
                chunks.append(chunk)
                more, ended = self._drain()
                chunks += more
            elif chunk is not None:  # the end
                return b"", True
            else:
                if closes and self.stream.resumable and not self.stream.finished.is_set():
                    return b"", True  # SSE polling: the client resumes after its `retry`
                self._quiet_left = math.inf if closes else self._quiet_left - wait  # (inf: past it)
                chunks.append(KEEPALIVE)
        return b"".join(chunks), ended

    def _drain(self) -> tuple[list[bytes], bool]:
        chunks: list[bytes] = []
        while True:
            chunk = self.reader.get_nowait()
            if chunk is None:
                return chunks, False
            if not chunk:
                return chunks, True
            chunks.append(chunk)


Answer = Reply | SseReply
"""What the endpoint answers with: call it with the ASGI `receive` and `send`."""


class StreamReplies:
    """SSE replies on the streams of an HTTP session (or of a stateless POST), for GET and POST alike.

    Decides whether a stream is primed (a `retry` for clients that resume) and keeps the session counted
    busy while a reply is open, so the reaper never closes a session somebody is reading.
    """

    __slots__ = ("keepalive", "retry_ms")

    def __init__(self, *, retry_ms: int, keepalive: float) -> None:
        self.retry_ms = retry_ms
        self.keepalive = keepalive

    def priming(self, session: HttpSession | None) -> int | None:
        """The `retry` to prime a stream of this session with, or `None` (old clients get no priming).

        Decided from the negotiated version, not the per-request header: a 2025-11-25 client that sends an
        older header still understands priming events.
        """
        if session is None or session.store is None:
            return None
        version = session.version  # (a property: read once, asked for on every SSE answer)
        # (2025-11-25 added `retry`)
        return None if version is None or version < protocol.V2025_11_25 else self.retry_ms

    def reply(
        self,
        session: HttpSession | None,
        stream: Stream,
        receive: Pipe,
        *,
        close_idle: float | None,
        on_end: Callable[[], Any] | None = None,
        headers: dict[str, str] | None = None,
        first_wait: float | None = None,
    ) -> SseReply:
        """Stream `receive` as `text/event-stream`; the session counts as busy while it is open (`first_wait`:
        as `SseReply`'s)."""
        if session is not None:
            session.touch(+1)

        def ended() -> None:
            if session is not None:
                session.touch(-1)
                session.stream_ended(stream)
            if on_end is not None:
                on_end()

        return SseReply(
            stream,
            receive,
            keepalive=self.keepalive,
            close_idle=close_idle,
            headers=headers,
            on_end=ended,
            first_wait=first_wait,
        )


def error_response(
    status: int,
    message: str,
    *,
    code: int = jsonrpc.INVALID_REQUEST,
    rid: int | str | None = None,
    headers: dict[str, str] | None = None,
    data: dict[str, Any] | None = None,
) -> Reply:
    """An HTTP error whose body is a JSON-RPC error response (with ``data`` if given)."""
    if data is None:
        frame = core.encode_error(rid, code, message)
    else:
        frame = core.encode_error(rid, code, message, data)
    return Reply(status, frame.rstrip(b"\n"), headers, _JSON)


def json_response(frame: bytes, headers: dict[str, str] | None = None) -> Reply:
    """A 200 carrying one JSON-RPC frame (or a batch answer)."""
    return Reply(200, frame.rstrip(b"\n"), headers, _JSON)


def too_slow(timeout: float | None) -> Reply:
    """The 408 of a request body that did not all come in time (``HttpOptions.body_timeout``); the
    connection is closed after it (what is left of that body is never read)."""
    message = f"Request Timeout: the request body did not all come within {timeout:g} seconds"
    return error_response(408, message, headers={"connection": "close"})


def no_answer(sse: bool, headers: dict[str, str] | None = None) -> Reply:
    """The reply to a POST whose requests all ended with no answer (the client cancelled them, or the
    session ended): for a client that takes SSE, an SSE stream that ends with nothing in it. Never 202:
    the transport keeps that for a POST of notifications and responses only; a POST with a request MUST
    get `text/event-stream` or `application/json` (2025-11-25 transports, "Sending Messages"), and a
    cancelled request SHOULD get no response (utilities/cancellation). A JSON-only client (outside the
    spec, which has clients accept both) still gets 202: there is no JSON object to give it."""
    if sse:
        return Reply(200, b"", {**SSE_HEADERS, **(headers or {})})
    return Reply(202, headers=headers)


def unanswered(
    session: HttpSession | None, request_ids: Sequence[Any], sse: bool, headers: dict[str, str] | None = None
) -> Reply:
    """The reply to a POST whose requests all ended with no answer while it was awaited as JSON: when
    their session ended (DELETE, the host's shutdown), each request gets a `-32000` error as JSON, so the
    client can tell an ended session from a request it cancelled itself; else `no_answer`'s. (An SSE
    response already open ends without one: the requests were cancelled, as the SDKs' hosts do on
    DELETE.)"""
    if session is None or not session.closed or not request_ids:
        return no_answer(sse, headers)
    frames = [
        core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, session_ended_text(rid)).rstrip(b"\n")
        for rid in request_ids
    ]
    return json_response(frames[0] if len(frames) == 1 else b"[" + b",".join(frames) + b"]", headers)


def session_ended_text(rid: Any) -> str:
    """The message of the error a request gets when its session ended before it was answered."""
    return f"the HTTP session ended before request {rid!r} was answered; initialize a new session"
