"""The Streamable HTTP client, as a `Transport`: the Session above it keeps speaking NDJSON.

```python
async with StreamableHTTPTransport("http://127.0.0.1:8000/mcp") as transport:
    async with Session(transport) as session: ...
# or, through the MCP client:  async with Client.http("http://127.0.0.1:8000/mcp") as client: ...
```
Each outgoing message becomes one POST (`Accept: application/json, text/event-stream`). Requests are posted
from background tasks, so a call may wait for its answer while other messages go out; notifications and
responses are posted in order before `send` returns. Answers arrive as JSON bodies or SSE streams and are
handed to `receive` as NDJSON frames, as are the server's own requests and notifications (also from the
standalone GET stream opened after `notifications/initialized`).

HTTP-level failures become JSON-RPC errors for the requests they concern, so a caller never waits forever:
an error status, a body or stream without the answer, a connection failure. A session that the server no
longer knows (404 while sending `Mcp-Session-Id`) is re-initialized with the original `initialize` params,
transparently, and the message is sent again. An SSE stream that closes before its answers arrived is
resumed with `GET` + `Last-Event-ID` after the server's `retry` delay.

A message carrying `_meta["io.modelcontextprotocol/protocolVersion"]` (2026-07-28, stateless) is sent with
that version in `MCP-Protocol-Version` and without a session id; every request and notification carries
`Mcp-Method` and, for named targets, `Mcp-Name`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Final

import anyio
import anyio.abc
import httpx

from mcpframe import core, jsonrpc
from mcpframe._api import MessageLike
from mcpframe.transports.base import TransportClosedError
from mcpframe.transports.http.client_wire import (
    SSEParser,
    encode_header_value,
    mcp_name,
    modern_version,
)

__all__ = ["StreamableHTTPTransport"]

logger = logging.getLogger("mcpframe.transports.http.client")

Id = int | str
_ACCEPT: Final = "application/json, text/event-stream"
_ERROR_BODY_LIMIT: Final = 64 * 1024


def _rid(message: MessageLike) -> Id:
    rid = message.id
    assert rid is not None, "only requests are exchanged"
    return rid


def _content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


def _frame(message: MessageLike) -> bytes:
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


class _Stream:
    """Where one SSE stream stands: the last event id seen and the server's reconnection delay."""

    __slots__ = ("last_event_id", "retry_ms")

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None


