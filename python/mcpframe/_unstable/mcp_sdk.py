"""Private names of the official SDK (``mcp``) and of FastMCP, used by ``mcpframe.compat``.

Private path (exactly the pinned releases, ``VERIFIED_MCP``/``VERIFIED_FASTMCP``, which pyproject's
``sdk`` extra pins too: ``tests/unstable`` checks they agree):

- the stdio drop-in (``compat/mcp_sdk.py``) uses the SDK's context-carrying memory streams on the server
  side and its own process helpers on the client side (spawn, drain, stop), so it behaves as the SDK's
  transport does in every detail the SDK decides;
- the engine (``compat/engine``) reaches the low-level server behind an ``MCPServer``/FastMCP app and its
  whole handler table, the app's registries (to run sync functions on mcpframe's pool), its subscription
  bus, FastMCP's lifespan, and, for the short way of a plain ``tools/call``, the kernel's context, sealing
  and serializer.

Public fallback, the same answers by a slower or narrower way:

- the drop-in uses plain anyio streams (the SDK reads them alike; only the sender's ``contextvars`` are not
  carried to the handler) and the SDK's public process helpers in the SDK's own order;
- the engine finds an ``MCPServer``'s low-level server through its public HTTP session manager, and its
  methods by asking for each method mcpframe knows (a custom method is then not served); the short way,
  the sync-function pool, the OpenTelemetry filter and the subscription bridge are off (every request
  takes the SDK's full kernel; ``notify_*_changed`` reaches no client); a FastMCP app cannot be served
  (no public name reaches its low-level server): ``lowlevel_server`` answers None for it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, suppress
from contextvars import Context
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, Self, TextIO, TypeVar, cast

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.client.stdio import FORCE_KILL_TIMEOUT, PROCESS_TERMINATION_TIMEOUT
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.os.win32.utilities import (
    ServerProcess,
    close_process_job,
    create_windows_process,
    get_windows_executable_command,
    terminate_windows_process_tree,
)
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server as LowLevelServer
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resources.templates import ResourceTemplate
from mcp.server.mcpserver.resources.types import FunctionResource
from mcp.server.mcpserver.tools import Tool
from mcp.server.request_state import RequestStateBoundary
from mcp.server.runner import ServerRunner
from mcp.server.subscriptions import SubscriptionBus
from mcp.shared.message import SessionMessage
from mcp_types import CallToolRequestParams, CallToolResult, InputRequiredResult

from mcpframe._unstable import Choice, decide, version_of

__all__ = [
    "CHOICE",
    "FASTMCP_CHOICE",
    "OTEL_MIDDLEWARE",
    "SHORT_WAY",
    "VERIFIED_FASTMCP",
    "VERIFIED_MCP",
    "WRITER_FLUSH_TIMEOUT",
    "MessageReceive",
    "MessageSend",
    "SyncEntry",
    "auth_configured",
    "call_tool",
    "custom_routes",
    "drain_stdout",
    "dump_result",
    "executable_command",
    "fastmcp_lifespan",
    "is_async_callable",
    "is_sdk_call_tool",
    "lowlevel_server",
    "make_context",
    "open_server_process",
    "read_streams",
    "request_methods",
    "seal_result",
    "serialize",
    "stamp_server_info",
    "stop_server_process",
    "subscription_bus",
    "sync_registries",
    "tool",
    "write_streams",
]

VERIFIED_MCP: Final = (2, 3, 0)
"""The ``mcp`` release whose private names this module was read and tested against (pyproject pins it)."""
VERIFIED_FASTMCP: Final = (4, 1, 2)
"""The ``fastmcp`` release likewise."""

CHOICE: Final[Choice] = decide("mcp", version_of("mcp"), VERIFIED_MCP, VERIFIED_MCP)
FASTMCP_CHOICE: Final[Choice] = decide("fastmcp", version_of("fastmcp"), VERIFIED_FASTMCP, VERIFIED_FASTMCP)

OTEL_MIDDLEWARE: type[object] | None = None
"""The SDK's OpenTelemetry middleware class, which the engine leaves out while it records nothing."""

