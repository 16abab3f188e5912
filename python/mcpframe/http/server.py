"""The Streamable HTTP server: one endpoint (POST, GET, DELETE) as a plain ASGI app.

```python
http = StreamableHTTPServer(server)          # http.app is the ASGI app (its lifespan runs the sessions)
await serve_http(server, port=8000)          # or: uvicorn on 127.0.0.1
```

POST answers a body of requests with JSON when the handlers sent nothing else, or with an SSE stream that
carries their notifications and requests before the responses; notifications and responses get 202. Legacy
(2025-xx) clients get a stateful session (`Mcp-Session-Id`); 2026-07-28 requests are served statelessly.

The same app serves the legacy HTTP+SSE transport of 2024-11-05 (GET `/sse`, POST `/messages/`; see
`legacy.py`) behind the same security checks, unless `HttpOptions(legacy_sse=False)`.

The server is a composition: it builds the session manager, the admission bound, the SSE replies and the
`PostHandler`, and hands each only what it needs (the handler gets `server.connection`, not the server).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
import uvicorn

from mcpframe.protocol import SUPPORTED_VERSIONS, at_least
from mcpframe.server.lifecycle import Stop, current_stop, shutdown_grace, stopping_under
from mcpframe.server.tasks_store import MemoryTaskStore

from .accept_log import quiet_accept_failures
from .admission import Admission
from .asgi import HttpRequest, Receive, Scope, Send, header_dict
from .events import split_event_id
from .fast import answering, wire_answer
from .handling import PostHandler
from .headers import (
    FIRST_STATELESS,
    LAST_EVENT_ID,
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    Accepts,
    repeated_header,
)
from .legacy import MESSAGES_PATH, SSE_PATH, LegacySSE, LegacyStream
from .options import HttpOptions
from .pipe import Pipe
from .responses import SSE_HEADERS, Answer, Reply, StreamReplies, error_response
from .security import AccessToken, AllowedPairs, HostGuard
from .sessions import HttpSession, SessionManager
from .store import SharedStore, StoreUnavailable, open_store
from .store_sessions import SharedSessions
from .streams import Stream, format_event
from .uvicorn_host import bounded_heads
from .wire import WireAnswer, WireServer

if TYPE_CHECKING:
    from mcpframe.server import Server

__all__ = ["HttpOptions", "StreamableHTTPServer", "announce", "serve_http"]

logger = logging.getLogger("mcpframe.http")

_TEXT = "text/plain; charset=utf-8"
_METHODS = ("GET", "POST", "DELETE")
_LEGACY_PATHS = (SSE_PATH, MESSAGES_PATH, MESSAGES_PATH.rstrip("/"))


class StreamableHTTPServer:
    """An mcpframe `Server` behind one Streamable HTTP endpoint; `app` is the ASGI application."""

    def __init__(self, server: Server, options: HttpOptions | None = None) -> None:
        opts = options if options is not None else HttpOptions()
        self.server = server
        self.options = opts
        self.guard = HostGuard.create(opts.allowed_hosts, opts.allowed_origins)
        shared = None
        if opts.store is not None:  # Redis: sessions and their events shared with the other instances
            shared = open_store(
                opts.store,
                idle_timeout=opts.idle_timeout,
                timeout=opts.store_timeout,
                liveness=opts.store_liveness,
            )
        self.sessions = SessionManager(
            server.connection,
            store=opts.event_store if shared is None else shared,
            idle_timeout=opts.idle_timeout,
            max_sessions=opts.max_sessions,
        )
        if shared is not None:
            self.sessions.shared = SharedSessions(self.sessions, shared)
            make_tasks = getattr(shared, "task_store", None)
            tasks = getattr(server, "tasks", None)  # none on a proxy's upstream: its child keeps its own
            if make_tasks is not None and tasks is not None and isinstance(tasks.store, MemoryTaskStore):
                tasks.store = make_tasks()  # tasks shared too, unless the application chose a store
        self.replies = StreamReplies(retry_ms=opts.retry_ms, keepalive=opts.keepalive)
        self.posts = PostHandler(
            opts,
            sessions=self.sessions,
            admission=Admission(opts.max_in_flight, opts.max_queued),
            connect=server.connection,
            replies=self.replies,
        )
        # the 2024-11-05 HTTP+SSE transport on /sse and /messages/ (its sessions run inside their GETs)
        self.legacy = LegacySSE(server.connection, opts, self.sessions.shared) if opts.legacy_sse else None
        self._target = opts.path.encode("latin-1")  # what `wire_fast` takes (no query, no percent-escape)
        self._allowed = AllowedPairs(self.guard)  # the (Host, Origin) pairs `wire_fast` let through
        self._tg: anyio.abc.TaskGroup | None = None
        self._server_lifespan: AbstractAsyncContextManager[Any] | None = None

    @property
    def app(self) -> StreamableHTTPServer:
        """The ASGI application (this object): HTTP requests, and the lifespan that runs the sessions."""
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = HttpRequest(scope, receive)
            answer = await answering(request.method, scope.get("path"), self._route(request))
            await answer(receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    def wire_fast(
        self, target: bytes, raw_headers: list[tuple[bytes, bytes]], body: bytes
    ) -> WireAnswer | None:
        """The lean server's hot path (`http/fast.py`): a POST to `target` (the raw request target) with
        these headers (lower-case names) and this whole body, answered without the ASGI layers, or `None`
        when it is not the common case (nothing was started: the ASGI app answers it).

        A `WireAnswer` is `(status, header lines, body)`, or the coroutine function that finishes the
        answer of the request already started: whole when it can be (JSON, a finished stream), else on
        ASGI `receive` and `send` (SSE).
        """
        if target != self._target or self.options.auth is not None or not isinstance(self.posts, PostHandler):
            return None
        headers = header_dict(raw_headers)  # checked as `_admit` does (no `auth` here)
        if len(headers) != len(raw_headers) and repeated_header(raw_headers) is not None:
            return None  # a name came twice: `_admit` refuses it if it must come once
        pair = (headers.get("host"), headers.get("origin"))
        if pair not in self._allowed and not self._allowed.admit(pair):  # (a hit costs no Python call)
            return None
        if _version_refusal(headers) is not None:
            return None
        return wire_answer(self.posts, headers, body)

    # ---------------------------------------------------------------- lifecycle

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan protocol: the session manager runs from startup to shutdown."""
        await receive()  # lifespan.startup
        try:
            await self.__aenter__()
        except BaseException as exc:
            await send({"type": "lifespan.startup.failed", "message": repr(exc)})
            raise
        await send({"type": "lifespan.startup.complete"})
        try:
            await receive()  # lifespan.shutdown
        finally:
            await self.__aexit__(None, None, None)
        await send({"type": "lifespan.shutdown.complete"})

    async def __aenter__(self) -> StreamableHTTPServer:
        """Start the server's lifespan, then the session manager (what the ASGI lifespan does; tests with
        an ASGI transport, which sends no lifespan events, use it directly)."""
        lifespan = self.server.lifespan()  # counted: a no-op inside serve_http's own entry
        await lifespan.__aenter__()
        self._server_lifespan = lifespan
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        await self._tg.start(self.sessions.run)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        try:
            return await self._tg.__aexit__(*exc_info)
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1 and group.exceptions[0] is exc_info[1]:
                return False  # the block's own exception: let it propagate unwrapped
            raise
        finally:
            self._tg = None
            lifespan, self._server_lifespan = self._server_lifespan, None
            if lifespan is not None:
                await lifespan.__aexit__(None, None, None)

    def end_streams(self, *, legacy: bool = True) -> None:
        """Shutting down: GET streams end (one opened later ends at once) and open listens answer; with
        `legacy`, the legacy SSE sessions too (see `end_legacy`)."""
        for session in list(self.sessions.sessions.values()):
            session.get_stream.finish()
        if self.sessions.shared is not None:
            self.sessions.shared.end_tails()
        if legacy:
            self.end_legacy()
        self.server.close_connections()

    def end_legacy(self) -> None:
        """Shutting down: the legacy SSE sessions take no more input, and each stream ends once its
        running handlers answered. Their answers travel on those streams, so a graceful stop calls this
        after the requests in flight settled."""
        if self.legacy is not None:
            self.legacy.end_all()

    # ---------------------------------------------------------------- routes

    @property
    def metadata_path(self) -> str:
        """Where the protected resource metadata is served (RFC 9728, path-based)."""
        return "/.well-known/oauth-protected-resource" + self.options.path.rstrip("/")

    async def _route(self, request: HttpRequest) -> Answer | LegacyStream:
        """The endpoint, the legacy SSE paths (with `legacy_sse`), the resource metadata (with `auth`), 404
        elsewhere and 405 for other methods."""
        path: str = request.scope["path"]
        root: str = request.scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        if path == self.options.path:
            if request.method in _METHODS:
                return await self.endpoint(request)
            return Reply(405, b"Method Not Allowed", {"allow": ", ".join(_METHODS)}, _TEXT)
        if self.legacy is not None and path in _LEGACY_PATHS:
            return await self.legacy_endpoint(request, path)
        if self.options.auth is not None and path == self.metadata_path:
            if request.method in ("GET", "HEAD"):
                return self.resource_metadata()
            return Reply(405, b"Method Not Allowed", {"allow": "GET, HEAD"}, _TEXT)
        return Reply(404, b"Not Found", media_type=_TEXT)

    def resource_metadata(self) -> Reply:
        """The protected resource metadata document."""
        assert self.options.auth is not None
        doc = json.dumps(self.options.auth.metadata(), ensure_ascii=False, separators=(",", ":"))
        return Reply(200, doc.encode(), media_type="application/json")

    async def endpoint(self, request: HttpRequest) -> Answer:
        """The MCP endpoint: security checks first, then POST, GET or DELETE."""
        owner = await self._admit(request)
        if isinstance(owner, Reply):
            return owner
        if request.method == "POST":
            return await self.posts.handle(request, owner)
        if request.method == "GET":
            return await self._get(request, owner)
        return await self._delete(request, owner)

    async def legacy_endpoint(self, request: HttpRequest, path: str) -> Reply | LegacyStream:
        """GET `/sse` and POST `/messages/`: the same security checks as the endpoint, then the legacy
        transport (`http/legacy.py`)."""
        assert self.legacy is not None
        method = "GET" if path == SSE_PATH else "POST"
        if request.method != method:
            return Reply(405, b"Method Not Allowed", {"allow": method}, _TEXT)
        owner = await self._admit(request)
        if isinstance(owner, Reply):
            return owner
        if method == "GET":
            return await self.legacy.open(request, owner)
        return await self.legacy.post(request, owner)

    async def _admit(self, request: HttpRequest) -> str | Reply | None:
        """Headers that must come once, Host/Origin, bearer token and protocol version header: the owner of
        the request's sessions (the token's subject, `None` without `auth`), or the reply refusing it."""
        raw = request.scope["headers"]
        if len(request.headers) != len(raw) and (name := repeated_header(raw)) is not None:
            return error_response(400, f"Bad Request: repeated {name} header")
        guarded = self._guard(request.headers)
        if guarded is not None:
            return guarded
        principal: AccessToken | None = None
        if self.options.auth is not None:
            principal_or_refusal = await self._authenticate(request)
            if isinstance(principal_or_refusal, Reply):
                return principal_or_refusal
            principal = principal_or_refusal
        refused = _version_refusal(request.headers)
        if refused is not None:
            return refused
        return None if principal is None else (principal.subject or "")

    def _guard(self, headers: dict[str, str]) -> Reply | None:
        """Host and Origin (DNS rebinding): the refusal, or `None`."""
        refusal = self.guard.check(headers.get("host"), headers.get("origin"))
        return None if refusal is None else error_response(refusal[0], refusal[1])

    async def _authenticate(self, request: HttpRequest) -> AccessToken | Reply:
        auth = self.options.auth
        assert auth is not None
        url = request.base_url.rstrip("/") + self.metadata_path
        token = await auth.authenticate(request.headers.get("authorization"))
        if token is None:
            challenge = auth.challenge(url, "invalid_token" if "authorization" in request.headers else None)
            return error_response(
                401, "Unauthorized: a valid bearer token is required", headers={"WWW-Authenticate": challenge}
            )
        missing = auth.missing_scopes(token)
        if missing:
            lacking = "the token lacks " + " ".join(sorted(missing))
            challenge = auth.challenge(url, "insufficient_scope", lacking)
            return error_response(
                403, "Forbidden: insufficient scope", headers={"WWW-Authenticate": challenge}
            )
        return token

    async def _get(self, request: HttpRequest, owner: str | None) -> Answer:
        if not Accepts.parse(request.headers.get("accept")).sse:
            return error_response(406, "Not Acceptable: GET needs Accept: text/event-stream")
        modern = at_least(request.headers.get(MCP_PROTOCOL_VERSION, ""), FIRST_STATELESS)
        if (modern and MCP_SESSION_ID not in request.headers) or self.options.stateless:
            return Reply(405, headers={"Allow": "POST"})
        found = await self._find(request, owner)
        if isinstance(found, Reply):
            return found
        return await self._open_stream(found, request.headers.get(LAST_EVENT_ID))

    async def _open_stream(self, session: HttpSession, last_event_id: str | None) -> Answer:
        """The session's GET stream, or the stream `Last-Event-ID` names resumed after it."""
        shared = self.sessions.shared
        if shared is not None:
            return await self._shared_get(shared, session, last_event_id)
        if last_event_id is not None:
            return await self._resume(session, last_event_id)
        stream = session.get_stream
        if stream.attached:
            return error_response(409, "Conflict: this session's GET stream is already open")
        receive = await stream.attach(retry_ms=self.replies.priming(session))
        return self.replies.reply(session, stream, receive, close_idle=None)

    async def _find(self, request: HttpRequest, owner: str | None) -> HttpSession | Reply:
        if self.sessions.shared is not None:
            return await self.sessions.shared.lookup(request.headers, owner)
        return self.sessions.find(request.headers, owner)

    async def _shared_get(
        self, shared: SharedSessions, session: HttpSession, last_event_id: str | None
    ) -> Answer:
        """GET with a shared store: the stream is read from Redis, whichever instance writes or wrote it."""
        parsed = split_event_id(last_event_id) if last_event_id is not None else None
        local = session.streams.get(parsed[0]) if parsed is not None else None
        if last_event_id is not None and local is not None and local is not session.get_stream:
            return await self._resume(session, last_event_id)  # a POST stream of this instance
        opened: tuple[Stream, Pipe] | None
        if last_event_id is None:
            opened = await shared.open_get(session, self.replies.priming(session))
            if opened is None:  # held by another response, on this instance or another
                return error_response(409, "Conflict: this session's GET stream is already open")
        else:
            opened = await shared.resume(session, last_event_id)
            if opened is None:
                return error_response(404, "Not Found: unknown Last-Event-ID for this session")
        stream, pipe = opened
        return self.replies.reply(session, stream, pipe, close_idle=None)

    async def _resume(self, session: HttpSession, last_event_id: str) -> Answer:
        parsed = split_event_id(last_event_id)
        stream = session.streams.get(parsed[0]) if parsed is not None else None
        if stream is not None:
            receive = await stream.resume(last_event_id)
            if receive is not None:
                return self.replies.reply(session, stream, receive, close_idle=None)
        elif session.store is not None:
            replay = await session.store.replay(session.id, last_event_id)
            if replay is not None:  # the stream ended: what it still owed, then the end
                chunks = [format_event(frame, event_id) for event_id, frame in replay.events]
                return Reply(200, b"".join(chunks), SSE_HEADERS)
        return error_response(404, "Not Found: unknown Last-Event-ID for this session")

    async def _delete(self, request: HttpRequest, owner: str | None) -> Reply:
        if self.options.stateless:
            return Reply(405, headers={"Allow": "POST"})
        found = await self._find(request, owner)
        if isinstance(found, Reply):
            return found
        if self.sessions.shared is not None:
            await self.sessions.shared.delete(found)
        else:
            await self.sessions.end(found)
        return Reply(200)


