"""Engine drop-in: serve an official-SDK server (``MCPServer``, FastMCP, low-level ``Server``) on mcpframe.

```python
from mcp.server.mcpserver import MCPServer
import mcpframe.compat

app = MCPServer("demo")

@app.tool()
def add(a: int, b: int) -> int:
    return a + b

mcpframe.compat.serve(app)                    # stdio, instead of app.run()
mcpframe.compat.serve(app, "http", port=8000) # Streamable HTTP, instead of app.run("streamable-http")
```

The SDK server's own code runs unchanged: its tools, resources, templates, prompts, completions, custom
methods, middleware, lifespan, ``Context`` (progress, logging, elicitation and sampling where the revision
allows them, ``read_resource``), input validation and result shaping. mcpframe replaces what is under it:
framing, JSON-RPC, the handshake and both protocol eras on one connection, cancellation, the transports.
What cannot be carried over is listed at start-up (``StartupReport``): one warning naming every piece, or
``UnsupportedFeatureError`` with ``strict=True``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import anyio

from mcpframe._gc import freeze_startup_heap
from mcpframe._unstable import mcp_sdk as unstable
from mcpframe.server.lifecycle import run_stoppable
from mcpframe.server.registry import ListKind
from mcpframe.session import SessionOptions
from mcpframe.transports.base import Transport
from mcpframe.transports.stdio import stdio_server

from ._report import StartupReport, Unsupported, UnsupportedFeatureError, inspect_app
from ._server import EngineConnection, EngineServer, PrivateNamesUnavailable, lowlevel_of

if TYPE_CHECKING:
    from mcpframe.http.options import HttpOptions

__all__ = [
    "EngineConnection",
    "EngineServer",
    "PrivateNamesUnavailable",
    "StartupReport",
    "Unsupported",
    "UnsupportedFeatureError",
    "engine_server",
    "serve",
    "serve_async",
]

TransportName = Literal["stdio", "http"]
_LISTS: dict[str, ListKind] = {
    "ToolsListChanged": "tools",
    "PromptsListChanged": "prompts",
    "ResourcesListChanged": "resources",
}


def _bridge_subscriptions(app: Any, server: EngineServer) -> None:
    """Forward ``ctx.notify_*_changed()`` / ``notify_resource_updated()`` from the SDK's bus to clients."""
    bus = unstable.subscription_bus(app)
    subscribe = getattr(bus, "subscribe", None)
    if subscribe is None:
        return

    def forward(event: Any) -> None:
        kind = _LISTS.get(type(event).__name__)
        if kind is not None:
            server.notify_list_changed(kind)
        elif type(event).__name__ == "ResourceUpdated":
            server.notify_resource_updated(str(event.uri))

    subscribe(forward)


def engine_server(
    app: Any, *, strict: bool = False, transport: str = "memory", thread_pool: bool = True
) -> EngineServer:
    """An mcpframe ``Server`` that serves ``app``'s methods with ``app``'s own handlers.

    Use it wherever an mcpframe ``Server`` goes: ``await server.serve(transport)``,
    ``mcpframe.client.Client(server)`` in memory, ``StreamableHTTPServer(server)``. The start-up report
    for ``transport`` is logged (one warning listing every piece not carried over) and kept as
    ``server.report``; with ``strict=True`` any such piece raises ``UnsupportedFeatureError`` instead.
    ``thread_pool=False`` keeps the SDK's own ``anyio.to_thread`` for sync functions (``mcpframe._threads``).
    """
    lowlevel = lowlevel_of(app)
    report = inspect_app(app, lowlevel, transport)
    if strict and report.warnings:
        raise UnsupportedFeatureError(report)
    report.log()
    server = EngineServer(app, thread_pool=thread_pool)
    server.report = report
    _bridge_subscriptions(app, server)
    return server


async def serve_async(
    app: Any,
    transport: TransportName | Transport = "stdio",
    *,
    strict: bool = False,
    thread_pool: bool = True,
    host: str = "127.0.0.1",
    port: int = 8000,
    http_options: HttpOptions | None = None,
    ready: Callable[[str], object] | None = None,
    **session_options: float | None,
) -> None:
    """Serve ``app`` on mcpframe until the peer goes (stdio, a ``Transport``) or until cancelled (HTTP).

    ``transport`` is ``"stdio"`` (this process's stdin/stdout, stdout protected from stray prints),
    ``"http"`` (Streamable HTTP on ``host:port``, ``http_options`` an ``HttpOptions``, ``ready(url)``
    called once listening) or any mcpframe ``Transport`` (one connection). ``session_options`` go to the
    ``Session`` (``max_frame``, ``max_in_flight``, ...).
    """
    await _serve(
        app,
        transport,
        _nothing,
        strict=strict,
        thread_pool=thread_pool,
        host=host,
        port=port,
        http_options=http_options,
        ready=ready,
        **session_options,
    )