if CHOICE.private:
    import mcp.client.stdio as _client
    from mcp.server._otel import OpenTelemetryMiddleware
    from mcp.server.runner import _dump_result
    from mcp.shared._callable_inspection import is_async_callable as _sdk_is_async_callable
    from mcp.shared._context_streams import ContextSendStream, create_context_streams

    OTEL_MIDDLEWARE = OpenTelemetryMiddleware

WRITER_FLUSH_TIMEOUT: Final[float] = _client._WRITER_FLUSH_TIMEOUT if CHOICE.private else 0.5
"""How long a closing client waits for accepted messages to reach the server (the SDK's own figure)."""

_T_co = TypeVar("_T_co", covariant=True)
_T_contra = TypeVar("_T_contra", contravariant=True)


class MessageSend(Protocol[_T_contra]):
    """What the SDK sends on: an anyio memory send stream or the SDK's context-carrying one (the shape of
    the SDK's own ``WriteStream``, which lives in a private module)."""

    async def send(self, item: _T_contra, /) -> None: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None, /
    ) -> bool | None: ...


class MessageReceive(Protocol[_T_co]):
    """What the SDK reads: an anyio memory receive stream or the SDK's context-carrying one (the shape of
    the SDK's ``ReadStream``)."""

    async def receive(self) -> _T_co: ...
    async def aclose(self) -> None: ...
    def __aiter__(self) -> MessageReceive[_T_co]: ...
    async def __anext__(self) -> _T_co: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None, /
    ) -> bool | None: ...


# ----------------------------------------------------------------------------------- stdio streams

Inbound = SessionMessage | Exception


def read_streams() -> tuple[MessageSend[Inbound], MessageReceive[Inbound]]:
    """``(send, receive)`` of what an SDK server reads: the SDK's context streams, or plain anyio ones."""
    if CHOICE.private:
        return create_context_streams[Inbound](0)
    return anyio.create_memory_object_stream[Inbound](0)


def write_streams() -> tuple[
    MessageSend[SessionMessage], MemoryObjectReceiveStream[object], Callable[[object], SessionMessage]
]:
    """``(sdk_side, our_side, unwrap)``: the SDK sends on ``sdk_side``; ``unwrap(item)`` of what
    ``our_side`` yields is the message (the SDK's stream adds the sender's context to each)."""
    send, receive = anyio.create_memory_object_stream[object](0)
    if CHOICE.private:
        return ContextSendStream[SessionMessage](send), receive, _second
    return send, receive, _same


def _second(item: object) -> SessionMessage:
    return cast("tuple[Context, SessionMessage]", item)[1]


def _same(item: object) -> SessionMessage:
    return cast("SessionMessage", item)


# ----------------------------------------------------------------------------------- stdio process


async def executable_command(command: str) -> str:
    """The command as the platform runs it (Windows resolves ``.cmd``/``.bat`` shims)."""
    if CHOICE.private:
        resolved: str = await _client._get_executable_command(command)
        return resolved
    if sys.platform == "win32":  # pragma: no cover
        return await anyio.to_thread.run_sync(get_windows_executable_command, command, abandon_on_cancel=True)
    return command


async def open_server_process(
    command: str, args: list[str], env: dict[str, str] | None, errlog: TextIO, cwd: str | Path | None
) -> ServerProcess:
    """Spawn the server with pipes, in a kill scope of its own (a new session on POSIX, a job on Windows)."""
    if CHOICE.private:
        return await _client._create_platform_compatible_process(
            command=command, args=args, env=env, errlog=errlog, cwd=cwd
        )
    if sys.platform == "win32":  # pragma: no cover
        return await create_windows_process(command, args, env, errlog, cwd)
    return await anyio.open_process([command, *args], env=env, stderr=errlog, cwd=cwd, start_new_session=True)


