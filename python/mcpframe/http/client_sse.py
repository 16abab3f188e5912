"""The legacy HTTP+SSE client transport (MCP 2024-11-05), as a `Transport` the Session speaks NDJSON over.

`async with SSETransport(url) as t, Session(t) as session: ...`, or `mcpframe.http.connect_sse(url)`.
Opening the transport GETs `url` (`Accept: text/event-stream`) and waits, at most
`HttpClientOptions.connect_timeout` seconds, for the server's first event, `endpoint`: the URL (usually
relative, resolved against `url`) to POST every outgoing message to. An endpoint on another origin (scheme,
host or port) is refused: the client would otherwise send its messages, and the caller's headers, wherever a
server told it to. Each message is posted on its own, in the order `send` got them; the server answers 202
and sends the answers, and its own requests and notifications, as `message` events on the stream.

Failures are errors for the requests they concern, never a hang: a POST refused (4xx/5xx: 404 means the
server no longer knows the session) or failed fails the request it carried; the stream ending fails every
request still waiting, then `receive` reports end of stream. What the server sends waits in a bounded
inbox (`max_buffer` chunks), as with Streamable HTTP: while it is full the stream is not read, so a Session
that reads slowly slows the server instead of growing memory.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import suppress
from typing import Final

import anyio
import anyio.abc
import httpx

from mcpframe import core, jsonrpc
from mcpframe._api import Id, MessageLike
from mcpframe.http.client_answers import Inbox, Undeliverable
from mcpframe.http.client_wire import (
    BackgroundTransport,
    SSEEvent,
    SSEEventTooLarge,
    SSEParser,
    content_type,
    encode_header_value,
    mcp_name,
    synthesized_error,
)
from mcpframe.http.headers import MCP_METHOD, MCP_NAME
from mcpframe.http.options import HttpClientOptions
from mcpframe.transports.base import TransportClosedError

__all__ = ["SSEConnectError", "SSETransport"]

logger = logging.getLogger("mcpframe.http.client_sse")

_BODY_SNIPPET: Final = 200


class SSEConnectError(ConnectionError):
    """The legacy SSE stream could not be opened: an error status, not an event stream, no `endpoint` event
    in time, the stream ended first, or an endpoint on another origin. The message says which, and where."""


def same_origin(a: str, b: str) -> bool:
    """Whether two absolute URLs share scheme, host and port (default ports made explicit)."""
    pa, pb = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
    defaults = {"http": 80, "https": 443}
    try:
        port_a = pa.port or defaults.get(pa.scheme)
        port_b = pb.port or defaults.get(pb.scheme)
    except ValueError:  # a port that is not a number
        return False
    return (pa.scheme.lower(), (pa.hostname or ""), port_a) == (
        pb.scheme.lower(),
        (pb.hostname or ""),
        port_b,
    )


class SSETransport(BackgroundTransport):
    """A `Transport` speaking the 2024-11-05 HTTP+SSE transport to one server (see the module doc).

    `headers` go with the GET and every POST (e.g. `Authorization`); `http_client` is an
    `httpx.AsyncClient` to send them with (the caller closes it); `options` are the transport's knobs
    (`connect_timeout` bounds the wait for the `endpoint` event, `max_buffer` the inbox; the others are
    Streamable HTTP's).
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
        self._headers = dict(headers or {})
        self._inbox = Inbox(opts.max_buffer)
        self._endpoint: str | None = None
        self._stream: httpx.Response | None = None
        self._events: AsyncGenerator[SSEEvent, None] | None = None
        self._waiting: set[Id] = set()  # requests posted whose answer has not come back yet
        self._send_lock = anyio.Lock()  # messages go out one at a time, in order
        self._closing = anyio.Event()
        self._closed = False

    # ------------------------------------------------------------------ what it knows

    @property
    def endpoint(self) -> str | None:
        """The absolute URL messages are posted to (`None` until the `endpoint` event came)."""
        return self._endpoint

    @property
    def session_id(self) -> str | None:
        """The session id in the endpoint's query (`session_id` or `sessionId`), when it has one."""
        if self._endpoint is None:
            return None
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self._endpoint).query)
        values = query.get("session_id") or query.get("sessionId")
        return values[0] if values else None

    @property
    def headers(self) -> dict[str, str]:
        """The caller's headers, sent with every request (mutable: e.g. a refreshed `Authorization`)."""
        return self._headers

    @property
    def closed(self) -> bool:
        """Whether `aclose` was called or the server ended the stream."""
        return self._closed

    @property
    def in_flight(self) -> int:
        """How many requests were posted and still wait for their answer on the stream."""
        return len(self._waiting)

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """GET the stream and wait for the `endpoint` event; `SSEConnectError` says what went wrong.

        `run` calls it when it was not called before; `connect(transport="auto")` calls it itself to
        probe a server without committing to this transport.
        """
        if self._endpoint is not None:
            return
        headers = {**self._headers, "accept": "text/event-stream", "cache-control": "no-store"}
        request = self._http.build_request("GET", self.url, headers=headers)
        try:
            with anyio.fail_after(self.options.connect_timeout):
                response = await self._http.send(request, stream=True)
                try:
                    self._endpoint = await self._first_event(response)
                except BaseException:
                    await response.aclose()
                    raise
        except TimeoutError:
            raise SSEConnectError(
                f"no `endpoint` event from GET {self.url} within {self.options.connect_timeout:g} s "
                "(HttpClientOptions.connect_timeout)"
            ) from None
        except httpx.HTTPError as exc:
            raise SSEConnectError(f"GET {self.url} failed: {exc!r}") from exc
        self._stream = response

    async def _first_event(self, response: httpx.Response) -> str:
        """Check the GET's answer and read up to its `endpoint` event; return the endpoint, resolved."""
        if response.status_code != 200:
            text = await _snippet(response)
            raise SSEConnectError(
                f"GET {self.url} answered HTTP {response.status_code}" + (f": {text}" if text else "")
            )
        if content_type(response) != "text/event-stream":
            kind = content_type(response) or "no content type"
            raise SSEConnectError(f"GET {self.url} answered {kind}, not an SSE stream (text/event-stream)")
        self._events = _events(response, self.options.max_message)
        async for event in self._events:
            if event.event != "endpoint":
                logger.debug("ignoring a %r event before the endpoint", event.event)
                continue
            target = event.data.decode("utf-8", "replace").strip()
            endpoint = urllib.parse.urljoin(self.url, target)
            if not same_origin(endpoint, self.url):
                raise SSEConnectError(
                    f"the server at {self.url} named an endpoint on another origin ({endpoint}); refused: "
                    "messages are only posted to the stream's own origin"
                )
            return endpoint
        raise SSEConnectError(f"the SSE stream of {self.url} ended before its `endpoint` event")

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open (if not yet), then read the stream until it ends or `aclose()`; for `TaskGroup.start`."""
        try:
            await self.open()
            task_status.started()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_then_close, tg.cancel_scope)
                await self._closing.wait()
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if self._events is not None:
                    await self._events.aclose()
                if self._stream is not None:
                    await self._stream.aclose()
            if self._own_http:
                with anyio.CancelScope(shield=True):
                    await self._http.aclose()

    async def aclose(self) -> None:
        """Stop: the stream is closed (the server ends the session), `receive` reports the end. Idempotent."""
        self._closed = True
        self._inbox.close()
        self._closing.set()

    # ------------------------------------------------------------------ the stream

    async def _read_then_close(self, scope: anyio.CancelScope) -> None:
        try:
            await self._read()
        finally:
            scope.cancel()

    async def _read(self) -> None:
        """Hand every `message` event to the inbox; at the end, fail the requests still waiting."""
        why = "the server ended the SSE stream"
        assert self._events is not None
        try:
            async for event in self._events:
                if event.event == "message" and event.data.strip():
                    await self._deliver(core.decode(event.data, lazy=True))
                elif event.event != "message":
                    logger.debug("ignoring an SSE event of type %r", event.event)
        except httpx.HTTPError as exc:  # a dropped connection ends the stream like a close
            why = f"the SSE stream broke ({type(exc).__name__})"
        except SSEEventTooLarge as exc:  # not buffered further: the session's only stream is given up
            logger.warning("closing the legacy SSE stream of %s: %s", self.url, exc)
            why = str(exc)
        except Undeliverable:
            return  # closed by us: nobody waits any more
        logger.debug("%s: %s", why, self.url)
        self._closed = True
        failures = [
            synthesized_error(
                rid, jsonrpc.CONNECTION_CLOSED, f"{why} before answering (legacy SSE, {self.url})"
            )
            for rid in sorted(self._waiting, key=str)
        ]
        self._waiting.clear()
        with suppress(Undeliverable):
            await self._inbox.push(failures)
        self._inbox.close()

    async def _deliver(self, items: Sequence[MessageLike | core.FrameError]) -> None:
        messages: list[MessageLike] = []
        for item in items:
            if isinstance(item, core.FrameError):
                logger.warning("dropping an invalid message from the server: %s", item.message)
                continue
            if item.kind in ("result", "error") and item.id is not None:
                self._waiting.discard(item.id)
            messages.append(item)
        await self._inbox.push(messages)

    # ------------------------------------------------------------------ the Transport interface

    async def receive(self) -> bytes:
        """The next message(s) from the server as NDJSON; `b""` once closed or the stream ended."""
        return await self._inbox.receive()

    async def send(self, data: bytes) -> None:
        """POST each message in `data` to the endpoint, in order; a refused request gets an error answer."""
        if self._closed:
            raise TransportClosedError(f"the legacy SSE transport of {self.url} is closed")
        if self._endpoint is None:
            raise TransportClosedError("the legacy SSE transport is not open (use `async with` or run())")
        decoder = core.Decoder(lazy=True)
        async with self._send_lock:
            for item in [*decoder.feed(data), *decoder.close()]:
                if isinstance(item, core.FrameError):
                    logger.warning("not sending an invalid frame: %s", item.message)
                    continue
                failure = await self._post(item)
                if failure is not None:
                    self._waiting.discard(failure.id)
                    try:
                        await self._inbox.push([failure])
                    except Undeliverable:
                        return

    async def _post(self, message: MessageLike) -> MessageLike | None:
        """Post one message; for a request that could not be delivered, the error answer it gets."""
        rid = message.id if message.kind == "request" else None
        if rid is not None:
            self._waiting.add(rid)  # before posting: the answer may arrive before the POST returns
        endpoint = self._endpoint
        assert endpoint is not None
        headers = self._post_headers(message)
        try:
            # streamed, so that a body that never ends cannot hold `send` (only its first bytes are read)
            async with self._http.stream("POST", endpoint, content=message.raw, headers=headers) as response:
                status = response.status_code
                text = await _snippet(response)
        except httpx.HTTPError as exc:
            failure = f"POST {endpoint} failed: {exc!r}"
            if rid is None:
                logger.warning("%s (a %s)", failure, message.kind)
                return None
            return synthesized_error(rid, jsonrpc.CONNECTION_CLOSED, failure)
        if status < 300:
            return None
        failure = _refusal(endpoint, status, text)
        if rid is None:
            logger.warning("%s (a %s)", failure, message.kind)
            return None
        code = jsonrpc.CONNECTION_CLOSED if status == 404 else jsonrpc.INTERNAL_ERROR
        return synthesized_error(rid, code, failure)

    def _post_headers(self, message: MessageLike) -> dict[str, str]:
        headers = {**self._headers, "content-type": "application/json"}
        if message.method is not None:  # harmless to a legacy server; helps proxies that route on them
            headers[MCP_METHOD] = encode_header_value(message.method)
            name = mcp_name(message.method, message.params)
            if name is not None:
                headers[MCP_NAME] = encode_header_value(name)
        return headers


def _refusal(endpoint: str, status: int, text: str) -> str:
    """What to tell the caller about a refused POST: the status, what it means, the body's first words."""
    detail = f": {text}" if text else ""
    if status == 404:
        return f"the server no longer knows this legacy SSE session (POST {endpoint}: HTTP 404{detail})"
    return f"the server refused the message (POST {endpoint}: HTTP {status}{detail})"


async def _snippet(response: httpx.Response) -> str:
    """The first words of a streamed body, read no further than `_BODY_SNIPPET` bytes."""
    body = b""
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= _BODY_SNIPPET:
            break
    return body[:_BODY_SNIPPET].decode("utf-8", "replace").strip()


async def _events(response: httpx.Response, max_event: int) -> AsyncGenerator[SSEEvent, None]:
    """The events of an SSE response, as they arrive (`SSEEventTooLarge` past `max_event` bytes)."""
    parser = SSEParser(max_event)
    async for chunk in response.aiter_bytes():
        for event in parser.feed(chunk):
            yield event
    for event in parser.close():
        yield event