def serve(app: Any, transport: TransportName = "stdio", **options: Any) -> None:
    """Blocking ``serve_async`` (the drop-in for ``app.run()`` / ``app.run("streamable-http")``).

    This owns the process, so once the app's lifespan has started the start-up heap is frozen out of the
    cyclic GC (``MCPFRAME_GC_FREEZE=0`` turns that off; see ``mcpframe._gc``). SIGTERM and SIGINT stop it
    gracefully, as they stop ``Server.run()`` (``mcpframe.server.lifecycle``). Over ``"http"``, once
    listening it says where on stderr, in the lines ``mcpframe serve --http`` prints, unless a ``ready``
    callback is given (it is called instead).
    """
    if transport == "http" and options.get("ready") is None:
        options["ready"] = _announcer(options.get("http_options"))
    anyio.run(lambda: run_stoppable(lambda: _serve(app, transport, freeze_startup_heap, **options)))


def _announcer(http_options: Any) -> Callable[[str], None]:
    """``ready`` for ``serve(app, "http")``: the listening lines of ``mcpframe serve --http``."""
    from mcpframe.http.server import announce  # noqa: PLC0415 - the HTTP stack is optional

    legacy = bool(getattr(http_options, "legacy_sse", True))  # None: HttpOptions(), which serves it
    return lambda url: announce(url, legacy_sse=legacy)


def _knobs(base: SessionOptions, given: dict[str, float | None]) -> SessionOptions:
    """``base`` with the session knobs given as keywords; a keyword ``SessionOptions`` lacks is a
    ``TypeError`` naming it (and the knobs there are), where the call was written."""
    names = [field.name for field in dataclasses.fields(SessionOptions)]
    unknown = [name for name in given if name not in names]
    if unknown:
        raise TypeError(
            f"unexpected keyword argument {unknown[0]!r}: the session knobs are SessionOptions' fields"
            f" ({', '.join(names)})"
        )
    fields: dict[str, Any] = dict(given)
    return dataclasses.replace(base, **fields)


def _nothing() -> None:
    """The ``serving`` hook of ``serve_async``: embedded in someone else's process, it leaves the GC alone."""


async def _serve(
    app: Any,
    transport: TransportName | Transport,
    serving: Callable[[], object],
    *,
    strict: bool = False,
    thread_pool: bool = True,
    host: str = "127.0.0.1",
    port: int = 8000,
    http_options: HttpOptions | None = None,
    ready: Callable[[str], object] | None = None,
    **session_options: float | None,
) -> None:
    """``serve_async``, calling ``serving()`` once the app's lifespan has started, before the first byte.

    The lifespan is entered here (``EngineServer.lifespan`` counts nested entries, so the one inside
    ``server.serve`` is then a no-op): what it builds (clients, pools, caches) lives as long as the
    process, and ``serve`` freezes it with the rest of the start-up heap.
    """
    if isinstance(transport, str) and transport not in ("stdio", "http"):
        raise ValueError(f"transport must be 'stdio', 'http' or a Transport, not {transport!r}")
    name = transport if isinstance(transport, str) else "transport"
    server = engine_server(app, strict=strict, transport=name, thread_pool=thread_pool)
    if transport == "stdio":
        async with stdio_server() as stdio, server.lifespan():
            serving()
            await server.serve(stdio, session_options=_knobs(SessionOptions(), session_options))
    elif transport == "http":
        from mcpframe.http.server import (  # noqa: PLC0415 - the HTTP stack is optional
            HttpOptions,
            serve_http,
        )

        options = http_options if http_options is not None else HttpOptions()
        if not isinstance(options, HttpOptions):
            raise TypeError(f"http_options must be an HttpOptions, not {type(options).__name__}")
        if session_options:  # HttpOptions and SessionOptions are frozen: derive new values
            base = options.session_options or options.lane_options()
            tuned = _knobs(base, session_options)
            options = dataclasses.replace(options, session_options=tuned)
        async with server.lifespan():
            serving()
            await serve_http(server, host=host, port=port, options=options, ready=ready)
    else:
        async with server.lifespan():
            serving()
            await server.serve(transport, session_options=_knobs(SessionOptions(), session_options))
