"""The legacy HTTP+SSE transport (MCP 2024-11-05), served by the same ASGI app as Streamable HTTP.

```
GET  /sse                         -> text/event-stream: `event: endpoint` (where to POST), then
                                     `event: message` for every answer and server message
POST /messages/?session_id=<id>   -> 202 Accepted: one JSON-RPC message (or a batch on 2025-03-26)
```

Each GET opens a legacy session: a `ServerConnection` and its own `Session`, run inside that GET's
response, so the stream's life is the session's life: a client that drops its stream ends its session
(handlers cancelled, state freed), and a server shutting down ends the streams after the handlers that run
have answered. Every revision the client negotiates is served on it (2024-11-05 to 2025-11-25).

`StreamableHTTPServer` applies the same Host/Origin allow-lists, bearer auth and body limit as on `/mcp`
before handing a request here; session ids are as unguessable as `Mcp-Session-Id`s. Flow control: see
`legacy_pipe` (both ways bounded; a stalled reader stops its session, never grows the server).

With a shared store (`HttpOptions(store=...)`) a POST may land on any instance: it is relayed to the one
holding the session's GET (`legacy_shared`).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote

import anyio

from mcpframe import jsonrpc, protocol
from mcpframe.session import Session

from .asgi import ClientDisconnect, HttpRequest, Receive, Send, TooLarge, TooSlow, wait_disconnect
from .headers import Accepts, is_json_content
from .legacy_pipe import LegacyTransport
from .legacy_shared import FULL, GONE, NO_BATCH, OK, SharedLegacy
from .options import HttpOptions
from .post import Body, one_line
from .responses import SSE_HEADERS, Reply, error_response, too_slow
from .store import StoreUnavailable

if TYPE_CHECKING:
    from mcpframe.server import ServerConnection

    from .store_sessions import SharedSessions

__all__ = ["MESSAGES_PATH", "PING", "SSE_PATH", "LegacySSE", "LegacySession", "LegacyStream"]

logger = logging.getLogger("mcpframe.http")

SSE_PATH = "/sse"
"""Where a legacy client opens its stream (the name the SDK and mcp-proxy use)."""

MESSAGES_PATH = "/messages/"
"""Where a legacy client posts its messages, with `?session_id=`; `/messages` is the same place."""

PING = b": ping\n\n"
"""The keep-alive comment written on a quiet legacy stream every `HttpOptions.keepalive` seconds."""

_PLAIN = "text/plain; charset=utf-8"


class LegacySession:
    """One legacy SSE stream: its id, its owner (the bearer token's subject), its connection and Session."""

    def __init__(
        self, connection: ServerConnection, transport: LegacyTransport, session: Session, owner: str | None
    ) -> None:
        self.id = secrets.token_urlsafe(24)  # the entropy of an `Mcp-Session-Id` (sessions.py)
        self.connection = connection
        self.transport = transport
        self.session = session
        self.owner = owner

    @property
    def version(self) -> str | None:
        """The negotiated protocol version (`None` before `initialize` succeeded)."""
        return self.connection.version


class LegacySSE:
    """The legacy routes: opens sessions on GET `/sse`, feeds POSTed messages to them, and counts them."""

    def __init__(
        self,
        connect: Callable[[], ServerConnection],
        options: HttpOptions,
        shared: SharedSessions | None = None,
    ) -> None:
        self.connect = connect  # a new connection of the MCP server, one per stream
        self.options = options
        self.session_options = options.lane_options()  # max_frame capped at max_body, as on /mcp
        self.sessions: dict[str, LegacySession] = {}
        # with a shared store: sessions registered there, POSTs for another instance's sessions relayed
        self.shared = None if shared is None else SharedLegacy(shared, self.sessions.get)

    def __len__(self) -> int:
        """The legacy sessions open now (each is one open GET `/sse`)."""
        return len(self.sessions)

    async def open(self, request: HttpRequest, owner: str | None) -> Reply | LegacyStream:
        """GET `/sse`: a new session whose stream starts with its `endpoint` event (registered in the
        shared store first, if any: 503 when it fails)."""
        if not Accepts.parse(request.headers.get("accept")).sse:
            return error_response(406, "Not Acceptable: GET /sse needs Accept: text/event-stream")
        if len(self.sessions) >= self.options.max_sessions:
            why = f"Service Unavailable: too many legacy SSE sessions ({self.options.max_sessions})"
            return error_response(503, why)
        connection = self.connect()
        transport = LegacyTransport(
            max_body=self.options.max_body, max_events=self.session_options.outbox_high_water
        )
        session = Session(
            transport,
            request_handler=connection.handle_request,
            notification_handler=connection.handle_notification,
            options=self.session_options,
            batches=False,  # until initialize negotiates 2025-03-26 (`protocol.batches_allowed`)
        )
        legacy = LegacySession(connection, transport, session, owner)
        if self.shared is not None:
            try:
                await self.shared.hold(legacy)
            except StoreUnavailable as exc:
                return error_response(503, f"Service Unavailable: {exc}", code=jsonrpc.INTERNAL_ERROR)
        self.sessions[legacy.id] = legacy
        root: str = request.scope.get("root_path", "")
        endpoint = quote(root.rstrip("/") + MESSAGES_PATH) + "?session_id=" + legacy.id
        stream = LegacyStream(legacy, endpoint, keepalive=self.options.keepalive, on_end=self._forget)
        stream.shared = self.shared
        return stream

    def _forget(self, legacy: LegacySession) -> None:
        if self.sessions.get(legacy.id) is legacy:
            del self.sessions[legacy.id]

    async def post(self, request: HttpRequest, owner: str | None) -> Reply:
        """POST `/messages/?session_id=`: check the body, hand it to the session, answer 202."""
        found = self._find(request, owner)
        if isinstance(found, str):
            return await self._post_elsewhere(request, found, owner)
        if isinstance(found, Reply):
            return found
        data = await self._read(request)
        if isinstance(data, Reply):
            return data
        batches = protocol.batches_allowed(found.version)
        body = Body.decode(data, max_frame=self.session_options.max_frame, batches=batches)
        if (refused := body.refusal) is not None:
            return refused
        if not await found.transport.feed(one_line(data)):
            return _unknown_session()  # the stream ended while this POST waited for room
        return _accepted()

    def _find(self, request: HttpRequest, owner: str | None) -> LegacySession | Reply | str:
        """The session held here, the id of one that may be held elsewhere (shared store), or a refusal."""
        query = parse_qs(request.scope.get("query_string", b"").decode("latin-1"))
        ids: list[str] = query.get("session_id") or []
        if not ids or not ids[0]:
            return error_response(400, "Bad Request: the session_id query parameter is required")
        found = self.sessions.get(ids[0])
        if found is None and self.shared is not None:
            session_id: str = ids[0]
            return session_id
        if found is None or found.owner != owner:  # another principal's session does not exist for it
            return _unknown_session()
        return found

    async def _post_elsewhere(self, request: HttpRequest, session_id: str, owner: str | None) -> Reply:
        """A POST for a session this instance does not hold: checked here, relayed to its holder."""
        assert self.shared is not None
        try:
            if not await self.shared.held(session_id, owner):
                return _unknown_session()
            data = await self._read(request)
            if isinstance(data, Reply):
                return data
            # the holder knows the revision: a batch is checked there (its refusal is the local one)
            body = Body.decode(data, max_frame=self.session_options.max_frame, batches=True)
            if (refused := body.refusal) is not None:
                return refused
            answer = await self.shared.relay(session_id, one_line(data), batch=body.batch)
            if answer is None and not await self.shared.held(session_id, owner):
                answer = GONE  # its stream ended (or its instance died) meanwhile
        except StoreUnavailable as exc:
            return error_response(503, f"Service Unavailable: {exc}", code=jsonrpc.INTERNAL_ERROR)
        return self._relayed(session_id, answer, data)

    def _relayed(self, session_id: str, answer: bytes | None, data: bytes) -> Reply:
        """The reply to a POST relayed to the holder, from the holder's answer (`None`: no answer)."""
        assert self.shared is not None
        if answer == OK:
            return _accepted()
        if answer == GONE:
            return _unknown_session()
        if answer == NO_BATCH:
            refused = Body.decode(data, max_frame=self.session_options.max_frame, batches=False).refusal
            if refused is not None:
                return refused
        why = "its input stayed full" if answer == FULL else "the instance holding it did not answer"
        wait = f"{self.shared.feed_wait:g}"
        message = f"Service Unavailable: session {session_id} took no input in {wait} s ({why}); retry"
        return error_response(503, message, code=jsonrpc.INTERNAL_ERROR, headers={"retry-after": "1"})

    async def _read(self, request: HttpRequest) -> bytes | Reply:
        """The body, or the refusal of a wrong media type or too big a body (as on `/mcp`)."""
        if not is_json_content(request.headers.get("content-type")):
            return error_response(415, "Unsupported Media Type: the body must be application/json")
        limit = self.options.max_body
        length = request.headers.get("content-length")
        too_big = error_response(413, f"Payload Too Large: the body exceeds {limit} bytes")
        if length is not None and length.isdigit() and int(length) > limit:
            return too_big
        try:
            return await request.body(limit, self.options.body_timeout)
        except TooLarge:
            return too_big
        except TooSlow:
            return too_slow(self.options.body_timeout)
        except ClientDisconnect:
            return Reply(400)  # nobody is left to read it

    def end_all(self) -> None:
        """Shutting down: no more input on any legacy session; each stream ends once its handlers answered."""
        for legacy in list(self.sessions.values()):
            legacy.transport.end_input()


def _accepted() -> Reply:
    return Reply(202, b"Accepted", media_type=_PLAIN)


def _unknown_session() -> Reply:
    return error_response(404, "Not Found: unknown or closed session", code=jsonrpc.INVALID_REQUEST)


class LegacyStream:
    """The response to GET `/sse`: runs the session while it writes the session's events to the client."""

    def __init__(
        self,
        legacy: LegacySession,
        endpoint: str,
        *,
        keepalive: float,
        on_end: Callable[[LegacySession], object],
    ) -> None:
        self.legacy = legacy
        self.endpoint = endpoint
        self.keepalive = keepalive
        self.on_end = on_end
        self.status = 200
        self.headers = dict(SSE_HEADERS)
        self.shared: SharedLegacy | None = None  # registered in a shared store: refreshed, then released

    async def __call__(self, receive: Receive, send: Send) -> None:
        """Write the `endpoint` event, then the session's events until it ends or the client leaves."""
        legacy = self.legacy
        try:
            raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in self.headers.items()]
            await send({"type": "http.response.start", "status": 200, "headers": raw})
            first = b"event: endpoint\ndata: " + self.endpoint.encode() + b"\n\n"
            await send({"type": "http.response.body", "body": first, "more_body": True})
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._serve)
                tg.start_soon(self._watch, receive, tg.cancel_scope)
                if self.shared is not None:
                    tg.start_soon(self.shared.keep, legacy)
                await self._write(send)
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if self.shared is not None:
                    # no more input, but still found here until the key is gone: a POST relayed meanwhile
                    # is answered 404 at once (silence would make it wait for its bound)
                    legacy.transport.end_input()
                    await self.shared.release(legacy)  # every other instance answers 404 from now on
                self.on_end(legacy)  # a POST for it gets 404 from now on
                await legacy.session.aclose()  # cut short: its handlers are cancelled, its state dropped
            logger.debug("legacy SSE session %s ended", legacy.id)

    async def _serve(self) -> None:
        """Run the session (its end closes the transport, so the writer ends after the last event)."""
        await self.legacy.connection.run(self.legacy.session)

    async def _watch(self, receive: Receive, scope: anyio.CancelScope) -> None:
        await wait_disconnect(receive)
        scope.cancel()  # the client left: the session ends with its stream

    async def _write(self, send: Send) -> None:
        """Events as they come (what is queued goes out in one write), a comment while none come."""
        outbound = self.legacy.transport.outbound
        while True:
            chunk = await outbound.get(self.keepalive)
            if chunk is None:
                await send({"type": "http.response.body", "body": PING, "more_body": True})
                continue
            more, ended = outbound.drain_nowait()
            body = b"".join([chunk, *more]) if more else chunk
            if body:
                await send({"type": "http.response.body", "body": body, "more_body": True})
            if ended or not chunk:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
