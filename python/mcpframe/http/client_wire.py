"""Wire details of the Streamable HTTP client: reading Server-Sent Events and building request headers.

Kept apart from `client` so they can be tested without a network: `SSEParser` is an incremental parser of
the `text/event-stream` format (any line terminator, any chunking); other helpers derive the MCP headers of
one outgoing JSON-RPC message, turn what the server sent into NDJSON frames for the Session, and finish
reading answered streams.
"""

from __future__ import annotations

import abc
import base64
import dataclasses
import functools
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Final, Protocol, Self

import anyio
import anyio.abc
import httpx

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import MessageLike

from .headers import BASE64_PREFIX, BASE64_SUFFIX, CLIENT_NAME_PARAMS, MCP_PROTOCOL_VERSION, MCP_SESSION_ID
from .options import HttpClientOptions

__all__ = [
    "BackgroundTransport",
    "HttpResponse",
    "SSEEvent",
    "SSEEventTooLarge",
    "SSEParser",
    "SessionState",
    "StreamState",
    "answer_missing",
    "content_type",
    "drain",
    "encode_header_value",
    "mcp_name",
    "ndjson_frame",
    "read_limited",
    "refusal_reason",
    "request_id",
    "retry_after",
    "shared_ssl_context",
    "stamped_version",
    "synthesized_error",
]

MAX_RETRY_AFTER: Final = 30.0
"""The longest `Retry-After` of a 503 the client waits out before sending a request again (seconds)."""

DRAIN_SECONDS: Final = 0.5
DRAIN_CHUNKS: Final = 8


class HttpResponse(Protocol):
    """What the client reads of a response: an `httpx.Response` being streamed, or the lean path's
    `client_lean.LeanResponse` (`HttpClientOptions.lean`)."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def url(self) -> object: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def aread(self) -> bytes: ...

    async def aclose(self) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its type (`"message"` when none was given), its data and the id in force."""

    event: str
    data: bytes
    id: str | None


class SSEEventTooLarge(ValueError):
    """An SSE event (or the line being read) grew past the parser's `max_event` bytes."""


