"""`mcpframe proxy --listen URL -- command`: a stdio server served to clients over Streamable HTTP and SSE.

```python
from mcpframe.proxy import ProxyOptions
from mcpframe.proxy.listen import serve_listen

options = ProxyOptions(listen="http://127.0.0.1:8080/mcp", command=["python", "server.py"])
await serve_listen(options, ready=print)        # until cancelled
```

The proxy is the HTTP host of `mcpframe.http` with its sessions' connections replaced: where `mcpframe serve
--http` runs a `Server` per session, the proxy runs a bridge to an upstream child (`listen_bridge` for
Streamable HTTP, `listen_legacy` for `/sse`). Everything in front of the bridge is the host's own: Host and
Origin allow-lists, bearer tokens, the body limit, the admission bound, `Mcp-Session-Id`s and their reaper,
GET streams, resumable SSE streams, DELETE. Each session gets a child of its own from a bounded pool
(`pool.py`), or with `--multiplex shared` all of them one (`listen_shared`); 2026-07-28 requests, which have
no session, share one child (`listen_stateless`).

There is no shared session store (`--store`, `HttpOptions(store=...)`): it lets any instance serve any
session by rebuilding it from the store, and a proxy's session is a child process only the instance that
started it can reach. The proxy refuses it (`STORE_REFUSED`) rather than serve sessions half-shared.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import anyio

from mcpframe import core
from mcpframe._gc import freeze_startup_heap
from mcpframe.http.admission import Admission
from mcpframe.http.asgi import header_dict
from mcpframe.http.headers import MCP_PROTOCOL_VERSION, repeated_header
from mcpframe.http.legacy import LegacySSE
from mcpframe.http.options import HttpOptions
from mcpframe.http.server import StreamableHTTPServer, announce, serve_http
from mcpframe.http.wire import WireAnswer
from mcpframe.protocol import SUPPORTED_VERSIONS
from mcpframe.session import SessionOptions

from .listen_bridge import SessionBridge
from .listen_fast import FastPosts
from .listen_legacy import LegacyBridge
from .listen_posts import BridgePosts
from .listen_shared import SharedUpstream
from .listen_shared_session import SharedBridge
from .listen_stateless import StatelessBridge
from .options import ProxyOptions
from .pool import ChildPool

__all__ = ["STORE_REFUSED", "ListenServer", "listen_address", "run_listen", "serve_listen"]

STORE_REFUSED = (
    "--store cannot be used with --listen: a session's state is its child process, which no other "
    "instance can serve (several proxies behind one URL need a balancer that keeps each Mcp-Session-Id "
    "on one instance)"
)
"""Why the proxy has no shared session store (see the module doc)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ListenAddress:
    """Where `--listen` serves: host, port and endpoint path."""

    host: str
    port: int
    path: str


def listen_address(url: str) -> ListenAddress:
    """Split an `http://host:port/path` URL; `ValueError` naming what is wrong."""
    parts = urlsplit(url)
    if parts.scheme != "http":
        raise ValueError(f"--listen {url!r}: expected an http:// URL (put TLS in front of the proxy)")
    if not parts.hostname:
        raise ValueError(f"--listen {url!r}: no host")
    try:
        port = parts.port if parts.port is not None else 80
    except ValueError as exc:
        raise ValueError(f"--listen {url!r}: {exc}") from None
    return ListenAddress(parts.hostname, port, parts.path or "/mcp")


class _Upstream:
    """What the host asks of a `Server`: a connection per session, a lifespan, and a shutdown hook."""

    def __init__(self, connect: Callable[[], SessionBridge]) -> None:
        self.connection = connect

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        yield

    def close_connections(self) -> None:
        """Nothing to do: the sessions' children end with their sessions."""


_HEADERS = core.header_dict if core.BACKEND == "native" else header_dict
"""The request's headers as a dict: the lean server gives them as a list of (bytes, bytes) tuples, which
the native core reads in one call (not through `asgi.header_dict`'s own, a Python call more)."""