def _version_refusal(headers: dict[str, str]) -> Reply | None:
    """The refusal of an unsupported `MCP-Protocol-Version` header, or `None`."""
    version = headers.get(MCP_PROTOCOL_VERSION)
    if version is not None and version not in SUPPORTED_VERSIONS:
        return error_response(400, f"Bad Request: unsupported MCP-Protocol-Version {version!r}")
    return None


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    options: HttpOptions | None = None,
    ready: Callable[[str], Any] | None = None,
    log_level: str = "warning",
    grace: float | None = None,
    http_server: Literal["uvicorn", "mcpframe"] | None = None,
    app: StreamableHTTPServer | None = None,
) -> None:
    """Serve over Streamable HTTP until cancelled; `ready(url)` is called once listening.

    `app`: an app built on `server` and `options` to serve instead of a new `StreamableHTTPServer` (a
    subclass: the proxy's `ListenServer` puts a bridge to an upstream in each session's place).

    `http_server`: uvicorn (the default), or `"mcpframe"`, the lean HTTP/1.1 server of `http/wire.py`
    (one write per complete answer, none of uvicorn's per-request extras; docs/transports.md says why it
    is not the default). `None`: the `MCPFRAME_HTTP_SERVER` environment variable's choice, else uvicorn,
    so that a whole test run can go through either server unchanged.

    The server's lifespan starts before the socket is announced and ends after the HTTP server stopped.
    Cancelled, either server stops taking connections, ends the GET streams and gives the requests in
    flight `grace` seconds (default: `mcpframe.server.lifecycle.shutdown_grace()`, 10 s); those still
    running then are cancelled and answered with a -32000 error (JSON, or an SSE event before the stream's
    end), by a `Stop` of its own (each server settles only its own requests, also one started from inside
    another `serve_http`), which follows the entry point's (or the outer server's) `Stop` if any: a signal
    still stops every server, with the entry point's grace. A `serve_http` started under an entry point's
    `Stop` after a stop was requested refuses every request ("Server shutting down").
    uvicorn's own signal handlers are not installed: the entry point running the loop decides what SIGTERM
    and SIGINT do.
    """
    if http_server is None:
        http_server = "mcpframe" if os.environ.get("MCPFRAME_HTTP_SERVER") == "mcpframe" else "uvicorn"
    opts = options or HttpOptions()
    http = app if app is not None else StreamableHTTPServer(server, opts)
    quiet_accept_failures()  # out of descriptors: one log record a minute, not thousands a second
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # proto must be IPPROTO_TCP: asyncio sets TCP_NODELAY only on such sockets, and without it every answer
    # written in two parts waits for the peer's delayed ACK (~40 ms per request on a kept-alive connection)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    sock.set_inheritable(True)
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    wait = math.ceil(shutdown_grace(grace))  # uvicorn takes whole seconds
    # the requests in flight are settled (answered) before uvicorn stops: its own wait only bounds the
    # writing of those last answers, and gets at least a moment for it, as the lean server's `drain` does
    flush = max(wait, math.ceil(_FLUSH_AT_LEAST))
    # `bounded_heads`: the Host guard checks an absolute-form target's authority, not the received Host,
    # and a request head that does not come in time is refused (uvicorn has no such bound)
    protocol = bounded_heads(opts.head_timeout, _KEEPALIVE) or "auto"
    config = uvicorn.Config(
        http.app,
        http=protocol,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=flush,
        timeout_keep_alive=_KEEPALIVE,
    )
    uv = _Uvicorn(config)
    # each serve_http settles only its own requests, with a `Stop` of its own: settling a shared one at this
    # server's stop would refuse and cut the requests of another serve_http (one started from this one's
    # lifespan, ready callback or a handler, or this one from another's) too. Under an entry point's (or
    # an outer serve_http's) `Stop` it follows that one: a signal still stops every server
    outer = current_stop()
    if outer is None:
        making: contextlib.AbstractContextManager[Stop] = contextlib.nullcontext(
            Stop(shutdown_grace(grace), own=True)
        )
    else:  # under an entry point, its grace (as its Stop settled them all before); under a server, our own
        making = outer.follower(None if not outer.own else shutdown_grace(grace))
    try:
        if http.sessions.shared is not None:  # an unreachable store is said before any URL, not after it
            await _reach_store(http.sessions.shared.store)
        with making as stop, stopping_under(stop):
            async with server.lifespan():
                if ready is not None:
                    ready(f"http://{shown}:{bound}{opts.path}")
                if http_server == "mcpframe":
                    await _serve_lean(http, sock, stop, wait)
                else:
                    await _serve_until_cancelled(uv, sock, partial(_stopping, http, stop))
    finally:
        sock.close()