_PIPE_GONE: Final = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


async def drain_stdout(process: ServerProcess) -> None:
    """Read and drop what the server still writes, so it is never blocked on a full pipe while exiting."""
    if CHOICE.private:
        await _client._drain_stdout(process)
        return
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), suppress(anyio.EndOfStream, *_PIPE_GONE):
        while True:
            await process.stdout.receive()


async def stop_server_process(process: ServerProcess) -> None:
    """Close the server's stdin, give it time to exit, then end its whole process tree."""
    if CHOICE.private:
        await _client._stop_server_process(process)
        return
    assert process.stdin is not None
    assert process.stdout is not None
    with suppress(*_PIPE_GONE):
        await process.stdin.aclose()
    if not await _exited(process, PROCESS_TERMINATION_TIMEOUT):
        if sys.platform == "win32":  # pragma: no cover
            await terminate_windows_process_tree(process)
        else:
            assert isinstance(process, anyio.abc.Process)
            await terminate_posix_process_tree(process, FORCE_KILL_TIMEOUT)
        await _exited(process, FORCE_KILL_TIMEOUT)
    close_process_job(process)
    with suppress(*_PIPE_GONE):  # a surviving grandchild may hold the pipe: poison our reader anyway
        await process.stdout.aclose()


async def _exited(process: ServerProcess, timeout: float) -> bool:
    """Whether the process ended within ``timeout``, by polling (``wait()`` would also wait for the pipes'
    EOF, which a grandchild holding them delays)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


# ----------------------------------------------------------------------------------- engine: the app


def lowlevel_server(app: object) -> LowLevelServer[Any] | None:
    """The SDK low-level server behind an ``MCPServer`` or FastMCP app (or ``app`` itself), if reachable."""
    if isinstance(app, LowLevelServer):
        return app
    if isinstance(app, MCPServer):
        if CHOICE.private:
            return app._lowlevel_server
        return _through_session_manager(app)
    inner = getattr(app, "_mcp_server", None) if FASTMCP_CHOICE.private else None
    return inner if isinstance(inner, LowLevelServer) else None


def _through_session_manager(app: MCPServer) -> LowLevelServer[Any] | None:
    """Publicly: the server the app's HTTP session manager serves (made first, unstarted, if need be)."""
    try:
        manager = app.session_manager
    except RuntimeError:  # built lazily, by streamable_http_app()
        try:
            app.streamable_http_app()
        except Exception:  # e.g. auth settings the HTTP app refuses: no way in, then
            return None
        manager = app.session_manager
    server = manager.app
    return server if isinstance(server, LowLevelServer) else None


def request_methods(lowlevel: LowLevelServer[Any], known: Iterable[str]) -> list[str]:
    """The methods the low-level server answers; publicly, those of ``known`` it answers."""
    if CHOICE.private:
        return list(lowlevel._request_handlers)
    return [method for method in known if lowlevel.get_request_handler(method) is not None]


SyncEntry = Tool | FunctionResource | ResourceTemplate | Prompt
"""A registry entry backed by a function (``fn``) the SDK may run in a worker thread."""


def sync_registries(app: object) -> list[tuple[dict[str, object], type[SyncEntry]]]:
    """An ``MCPServer``'s registries of function-backed entries, each with its entry type (none publicly)."""
    if not CHOICE.private or not isinstance(app, MCPServer):
        return []
    tables = (
        (app._tool_manager._tools, Tool),
        (app._resource_manager._resources, FunctionResource),
        (app._resource_manager._templates, ResourceTemplate),
        (app._prompt_manager._prompts, Prompt),
    )
    return [(cast("dict[str, object]", table), kind) for table, kind in tables]


def subscription_bus(app: object) -> SubscriptionBus | None:
    """The ``MCPServer``'s bus of list-changed/updated events (``None`` on the public path)."""
    if not CHOICE.private or not isinstance(app, MCPServer):
        return None
    return app._subscriptions


