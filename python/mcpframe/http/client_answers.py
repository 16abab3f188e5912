"""How `StreamableHTTPTransport` (`client.py`) reads what the server sends back: `AnswerReader` and `Inbox`.

The transport owns one `AnswerReader` and hands it the answer to each POST and the standalone GET stream.
The reader owns everything between an HTTP response and the transport's `receive`: the answer to one POST
(a JSON body or an SSE stream; an error status, a 202 or a body without the answer becomes a synthesized
JSON-RPC error), forwarding the server's messages to the `Inbox` as NDJSON, resuming an SSE stream with
`GET` + `Last-Event-ID`, and telling the transport when a request was answered on another stream. What it
learns about the HTTP session (its id, the negotiated version) goes to the shared `SessionState`. Posting,
the HTTP session's lifecycle and the transport's own lifecycle stay in `client.py`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Final

import anyio
import httpx

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import Id, MessageLike
from mcpframe.http.client_wire import (
    HttpResponse,
    SessionState,
    SSEEventTooLarge,
    SSEParser,
    StreamState,
    answer_missing,
    content_type,
    drain,
    ndjson_frame,
    read_limited,
    request_id,
    synthesized_error,
)
from mcpframe.http.headers import LAST_EVENT_ID, MCP_SESSION_ID
from mcpframe.http.options import HttpClientOptions
from mcpframe.jsonrpc import response_shaped

__all__ = ["AnswerReader", "Inbox", "Undeliverable"]

logger = logging.getLogger("mcpframe.http.client")

_ERROR_BODY_LIMIT: Final = 64 * 1024


class Undeliverable(Exception):
    """The transport was closed while a message from the server was being handed over."""


class Inbox:
    """The server's messages on their way to the transport's `receive`: NDJSON chunks, a bounded queue.

    A full inbox makes the reader wait (reading the HTTP responses stops), so a Session that reads slowly
    slows the server's streams instead of growing memory.
    """

    def __init__(self, max_buffer: int) -> None:
        self._in, self._out = anyio.create_memory_object_stream[bytes](max_buffer)
        self.closed = False

    async def push(self, messages: list[MessageLike]) -> None:
        """Queue `messages` as one chunk; `Undeliverable` once the inbox is closed."""
        if not messages:
            return
        data = b"".join(ndjson_frame(m) for m in messages)
        # without waiting when there is room (no checkpoint: a trip around the event loop per message was
        # a tenth of a proxied call's CPU); `receive` has one
        try:
            try:
                self._in.send_nowait(data)
            except anyio.WouldBlock:
                await self._in.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise Undeliverable from exc

    async def receive(self) -> bytes:
        """The next chunk; `b""` once closed and read to the end."""
        # always a checkpoint (unlike `push`): a Session reading several queued messages without one would
        # take an answer before the handlers of the progress notifications sent ahead of it ran
        try:
            return await self._out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._out.close()  # the end was read: nothing more can come
            return b""

    def close(self) -> None:
        """Nothing more is delivered: pushes fail, `receive` ends after what is queued. Idempotent."""
        self.closed = True
        self._in.close()


class AnswerReader:
    """Reads POST answers and SSE streams and hands the server's messages to the `Inbox`."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        *,
        state: SessionState,
        inbox: Inbox,
        options: HttpClientOptions,
        answered_elsewhere: Callable[[Id], None],
    ) -> None:
        self._http = http
        self._url = url
        self._state = state
        self._inbox = inbox
        self._options = options
        # a response arrived on another stream (a server may send it on a GET): the transport stops
        # waiting on that request's own exchange
        self._answered_elsewhere = answered_elsewhere

    # ------------------------------------------------------------------ answers

    async def answer(
        self, message: MessageLike, resp: HttpResponse, *, intercept: bool
    ) -> MessageLike | None:
        """Read the POST's answer, forwarding everything the server sends; the request's own response is
        forwarded too, or returned when `intercept`. Missing answers become synthesized errors."""
        rid = request_id(message)
        if message.method == protocol.INITIALIZE and resp.status_code < 300:
            self._state.session_id = resp.headers.get(MCP_SESSION_ID, self._state.session_id)
        kind = content_type(resp)
        if resp.status_code >= 400:
            return await self._error_answer(rid, resp)
        if resp.status_code == 202 or kind not in ("application/json", "text/event-stream"):
            await resp.aclose()
            return synthesized_error(
                rid,
                jsonrpc.INTERNAL_ERROR,
                f"the server answered HTTP {resp.status_code} ({kind or 'no body'})",
            )
        if kind == "application/json":
            body = await read_limited(resp, self._options.max_message)
            if body is None:
                return synthesized_error(rid, jsonrpc.INTERNAL_ERROR, self._too_large("JSON answer"))
            found = await self._deliver(core.decode(body, lazy=True), rid, intercept)
        else:
            found = await self.follow(resp, rid, intercept=intercept)
        if isinstance(found, bool):
            if found:
                return None
            return answer_missing(rid, stream=kind != "application/json")
        return found

    async def batch(self, resp: HttpResponse, owed: set[Id]) -> None:
        """Read the answer to a POSTed JSON-RPC batch whose requests are `owed` (not empty): a JSON array
        or an SSE stream, everything in it forwarded, the id of each answer taken out of `owed` (what is
        left was not answered). An error status answers every request of `owed` as `answer` would one."""
        if resp.status_code >= 400:
            error = (await self._error_answer(next(iter(owed)), resp)).error or {}
            code, text = error.get("code", jsonrpc.INTERNAL_ERROR), error.get("message", "")
            await self._inbox.push([synthesized_error(rid, code, text) for rid in owed])
            owed.clear()
            return
        kind = content_type(resp)
        if kind == "text/event-stream":
            await self._read_sse(resp, StreamState(), None, False, owed)
            return
        body = await read_limited(resp, self._options.max_message) if kind == "application/json" else None
        if body is None:
            await resp.aclose()
        else:
            await self._deliver(core.decode(body, lazy=True), None, False, owed)

    async def _error_answer(self, rid: Id, resp: HttpResponse) -> MessageLike:
        body = b""
        async for chunk in resp.aiter_bytes():
            body += chunk
            if len(body) > _ERROR_BODY_LIMIT:
                break
        await resp.aclose()
        for item in core.decode(body[:_ERROR_BODY_LIMIT]):
            if isinstance(item, core.FrameError) or item.kind != "error":
                continue
            error = item.error or {}
            # the status goes into the message: a caller (a proxy's client above all) must tell a 401 from
            # a 400, and the server's JSON-RPC code alone (-32600 for both) cannot say it
            text = f"HTTP {resp.status_code} from the server: {error.get('message', '')}"
            return synthesized_error(rid, error.get("code", jsonrpc.INTERNAL_ERROR), text)
        text = body[:200].decode("utf-8", "replace").strip()
        detail = f": {text}" if text else ""
        return synthesized_error(
            rid, jsonrpc.INTERNAL_ERROR, f"HTTP {resp.status_code} from the server{detail}"
        )

    # ------------------------------------------------------------------ delivery

    async def _deliver(
        self,
        items: Iterable[MessageLike | core.FrameError],
        rid: Id | None,
        intercept: bool,
        owed: set[Id] | None = None,
    ) -> MessageLike | bool:
        """Forward messages; report whether the response to `rid` was among them (or return it: intercept).
        With `owed` (a batch's requests), the ids answered are taken out of it: `True` once it is empty."""
        found, forward = self.sort(items, rid, intercept)
        await self._inbox.push(forward)
        if owed is not None:
            owed.difference_update([item.id for item in forward if item.kind in ("result", "error")])
            return not owed
        return found

    def sort(
        self, items: Iterable[MessageLike | core.FrameError], rid: Id | None, intercept: bool
    ) -> tuple[MessageLike | bool, list[MessageLike]]:
        """What `_deliver` does before pushing: the response to `rid` found (or returned: intercept), and
        the messages to forward; invalid ones dropped (or, for `rid`'s answer, turned into an error)."""
        found: MessageLike | bool = False
        forward: list[MessageLike] = []
        for item in items:
            if isinstance(item, core.FrameError):
                logger.warning("dropping an invalid message from the server: %s", item.message)
                if rid is None or item.id != rid or found is not False or not response_shaped(item.raw):
                    continue  # not our answer (a rejected request of the server's may share its id)
                # the answer to this request, unreadable (e.g. an over-long integer): fail the call, clearly
                why = f"the server's answer is invalid: {item.message}"
                item = synthesized_error(rid, item.code, why)  # noqa: PLW2901
            answer = item.kind in ("result", "error")
            if answer and rid is not None and item.id == rid and found is False:
                self._state.adopt(item)
                if intercept:
                    found = item
                    continue
                found = True
            elif answer and item.id is not None:
                self._answered_elsewhere(item.id)
            forward.append(item)
        return found, forward

    # ------------------------------------------------------------------ SSE streams

    async def _read_sse(
        self,
        resp: HttpResponse,
        stream: StreamState,
        rid: Id | None,
        intercept: bool,
        owed: set[Id] | None = None,
    ) -> MessageLike | bool:
        """Forward the events of one SSE response until it ends or carries the answer to `rid` (or, with
        `owed`, to every request of a batch: `_deliver`)."""
        parser = SSEParser(self._options.max_message)
        parser.last_event_id = stream.last_event_id
        chunks = resp.aiter_bytes()
        try:
            async for chunk in chunks:
                events = parser.feed(chunk)
                stream.last_event_id = parser.last_event_id
                if parser.retry is not None:
                    stream.retry_ms = parser.retry
                for event in events:
                    if event.event != "message" or not event.data:
                        continue  # a priming event (an id and an empty `data:`) carries no message
                    found = await self._deliver(core.decode(event.data, lazy=True), rid, intercept, owed)
                    if found is not False:
                        await _drain_unless_finished(resp, chunks)
                        return found
        except httpx.TransportError as exc:  # a dropped connection ends the stream like a close
            logger.debug("SSE stream interrupted: %r", exc)
        except SSEEventTooLarge as exc:  # not buffered further: the stream is closed, its request failed
            logger.warning("closing an SSE stream from %s: %s", resp.url, exc)
            if rid is not None:
                return synthesized_error(rid, jsonrpc.INTERNAL_ERROR, self._too_large("SSE event"))
        finally:
            await _close(resp, chunks)
        return False

    def _too_large(self, what: str) -> str:
        limit = self._options.max_message
        return f"the server's {what} exceeds {limit} bytes (HttpClientOptions.max_message); not read"

    async def follow(self, resp: HttpResponse, rid: Id | None, *, intercept: bool) -> MessageLike | bool:
        """Read an SSE stream and, while its answer is missing, resume it with GET + Last-Event-ID.

        With `rid`, the stream carries that request's answer: forwarded (`True` once seen) or, with
        `intercept`, returned instead. Without, it is the standalone stream: everything is forwarded.
        """
        stream = StreamState()
        found = await self._read_sse(resp, stream, rid, intercept)
        return await self.resume(stream, rid, found, intercept=intercept)

    async def resume(
        self, stream: StreamState, rid: Id | None, found: MessageLike | bool = False, *, intercept: bool
    ) -> MessageLike | bool:
        """While the answer to `rid` is missing, resume the SSE stream `stream` with GET + Last-Event-ID
        (`follow`'s second half; the fast lane calls it for a stream it read itself)."""
        misses = 0
        while found is False and not self._inbox.closed and misses <= self._options.max_reconnects:
            if not stream.last_event_id and rid is not None:
                break  # nothing to resume from: the answer is lost
            await anyio.sleep(self._retry_delay(stream))
            before = stream.last_event_id
            headers = self._state.headers()
            headers["accept"] = "text/event-stream"
            if stream.last_event_id:
                headers[LAST_EVENT_ID] = stream.last_event_id
            try:
                async with self._http.stream("GET", self._url, headers=headers) as again:
                    if again.status_code != 200 or content_type(again) != "text/event-stream":
                        logger.debug("resuming the SSE stream: HTTP %d", again.status_code)
                        break
                    found = await self._read_sse(again, stream, rid, intercept)
            except httpx.TransportError as exc:
                logger.debug("resuming the SSE stream failed: %r", exc)
            misses = 0 if stream.last_event_id != before else misses + 1
        return found

    def _retry_delay(self, stream: StreamState) -> float:
        return stream.retry_ms / 1000 if stream.retry_ms is not None else self._options.reconnect_delay


async def _drain_unless_finished(resp: HttpResponse, chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of an answered stream, unless the lean path says it has it all already."""
    if not getattr(resp, "finished", False):
        await drain(chunks)


async def _close(resp: HttpResponse, chunks: AsyncIterator[bytes]) -> None:
    """Close the body's iterator here, not in the garbage collector (a task and a wake-up of the loop per
    call), then the response."""
    closer = getattr(chunks, "aclose", None)
    if closer is not None:
        await closer()
    await resp.aclose()