async def _reach_store(store: SharedStore) -> None:
    """`StoreUnavailable` saying in one line that the shared store cannot be reached (and why), its
    connections closed (no lifespan will). A store that is only late (it took the connection, or may yet)
    is a warning: the server starts, and answers the requests that need the store with 503 until it
    answers, as when it becomes slow later."""
    try:
        await store.ping()
    except StoreUnavailable as exc:
        cause = exc.__cause__  # what the store's client raised: the reason, without the store's own words
        if exc.late or isinstance(cause, TimeoutError):
            logger.warning("%s: serving anyway (503 to the requests that need it, until it answers)", exc)
            return
        why = str(exc) if cause is None else str(cause) or type(cause).__name__
        where = getattr(store, "where", None)  # the Redis store's URL, without credentials
        named = f"at {where}" if isinstance(where, str) else f"({type(store).__name__})"
        with anyio.CancelScope(shield=True):
            await store.aclose()
        raise StoreUnavailable(f"cannot reach the session store {named}: {why}") from exc


def announce(url: str, *, legacy_sse: bool, program: str = "mcpframe serve") -> None:
    """Say where a server listens, on stderr, as `mcpframe serve --http` does (`mcpframe proxy` with its own
    `program`): the legacy HTTP+SSE line (with `legacy_sse`) first, the endpoint's line last (scripts wait
    for "Streamable HTTP on")."""
    if legacy_sse:
        base = url[: url.index("/", url.index("//") + 2)]
        print(f"{program}: legacy HTTP+SSE on {base}/sse", file=sys.stderr, flush=True)
    print(f"{program}: Streamable HTTP on {url}", file=sys.stderr, flush=True)