class SSEParser:
    """Turns the bytes of an SSE stream into events, following the HTML Living Standard's parsing rules.

    `last_event_id` and `retry` (milliseconds) are updated by every `id:` / `retry:` field, also by events
    without a `data` field, which are never dispatched (a priming event's empty `data:` is dispatched, with
    empty data). Work is linear in the bytes fed, however the stream is chunked. Memory is bounded: once
    the event being assembled (its data lines, plus an unterminated line) exceeds `max_event` bytes, `feed`
    raises `SSEEventTooLarge` and the stream is not usable any more.
    """

    def __init__(self, max_event: int = core.DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._scan = 0  # where the search for the next line terminator resumes
        self._data: list[bytes] = []
        self._size = 0  # bytes of data lines in the event being assembled
        self._has_data = False
        self._event = ""
        self.max_event = max_event
        self.last_event_id: str | None = None
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse `chunk` and return the events it completed."""
        self._buf += chunk
        events: list[SSEEvent] = []
        for line in self._lines(final=False):
            self._line(line, events)
        if self._size + len(self._buf) > self.max_event:
            self._too_large()
        return events

    def _too_large(self) -> None:
        raise SSEEventTooLarge(
            f"an SSE event from the server exceeds {self.max_event} bytes (HttpClientOptions.max_message)"
        )

    def close(self) -> list[SSEEvent]:
        """End of stream: a last unterminated line counts; an event not ended by a blank line is dropped."""
        events: list[SSEEvent] = []
        for line in self._lines(final=True):
            self._line(line, events)
        if self._buf:
            self._line(bytes(self._buf), events)
            self._buf.clear()
        self._reset_event()
        return events

    def _lines(self, *, final: bool) -> list[bytes]:
        buf = self._buf
        if b"\r" not in buf:  # LF only (most servers): one split; the unterminated rest stays
            lines = bytes(buf).split(b"\n")
            rest = lines.pop()
            buf[:] = rest
            self._scan = len(rest)
            return lines
        lines = []
        start = 0
        pos = self._scan
        while True:
            lf = buf.find(b"\n", pos)
            cr = buf.find(b"\r", pos, lf if lf >= 0 else len(buf))
            if cr >= 0:
                if cr + 1 == len(buf) and not final:
                    pos = cr  # CR last: it may be the first half of a CRLF
                    break
                end = cr + 2 if cr + 1 < len(buf) and buf[cr + 1] == 0x0A else cr + 1
                lines.append(bytes(buf[start:cr]))
            elif lf >= 0:
                end = lf + 1
                lines.append(bytes(buf[start:lf]))
            else:
                pos = len(buf)
                break
            start = pos = end
        del buf[:start]
        self._scan = pos - start
        return lines

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line.startswith(b"data:"):  # the common field first (what the general case below would do)
            self._add_data(line[6:] if line[5:6] == b" " else line[5:])
            return
        if line[:1] == b":":
            return  # a comment (keep-alive)
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._add_data(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry = int(value)

    def _add_data(self, value: bytes) -> None:
        self._data.append(value)
        self._size += len(value) + 1
        self._has_data = True
        if self._size > self.max_event + 1:  # + 1: the last line's newline is not part of the data
            self._too_large()

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._has_data:
            data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
            events.append(SSEEvent(self._event or "message", data, self.last_event_id))
        self._reset_event()

    def _reset_event(self) -> None:
        self._data = []
        self._size = 0
        self._has_data = False
        self._event = ""


async def read_limited(response: HttpResponse, limit: int) -> bytes | None:
    """The whole body of `response`, or `None` (the response closed) once it passes `limit` bytes."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            await response.aclose()
            return None
        parts.append(chunk)
    return b"".join(parts)


class BackgroundTransport(abc.ABC):
    """What the HTTP client transports share: the URL, the options, the `httpx.AsyncClient` (their own,
    closed by them and signing requests with `auth` when given, unless the caller gave one), and the
    async context manager that runs `run()` in a task group of its own while entered and calls
    `aclose()` on the way out."""

    def __init__(
        self,
        url: str,
        http_client: httpx.AsyncClient | None,
        options: HttpClientOptions | None,
        auth: httpx.Auth | None = None,
    ) -> None:
        if auth is not None and http_client is not None:
            # The caller's client is theirs to configure: mutating its `auth` would sign their other requests.
            raise ValueError("pass auth= to your own httpx.AsyncClient(auth=...) when you give http_client=")
        opts = options if options is not None else HttpClientOptions()
        self.url = url
        self.options = opts
        self._own_http = http_client is None
        # No read timeout (streams stay quiet while a tool works) and no pool timeout (past 100 open
        # exchanges, requests queue for a connection): the Session's request timeouts govern waiting.
        self._http = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(opts.connect_timeout, read=None, pool=None),
            follow_redirects=False,
            verify=shared_ssl_context(),
            auth=auth,
        )
        self._stack: AsyncExitStack | None = None

    @abc.abstractmethod
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The transport's background work until `aclose()`; for `TaskGroup.start`."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Stop the background work. Idempotent."""

    async def __aenter__(self) -> Self:
        stack = AsyncExitStack()
        tg = await stack.enter_async_context(anyio.create_task_group())
        try:
            await tg.start(self.run)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)


class StreamState:
    """Where one SSE stream stands: the last event id seen and the server's reconnection delay (ms)."""

    __slots__ = ("last_event_id", "retry_ms")

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None


class SessionState:
    """The HTTP session as the client knows it: the caller's headers, the `Mcp-Session-Id` and negotiated
    version, and the `initialize` request (kept to start a new session when the server forgets ours).

    Shared by the transport (which posts with these headers) and its answer reader (which learns the
    session id and the version from the answer to `initialize`).
    """

    __slots__ = ("base", "init_request", "opening", "protocol_version", "session_id")

    def __init__(self, headers: Mapping[str, str] | None) -> None:
        self.base = dict(headers or {})
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.init_request: MessageLike | None = None  # the `initialize` request
        # set once the `initialize` the caller's next messages wait for was answered (or its exchange
        # ended without an answer): `StreamableHTTPTransport.send` holds them until then
        self.opening: anyio.Event | None = None

    def headers(self) -> dict[str, str]:
        """The caller's headers plus the session id and the negotiated version, when known."""
        headers = dict(self.base)
        if self.session_id is not None:
            headers[MCP_SESSION_ID] = self.session_id
        if self.protocol_version is not None:
            headers[MCP_PROTOCOL_VERSION] = self.protocol_version
        return headers

    def adopt(self, answer: MessageLike) -> None:
        """Take the negotiated version from the answer to `initialize` (other answers change nothing)."""
        init = self.init_request
        if init is None or answer.id != init.id:
            return
        if self.opening is not None:  # the session id came with the answer's head: what waits may go
            self.opening.set()
        if answer.kind != "result":
            return
        result = answer.result
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            self.protocol_version = version