class StreamableHTTPTransport:
    """A `Transport` speaking MCP Streamable HTTP to one endpoint (see the module doc)."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        reconnect_delay: float = 1.0,
        max_reconnects: int = 3,
        get_stream: bool = True,
        terminate_on_close: bool = True,
        max_buffer: int = 1024,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self._own_http = http_client is None
        self._http = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, read=None), follow_redirects=False
        )
        self.reconnect_delay = reconnect_delay
        self.max_reconnects = max_reconnects
        self.get_stream = get_stream
        self.terminate_on_close = terminate_on_close
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._initialize: MessageLike | None = None
        self._reinit_count = 0
        self._reinit_lock = anyio.Lock()
        self._get_running = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._closing = anyio.Event()
        self._closed = False
        self._stack: AsyncExitStack | None = None
        self._in, self._out = anyio.create_memory_object_stream[bytes](max_buffer)

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the background work (POST exchanges, SSE streams) until `aclose()`; for `TaskGroup.start`."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                await self._closing.wait()
                tg.cancel_scope.cancel()
        finally:
            self._tg = None
            if self._own_http:
                with anyio.CancelScope(shield=True):
                    await self._http.aclose()

    async def __aenter__(self) -> StreamableHTTPTransport:
        stack = AsyncExitStack()
        tg = await stack.enter_async_context(anyio.create_task_group())
        await tg.start(self.run)
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        """End the HTTP session (`DELETE`, best effort, 2 s at most) and stop everything. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._in.close()
        if self.terminate_on_close and self.session_id is not None and self._tg is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2.0):
                try:
                    await self._http.delete(self.url, headers=self._session_headers())
                except httpx.HTTPError as exc:
                    logger.debug("DELETE of the HTTP session failed: %s", exc)
        self._closing.set()

    @property
    def closed(self) -> bool:
        """Whether `aclose` was called."""
        return self._closed

    # ------------------------------------------------------------------ the Transport interface

    async def receive(self) -> bytes:
        """The next message(s) from the server as NDJSON; `b""` once closed."""
        try:
            return await self._out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""

    async def send(self, data: bytes) -> None:
        """Post each message in `data` (requests in the background, the rest before returning)."""
        if self._closed:
            raise TransportClosedError("the HTTP transport is closed")
        tg = self._tg
        if tg is None:
            raise TransportClosedError("the HTTP transport is not running (use `async with` or run())")
        decoder = core.Decoder(lazy=True)
        for item in [*decoder.feed(data), *decoder.close()]:
            if isinstance(item, core.FrameError):
                logger.warning("not sending an invalid frame: %s", item.message)
            elif item.kind == "request":
                if item.method == "initialize":
                    self._initialize = item
                tg.start_soon(self._post_request, item)
            else:
                await self._post_other(item)

    # ------------------------------------------------------------------ headers

    def _session_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    def _post_headers(self, message: MessageLike) -> dict[str, str]:
        params = message.params if message.method is not None else None
        version = modern_version(params)
        if version is None:
            headers = self._session_headers()
        else:
            headers = dict(self.headers)
            headers["mcp-protocol-version"] = version
        headers["accept"] = _ACCEPT
        headers["content-type"] = "application/json"
        if message.method is not None:
            headers["mcp-method"] = encode_header_value(message.method)
            name = mcp_name(message.method, params)
            if name is not None:
                headers["mcp-name"] = encode_header_value(name)
        return headers

    # ------------------------------------------------------------------ posting

    async def _post_request(self, message: MessageLike) -> None:
        rid = _rid(message)
        try:
            await self._exchange(message)
        except _Undeliverable:
            pass
        except httpx.HTTPError as exc:
            await self._fail(rid, jsonrpc.CONNECTION_CLOSED, f"HTTP request failed: {exc!r}")
        except Exception as exc:  # a bug must not take the whole client down: fail this request only
            logger.exception("posting request %r failed", rid)
            await self._fail(rid, jsonrpc.INTERNAL_ERROR, f"HTTP transport error ({type(exc).__name__})")

    async def _post_other(self, message: MessageLike) -> None:
        """Notifications and responses: the server answers 202; any body is ignored (it answers nothing)."""
        try:
            for attempt in range(2):
                sent_session = None if modern_version(message.params) else self.session_id
                response = await self._http.post(
                    self.url, content=message.raw, headers=self._post_headers(message)
                )
                if response.status_code == 404 and sent_session is not None and attempt == 0:
                    await self._reinitialize(sent_session)
                    continue
                if response.status_code >= 400:
                    logger.warning("the server refused a %s: HTTP %d", message.kind, response.status_code)
                break
        except httpx.HTTPError as exc:
            logger.warning("posting a %s failed: %r", message.kind, exc)
            return
        if message.method == "notifications/initialized":
            self._start_get_stream()

    async def _exchange(self, message: MessageLike) -> None:
        """Post one request and deliver its answer (re-initializing once on a 404 for our session)."""
        for attempt in range(2):
            sent_session = None if modern_version(message.params) else self.session_id
            headers = self._post_headers(message)
            async with self._http.stream("POST", self.url, content=message.raw, headers=headers) as resp:
                expired = resp.status_code == 404 and sent_session is not None and attempt == 0
                if expired and message.method != "initialize":
                    await resp.aread()
                    if await self._reinitialize(sent_session):  # type: ignore[arg-type]
                        continue
                answer = await self._answer(message, resp, intercept=False)
                if answer is not None:
                    await self._push([answer])
                return

    async def _answer(
        self, message: MessageLike, resp: httpx.Response, *, intercept: bool
    ) -> MessageLike | None:
        """Read the POST's answer, forwarding everything the server sends; the request's own response is
        forwarded too, or returned when `intercept`. Missing answers become synthesized errors."""
        rid = _rid(message)
        if message.method == "initialize" and resp.status_code < 300:
            self.session_id = resp.headers.get("mcp-session-id", self.session_id)
        kind = _content_type(resp)
        if resp.status_code >= 400:
            return await self._error_answer(rid, resp)
        if resp.status_code == 202 or kind not in ("application/json", "text/event-stream"):
            await resp.aclose()
            return self._synthesized(
                rid,
                jsonrpc.INTERNAL_ERROR,
                f"the server answered HTTP {resp.status_code} ({kind or 'no body'})",
            )
        if kind == "application/json":
            found = await self._deliver(core.decode(await resp.aread(), lazy=True), rid, intercept)
        else:
            found = await self._follow(resp, rid, intercept)
        if isinstance(found, bool):
            if found:
                return None
            return self._synthesized(rid, jsonrpc.CONNECTION_CLOSED, "the server's answer did not include it")
        return found

    async def _error_answer(self, rid: Id, resp: httpx.Response) -> MessageLike:
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
            return self._synthesized(rid, error.get("code", jsonrpc.INTERNAL_ERROR), error.get("message", ""))
        text = body[:200].decode("utf-8", "replace").strip()
        detail = f": {text}" if text else ""
        return self._synthesized(
            rid, jsonrpc.INTERNAL_ERROR, f"HTTP {resp.status_code} from the server{detail}"
        )

    def _synthesized(self, rid: Id, code: int, text: str) -> MessageLike:
        item = core.decode(core.encode_error(rid, code, text))[0]
        assert not isinstance(item, core.FrameError)
        return item

    async def _fail(self, rid: Id, code: int, text: str) -> None:
        await self._push([self._synthesized(rid, code, text)])

    # ------------------------------------------------------------------ delivery

    async def _deliver(
        self, items: Iterable[MessageLike | core.FrameError], rid: Id | None, intercept: bool
    ) -> MessageLike | bool:
        """Forward messages; report whether the response to `rid` was among them (or return it: intercept)."""
        found: MessageLike | bool = False
        forward: list[MessageLike] = []
        for item in items:
            if isinstance(item, core.FrameError):
                logger.warning("dropping an invalid message from the server: %s", item.message)
                continue
            if rid is not None and item.kind in ("result", "error") and item.id == rid and found is False:
                self._note_answer(item)
                if intercept:
                    found = item
                    continue
                found = True
            forward.append(item)
        await self._push(forward)
        return found

    def _note_answer(self, answer: MessageLike) -> None:
        """Adopt the negotiated version from the answer to `initialize`."""
        init = self._initialize
        if init is None or answer.id != init.id or answer.kind != "result":
            return
        result = answer.result
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            self.protocol_version = version

    async def _push(self, messages: list[MessageLike]) -> None:
        if not messages:
            return
        data = b"".join(_frame(m) for m in messages)
        try:
            await self._in.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise _Undeliverable from exc

    # ------------------------------------------------------------------ SSE streams

    async def _read_sse(
        self, resp: httpx.Response, stream: _Stream, rid: Id | None, intercept: bool
    ) -> MessageLike | bool:
        """Forward the events of one SSE response until it ends or carries the answer to `rid`."""
        parser = SSEParser()
        parser.last_event_id = stream.last_event_id
        try:
            async for chunk in resp.aiter_bytes():
                events = parser.feed(chunk)
                stream.last_event_id, stream.retry_ms = parser.last_event_id, parser.retry or stream.retry_ms
                for event in events:
                    if event.event != "message":
                        continue
                    found = await self._deliver(core.decode(event.data, lazy=True), rid, intercept)
                    if found is not False:
                        return found
        except httpx.TransportError as exc:  # a dropped connection ends the stream like a close
            logger.debug("SSE stream interrupted: %r", exc)
        finally:
            await resp.aclose()
        return False

    async def _follow(self, resp: httpx.Response, rid: Id | None, intercept: bool) -> MessageLike | bool:
        """Read an SSE stream and, while its answer is missing, resume it with GET + Last-Event-ID."""
        stream = _Stream()
        found = await self._read_sse(resp, stream, rid, intercept)
        misses = 0
        while found is False and not self._closed and misses <= self.max_reconnects:
            if not stream.last_event_id and rid is not None:
                break  # nothing to resume from: the answer is lost
            await anyio.sleep(self._retry_delay(stream))
            before = stream.last_event_id
            headers = self._session_headers()
            headers["accept"] = "text/event-stream"
            if stream.last_event_id:
                headers["last-event-id"] = stream.last_event_id
            try:
                async with self._http.stream("GET", self.url, headers=headers) as again:
                    if again.status_code != 200 or _content_type(again) != "text/event-stream":
                        logger.debug("resuming the SSE stream: HTTP %d", again.status_code)
                        break
                    found = await self._read_sse(again, stream, rid, intercept)
            except httpx.TransportError as exc:
                logger.debug("resuming the SSE stream failed: %r", exc)
            misses = 0 if stream.last_event_id != before else misses + 1
        return found

    def _retry_delay(self, stream: _Stream) -> float:
        return stream.retry_ms / 1000 if stream.retry_ms is not None else self.reconnect_delay

    def _start_get_stream(self) -> None:
        if self.get_stream and not self._get_running and self._tg is not None and not self._closed:
            self._get_running = True
            self._tg.start_soon(self._get_stream)

    async def _get_stream(self) -> None:
        """The standalone stream for server-initiated messages; ends quietly if the server has none."""
        try:
            headers = self._session_headers()
            headers["accept"] = "text/event-stream"
            async with self._http.stream("GET", self.url, headers=headers) as resp:
                if resp.status_code != 200 or _content_type(resp) != "text/event-stream":
                    logger.debug("no standalone SSE stream: HTTP %d", resp.status_code)
                    return
                await self._follow(resp, None, intercept=False)
        except httpx.HTTPError as exc:
            logger.debug("the standalone SSE stream failed: %r", exc)
        except _Undeliverable:
            pass
        finally:
            self._get_running = False

    # ------------------------------------------------------------------ session expiry

    async def _reinitialize(self, stale: str) -> bool:
        """Start a new HTTP session after a 404 for `stale`; `True` when the message may be sent again."""
        async with self._reinit_lock:
            if self.session_id != stale:
                return self.session_id is not None  # another task already did it
            self.session_id = None
            init = self._initialize
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
                self.session_id = resp.headers.get("mcp-session-id")
                answer = await self._answer(request, resp, intercept=True)
            if answer is None or answer.kind != "result":
                return False
            result = answer.result
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                self.protocol_version = result["protocolVersion"]
            initialized = core.encode_notification("notifications/initialized")
            await self._http.post(self.url, content=initialized, headers=self._initialized_headers())
        self._start_get_stream()
        return True

    def _initialized_headers(self) -> dict[str, str]:
        headers = self._session_headers()
        headers.update(
            {"accept": _ACCEPT, "content-type": "application/json", "mcp-method": "notifications/initialized"}
        )
        return headers


class _Undeliverable(Exception):
    """The transport was closed while a message from the server was being handed over."""