class ListenServer(StreamableHTTPServer):
    """The HTTP host with a bridge to a stdio child in place of each session's `ServerConnection`."""

    def __init__(self, options: ProxyOptions, http: HttpOptions) -> None:
        if http.store is not None:  # before the host opens it (see `STORE_REFUSED`)
            raise ValueError(STORE_REFUSED)
        self.pool = ChildPool(
            options.command, env=options.env, size=options.pool_size, max_waiting=http.max_queued
        )
        # The child's frames are bounded by the frame limit (64 MiB by default), as on the stdio proxy: the
        # body limit (`max_body`, 4 MiB) bounds what a client may POST, not the answers it gets.
        max_frame = (http.session_options or SessionOptions()).max_frame
        self.exit_status: int | None = None  # the child's that ended the proxy (`on_exit`)
        self.on_stop: Callable[[], object] = lambda: None  # ends `serve_listen` (set there)
        self.shared: SharedUpstream | None = None
        on_died = self._stop if options.on_upstream_exit == "exit" else None  # a session's child's end
        connect: Callable[[], SessionBridge] = lambda: SessionBridge(max_frame=max_frame, on_died=on_died)  # noqa: E731
        if options.multiplex == "shared":
            connect = lambda: SharedBridge(self.shared, max_frame=max_frame)  # type: ignore[arg-type]  # noqa: E731
        super().__init__(_Upstream(connect), http)  # type: ignore[arg-type]  # only what _Upstream has
        if options.multiplex == "shared":
            self.shared = SharedUpstream(
                self.pool,
                max_frame=max_frame,
                spawn=self.sessions.spawn,
                on_exit=options.on_upstream_exit,
                stop=self._stop,
                idle_timeout=options.idle_timeout,
            )
        self.stateless = StatelessBridge(self.pool, max_frame=max_frame, spawn=self.sessions.spawn)
        self.posts = BridgePosts(  # type: ignore[assignment]  # the same `handle(request, owner)`
            http,
            sessions=self.sessions,
            admission=Admission(http.max_in_flight, http.max_queued),
            replies=self.replies,
            pool=self.pool,
            stateless=self.stateless,
            shared=self.shared,
        )
        self.fast = FastPosts(self.posts)  # type: ignore[arg-type]  # a BridgePosts (set just above)
        if http.legacy_sse:
            self.legacy = LegacySSE(lambda: LegacyBridge(self.pool, max_frame=max_frame), http)  # type: ignore[arg-type, return-value]

    def wire_fast(
        self, target: bytes, raw_headers: list[tuple[bytes, bytes]], body: bytes
    ) -> WireAnswer | None:
        """The lean server's hot path (see `StreamableHTTPServer.wire_fast`): a POST of one request in a
        running session goes to its child from here (`listen_fast`); anything else, `None` (the ASGI app)."""
        if target != self._target or self.options.auth is not None:
            return None
        headers = _HEADERS(raw_headers)  # checked as the full path's `_admit` does (no `auth` here)
        if len(headers) != len(raw_headers) and repeated_header(raw_headers) is not None:
            return None  # (`_admit` refuses it)
        pair = (headers.get("host"), headers.get("origin"))
        if pair not in self._allowed and not self._allowed.admit(pair):  # as `StreamableHTTPServer.wire_fast`
            return None
        version = headers.get(MCP_PROTOCOL_VERSION)  # (`_version_refusal`'s check, inlined)
        if version is not None and version not in SUPPORTED_VERSIONS:
            return None
        return self.fast.post(headers, body)

    def _stop(self, status: int | None) -> None:
        """A child ended by itself under `--on-upstream-exit exit` (the shared child, or a session's):
        the proxy ends with its status."""
        self.exit_status = status
        self.on_stop()

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        try:
            return await super().__aexit__(*exc_info)
        finally:
            with anyio.CancelScope(shield=True):
                await self.stateless.aclose()
                if self.shared is not None:
                    await self.shared.aclose()


def http_options_for(options: ProxyOptions) -> HttpOptions:
    """The host's options: those given (`ProxyOptions.http`), with the path of `--listen` and the proxy's
    idle timeout for sessions (a session's child ends with it)."""
    assert options.listen is not None
    base = options.http if isinstance(options.http, HttpOptions) else HttpOptions()
    address = listen_address(options.listen)
    return dataclasses.replace(base, path=address.path, idle_timeout=options.idle_timeout)


async def serve_listen(
    options: ProxyOptions,
    *,
    ready: Callable[[str], Any] | None = None,
    http_server: Any = None,
) -> int | None:
    """Serve `options.command` to HTTP clients at `options.listen` until cancelled; `ready(url)` once
    listening (the URL has the bound port when `:0` was asked). Returns the exit status of the child that
    ended the proxy (`--on-upstream-exit exit`: the shared child, or a session's), else `None`.

    `http_server`: mcpframe's lean HTTP/1.1 server by default (its fast path, `listen_fast`, forwards the
    common POST without the ASGI layers), unless `"uvicorn"` is asked here or in `MCPFRAME_HTTP_SERVER`
    (`mcpframe proxy --listen URL --http-server uvicorn`)."""
    assert options.listen is not None
    if http_server is None and os.environ.get("MCPFRAME_HTTP_SERVER") != "uvicorn":
        http_server = "mcpframe"
    address = listen_address(options.listen)
    http = http_options_for(options)
    app = ListenServer(options, http)
    with anyio.CancelScope() as scope:  # (not a task group: a bind error stays an `OSError` for the CLI)
        app.on_stop = scope.cancel
        await serve_http(
            app.server,
            host=address.host,
            port=address.port,
            options=http,
            ready=ready,
            http_server=http_server,
            app=app,
        )
    return app.exit_status


def run_listen(options: ProxyOptions) -> int:
    """`mcpframe proxy --listen URL -- command`: serve until SIGINT/SIGTERM; the exit status."""
    from mcpframe.server.lifecycle import run_stoppable  # noqa: PLC0415 - the server package: only here

    if not options.command:
        print("mcpframe proxy: --listen needs the server's command after '--'", file=sys.stderr)
        return 2
    try:
        listen_address(options.listen or "")
    except ValueError as exc:
        print(f"mcpframe proxy: {exc}", file=sys.stderr)
        return 2
    if getattr(options.http, "store", None) is not None:
        print(f"mcpframe proxy: {STORE_REFUSED}", file=sys.stderr)
        return 2

    def ready(url: str) -> None:
        listening = getattr(getattr(options.http, "auth", None), "listening", None)
        if listening is not None:  # a static token's resource metadata names the bound URL
            listening.append(url)
        freeze_startup_heap()  # listening, as `mcpframe serve` does (see mcpframe._gc)
        legacy = options.http is None or getattr(options.http, "legacy_sse", True)
        announce(url, legacy_sse=legacy, program="mcpframe proxy")

    status: list[int | None] = []

    async def main() -> None:
        status.append(await serve_listen(options, ready=ready))

    anyio.run(lambda: run_stoppable(main))
    return (status[0] or 0) if status else 0