async def _stopping(http: StreamableHTTPServer, stop: Stop) -> None:
    """Before uvicorn stops: end the GET streams, then let requests settle, then end the legacy SSE
    streams, which carry those requests' answers."""
    http.end_streams(legacy=False)
    await stop.settle()  # new requests are refused, those in flight get the grace period, then -32000
    http.end_legacy()


_KEEPALIVE = 5
"""Seconds an idle kept-alive connection stays open, with either server (uvicorn's default, and the lean
server's); also how long a new connection may stay silent (`uvicorn_host.bounded_heads`)."""

_FLUSH_AT_LEAST = 1.0
"""Seconds the lean server's graceful stop gives connections to write their last answers, whatever the
grace period (uvicorn, too, flushes what was written before it closes)."""


async def _serve_lean(http: StreamableHTTPServer, sock: socket.socket, stop: Stop, bound: float) -> None:
    """The lean server and the app's lifespan until cancelled, then the graceful stop uvicorn's path makes:
    stop accepting, end the GET streams, settle the requests in flight (`stop`), close the
    connections once their answers are out (at most `bound` seconds, then cut), end the lifespan.

    The serving runs shielded in a task of its own, as uvicorn does: the sessions' task group must not see
    the cancellation that asks for the stop, or the requests in flight would die with it.
    """
    wire = WireServer(http.app, keepalive_timeout=_KEEPALIVE, head_timeout=http.options.head_timeout)
    stopped = anyio.Event()

    async def serve() -> None:
        async with http:  # the app's lifespan, which uvicorn would run
            await wire.listen(sock)
            try:
                await stopped.wait()
                wire.stop_accepting()
                await _stopping(http, stop)
                # at least a moment to write what settling produced (the -32000 of a request
                # cut at the end of a 0 s grace, legacy streams' last events), then cut
                await wire.drain(max(bound, _FLUSH_AT_LEAST))
            finally:
                await wire.close()

    async def stopping() -> None:
        stopped.set()

    await _shielded_until_cancelled(serve, stopping)


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers, which would raise a caught SIGTERM/SIGINT again at the end."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _serve_until_cancelled(
    uv: uvicorn.Server, sock: socket.socket, stopping: Callable[[], Awaitable[None]]
) -> None:
    """Run uvicorn; when cancelled, ask it to shut down (lifespan included) instead of tearing it apart.

    `stopping()` runs first (shielded): responses that would never end by themselves (GET streams) end and
    the requests in flight settle, so uvicorn then finds its connections idle instead of waiting them out.
    """

    async def stop() -> None:
        await stopping()
        uv.should_exit = True

    await _shielded_until_cancelled(partial(uv.serve, sockets=[sock]), stop)


async def _shielded_until_cancelled(
    serve: Callable[[], Awaitable[object]], stop: Callable[[], Awaitable[None]]
) -> None:
    """`serve()` in a task of its own, shielded: the cancellation that asks for the stop must not reach it
    (nor the requests it runs). Once the caller is cancelled (or `serve` ended), `stop()` (shielded) asks
    it to end, and the caller waits until it did."""
    done = anyio.Event()

    async def run() -> None:
        try:
            with anyio.CancelScope(shield=True):
                await serve()
        finally:
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            await done.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await stop()
                await done.wait()