def encode_header_value(value: str) -> str:
    """A header-safe form of `value`: as is when plain visible ASCII, else `=?base64?<utf-8 base64>?=`."""
    plain = (
        value.isascii()
        and value.isprintable()
        and value == value.strip(" \t")
        and not (value.startswith(BASE64_PREFIX) and value.endswith(BASE64_SUFFIX))
    )
    if plain:
        return value
    return BASE64_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + BASE64_SUFFIX


def stamped_version(params: Any) -> str | None:
    """The protocol version a message carries in `params._meta` (a 2026-07-28 message), else `None`; unlike
    `server.eras.modern_version` it checks nothing: the client only reads what it stamped itself."""
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    version = meta.get(protocol.PROTOCOL_VERSION_KEY)
    return version if isinstance(version, str) else None


def mcp_name(method: str, params: Any) -> str | None:
    """What the `Mcp-Name` header carries for this method (tool/prompt name, resource URI), if anything."""
    key = CLIENT_NAME_PARAMS.get(method)
    if key is None or not isinstance(params, dict):
        return None
    value = params.get(key)
    return value if isinstance(value, str) else None


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every transport (loading the CA bundle costs ~30 ms per client)."""
    return httpx.create_ssl_context()


def request_id(message: MessageLike) -> int | str:
    """The id of a request (never None for one)."""
    rid = message.id
    assert rid is not None, "only requests are exchanged"
    return rid


def content_type(response: HttpResponse) -> str:
    """The media type of a response, lowercased, parameters dropped."""
    value: str = response.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


def retry_after(response: HttpResponse) -> float | None:
    """How long to wait before sending again after a 503: its `Retry-After` in seconds, or `None` when it
    has none, gives a date, or asks for more than `MAX_RETRY_AFTER` (the caller gets the error instead)."""
    if response.status_code != 503:
        return None
    value = response.headers.get("retry-after", "").strip()
    if not value.isdigit() or int(value) > MAX_RETRY_AFTER:
        return None
    return float(value)


async def drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of a stream whose answer arrived (the server ends it next), so that the connection
    goes back to the pool instead of being dropped; give up after a moment or a few chunks."""
    with anyio.move_on_after(DRAIN_SECONDS):
        count = 0
        async for _ in chunks:
            count += 1
            if count > DRAIN_CHUNKS:
                break


def ndjson_frame(message: MessageLike) -> bytes:
    """`message` as one NDJSON line: its raw bytes unless they hold a line break (pretty-printed JSON)."""
    raw = message.raw
    if b"\n" not in raw and b"\r" not in raw:
        return raw + b"\n"
    if message.kind == "result":
        return core.encode_result(message.id, message.result)  # type: ignore[arg-type]
    if message.kind == "error":
        return core.encode({"jsonrpc": "2.0", "id": message.id, "error": message.error})
    if message.kind == "request":
        return core.encode_request(message.id, message.method or "", message.params)  # type: ignore[arg-type]
    return core.encode_notification(message.method or "", message.params)


def synthesized_error(rid: int | str, code: int, text: str) -> MessageLike:
    """An error response for `rid`, as a decoded message (what a server would have sent)."""
    item = core.decode(core.encode_error(rid, code, text))[0]
    assert not isinstance(item, core.FrameError)
    return item


def answer_missing(rid: int | str, *, stream: bool) -> MessageLike:
    """The -32000 for a request whose answer never came: a JSON body without it, or (`stream`) an SSE stream
    that ended, or was cut with its server, before it and could not be resumed to it."""
    if stream:
        why = "the server's event stream ended and did not include the answer (closed, and not resumed to it)"
    else:
        why = "the server's answer did not include it"
    return synthesized_error(rid, jsonrpc.CONNECTION_CLOSED, why)


def refusal_reason(body: bytes) -> str:
    """Why the server refused a POST, from its body: the JSON-RPC error's message when it sent one (as
    mcpframe and the SDK do: "Bad Request: the Mcp-Session-Id header is required"), else its first words."""
    head = body[:_REFUSAL_TEXT]
    for item in core.decode(head):
        if not isinstance(item, core.FrameError) and item.kind == "error" and isinstance(item.error, dict):
            return " ".join(str(item.error.get("message", "")).split())  # one log line, whatever it holds
    return " ".join(head.decode("utf-8", "replace").split())  # one log line, even for an HTML page


_REFUSAL_TEXT: Final = 500
"""Bytes of a refusal's body read for its reason."""