def fastmcp_lifespan(app: object) -> Callable[[], AbstractAsyncContextManager[object]] | None:
    """FastMCP's own lifespan manager, entered beside the SDK's (``None`` unless verified)."""
    manager = getattr(app, "_lifespan_manager", None) if FASTMCP_CHOICE.private else None
    return cast("Callable[[], AbstractAsyncContextManager[object]]", manager) if callable(manager) else None


def auth_configured(app: object) -> bool:
    """Whether the app keeps a token verifier or an OAuth provider of its own (False on the public path,
    where the public ``settings.auth`` the SDK requires beside them tells)."""
    if not CHOICE.private:
        return False
    return getattr(app, "_token_verifier", None) is not None or (
        getattr(app, "_auth_server_provider", None) is not None
    )


def custom_routes(app: object) -> list[object]:
    """The app's extra HTTP routes (the SDK's custom routes, FastMCP's additional ones), as far as seen."""
    routes: list[object] = []
    if CHOICE.private:
        routes += getattr(app, "_custom_starlette_routes", None) or []
    if FASTMCP_CHOICE.private:
        routes += getattr(app, "_additional_http_routes", None) or []
    return routes


def is_async_callable(obj: object) -> bool:
    """Whether calling ``obj`` gives an awaitable, as the SDK decides it (partials looked through)."""
    if CHOICE.private:
        return bool(_sdk_is_async_callable(obj))
    import functools  # noqa: PLC0415 - public path only
    import inspect  # noqa: PLC0415

    while isinstance(obj, functools.partial):
        obj = obj.func
    return inspect.iscoroutinefunction(obj) or (
        callable(obj) and inspect.iscoroutinefunction(getattr(obj, "__call__", None))  # noqa: B004
    )


# ----------------------------------------------------------------------------------- the engine's short way

SHORT_WAY: Final[bool] = CHOICE.private
"""Whether the engine may skip the SDK kernel's per-request machinery for a plain ``tools/call``; every
function below is called only when it is true."""


def tool(app: MCPServer, name: str) -> Tool | None:
    """The ``MCPServer``'s registered tool called ``name``, or None."""
    return app._tool_manager.get_tool(name)


def is_sdk_call_tool(app: MCPServer, handler: object) -> bool:
    """Whether ``handler`` is ``app``'s own ``tools/call`` handler, not an override or an interceptor."""
    return getattr(handler, "__self__", None) is app and (
        getattr(handler, "__func__", None) is MCPServer._handle_call_tool
    )


async def call_tool(app: MCPServer, params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
    """``app``'s own ``tools/call`` handler with no request context (for a call that needs none)."""
    return await app._handle_call_tool(cast("ServerRequestContext[Any]", None), params)


def make_context(
    runner: ServerRunner[Any], dctx: Any, method: str, params: Mapping[str, Any], version: str
) -> ServerRequestContext[Any, Any]:
    """The kernel's request context for ``method`` (``dctx`` the SDK's dispatch context)."""
    return runner._make_context(dctx, method, params, None, version)


def seal_result(
    boundary: RequestStateBoundary, ctx: ServerRequestContext[Any, Any], result: HandlerResult
) -> HandlerResult:
    """A request-state boundary's sealing of ``result``."""
    return boundary._seal_result(ctx, result, None)


def serialize(runner: ServerRunner[Any], method: str, version: str, result: HandlerResult) -> dict[str, Any]:
    """The kernel's wire form of ``method``'s ``result`` at ``version``."""
    return runner._serialize(method, version, result)


def dump_result(result: HandlerResult) -> dict[str, Any]:
    """The kernel's plain dict of a handler's (or middleware's) result."""
    return _dump_result(result)


def stamp_server_info(runner: ServerRunner[Any], version: str, out: dict[str, Any]) -> dict[str, Any]:
    """The kernel's server-info stamp put into ``out``'s ``_meta``."""
    return runner._stamp_server_info(version, out)
