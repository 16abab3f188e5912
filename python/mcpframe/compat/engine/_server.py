"""``EngineServer``: an mcpframe ``Server`` whose methods are an official-SDK server's own handlers.

mcpframe does the wire and the lifecycle (framing, JSON-RPC, cancellation, ``initialize``, ``ping``,
``server/discover``, ``subscriptions/listen``, both eras on one connection); every other method goes to the
SDK's per-connection kernel (``mcp.server.runner.ServerRunner``) exactly as the SDK's own engine would
call it: the SDK's middleware chain, its per-revision params validation, its handlers (tools, resources,
templates, prompts, completions, custom methods) and its result shaping. Handlers see the SDK's own
``Context``/``ServerSession``, whose outbound traffic the channels in ``_channels`` put on mcpframe's wire.
The one exception is a plain handshake-era ``tools/call`` (``_fast``): where the kernel's per-request
machinery provably changes nothing it is skipped, and the SDK's own tool code and result shaping run alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any, cast

from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server as LowLevelServer
from mcp.server.mcpserver.tools import Tool as SDKTool
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    InitializeRequestParams,
    methods,
)
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION
from pydantic import ValidationError

from mcpframe import protocol
from mcpframe._threads import WorkerPool, threaded
from mcpframe._unstable import ENV_VAR, PUBLIC_ONLY
from mcpframe._unstable import mcp_sdk as unstable
from mcpframe.server import Server, ServerConnection
from mcpframe.server.context import CallInfo
from mcpframe.server.lifecycle import tracked
from mcpframe.session import JSONRPCError, Message, Request, SessionOptions
from mcpframe.transports.base import Transport

from . import _tracing as tracing
from ._channels import ConnectionChannel, NotificationChannel, RequestChannel
from ._fast import eligible, modern_eligible, plain_tool_call, seal, short_tool_call
from ._fastmcp import is_fastmcp, pool_fastmcp
from ._report import StartupReport

__all__ = ["OWNED_METHODS", "EngineConnection", "EngineServer", "PrivateNamesUnavailable", "lowlevel_of"]

OWNED_METHODS = frozenset({protocol.PING, protocol.SERVER_DISCOVER, protocol.SUBSCRIPTIONS_LISTEN})
"""Methods mcpframe answers itself, whatever the SDK server registered for them."""


class PrivateNamesUnavailable(TypeError):
    """The app is reached only through a runtime's private names, and mcpframe's private path is off here.

    FastMCP publishes no way to its SDK server, so the engine serves a FastMCP app only on the fastmcp
    release it was read against, and not under ``MCPFRAME_PUBLIC_ONLY=1``. A class of its own so that a
    caller (``mcpframe serve``) can tell this expected refusal from a bug and say what to do instead
    (``remedy``); a ``TypeError`` still, as it was before it had a class.
    """

    def __init__(self, runtime: str, what: str, reason: str) -> None:
        self.runtime = runtime
        self.reason = reason
        if PUBLIC_ONLY:
            self.remedy = f"unset {ENV_VAR}, or run it with {runtime}'s own runner"
        else:
            self.remedy = f"install the verified {runtime} release, or run it with {runtime}'s own runner"
        super().__init__(f"{what} needs {runtime}'s private names here: {reason}")


def lowlevel_of(app: Any) -> LowLevelServer[Any]:
    """The SDK low-level ``Server`` behind an ``MCPServer``, a FastMCP app, or a low-level server itself.

    A FastMCP app's is reached by a private name only: with another ``fastmcp`` release than the pinned
    one, or ``MCPFRAME_PUBLIC_ONLY=1``, it is refused with ``PrivateNamesUnavailable``
    (``mcpframe._unstable.mcp_sdk``).
    """
    lowlevel = unstable.lowlevel_server(app)
    if lowlevel is not None:
        return lowlevel
    if is_fastmcp(app):
        raise PrivateNamesUnavailable("fastmcp", "a FastMCP app", unstable.FASTMCP_CHOICE.reason)
    raise TypeError(
        f"expected an mcp MCPServer, a FastMCP app or an mcp low-level Server, not {type(app).__name__}"
    )


class _Kernel:
    """The SDK low-level server as the engine's ``ServerRunner`` sees it.

    Everything is the server's own, except that its ``OpenTelemetryMiddleware`` is left out of the chain
    while no tracer provider is installed: it would only make non-recording spans (the SDK calls it a
    no-op until an exporter is installed), at a tenth of a request's cost here. Once a provider is set,
    the next request runs it again.
    """

    def __init__(self, lowlevel: LowLevelServer[Any]) -> None:
        self._lowlevel = lowlevel

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lowlevel, name)

    @property
    def middleware(self) -> list[Any]:
        """The server's middleware chain (OpenTelemetry's only while spans would be recorded)."""
        chain = self._lowlevel.middleware
        otel = unstable.OTEL_MIDDLEWARE
        if otel is not None and tracing.quiet():
            return [mw for mw in chain if not isinstance(mw, otel)]
        return chain


def _wire_error(exc: Exception, *, modern: bool) -> JSONRPCError:
    """An SDK handler failure as the SDK words it on the wire.

    ``MCPError`` carries its own error and a pydantic ``ValidationError`` is -32602 on both eras. Anything
    else is what the SDK's engines make of it: its 2026-07-28 entry answers -32603 "Internal server error";
    its handshake-era dispatcher answers code 0 with the exception's text, which SDK servers rely on to
    word their own failures (``MCPServer.get_prompt`` raises ``ValueError("Missing required ...")``).
    """
    if isinstance(exc, MCPError):
        return JSONRPCError(exc.code, exc.message, exc.data)
    if isinstance(exc, ValidationError):
        return JSONRPCError(INVALID_PARAMS, "Invalid request parameters", "")
    if modern:
        return JSONRPCError(INTERNAL_ERROR, "Internal server error")
    return JSONRPCError(0, str(exc))


class EngineConnection(ServerConnection):
    """One client connection: mcpframe's state plus the SDK ``Connection``/kernel of its legacy era."""

    server: EngineServer

    def __init__(self, server: EngineServer) -> None:
        super().__init__(server)
        self._runner: ServerRunner[Any] | None = None

    def legacy_runner(self) -> ServerRunner[Any]:
        """The SDK kernel for this connection's handshake era, built once ``initialize`` has been answered."""
        if self._runner is None:
            assert self.session is not None
            assert self.version is not None
            channel = ConnectionChannel(self.session, can_send_request=True)
            connection = Connection(channel, protocol_version=self.version)
            try:
                connection.client_params = InitializeRequestParams.model_validate(
                    {
                        "protocolVersion": self.version,
                        "capabilities": self.client_capabilities,
                        "clientInfo": self.client_info,
                    },
                    by_name=False,
                )
            except ValidationError:  # mcpframe accepted a loose initialize the SDK would have refused
                connection.client_params = None
            connection.initialized.set()  # mcpframe has already opened the gate
            self._runner = ServerRunner(self.server.kernel, connection, self.server.lifespan_state)
        return self._runner

    async def handle_notification(self, message: Message) -> None:
        """mcpframe's own bookkeeping, then the SDK's notification handlers (legacy era only)."""
        await super().handle_notification(message)
        if self.version is None or self.session is None or message.method is None:
            return
        if message.method == protocol.NOTIFICATIONS_INITIALIZED:
            return  # the SDK connection was opened at initialize
        channel = NotificationChannel(self.session)
        params = message.params if isinstance(message.params, dict) else None
        await self.legacy_runner().on_notify(channel, message.method, params)

    def close(self) -> None:
        """Forget the SDK kernel with the connection."""
        super().close()
        self._runner = None


def _channel(request: Request) -> RequestChannel:
    """The SDK's dispatch context for one handshake-era request."""
    return RequestChannel(request, can_send_request=True)


async def _served(conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]) -> Any:
    """The method handler mcpframe calls for every SDK-served method."""
    assert isinstance(conn, EngineConnection)
    server = conn.server
    raw = request.params if isinstance(request.params, dict) else None
    try:
        if not call.modern:
            runner = conn.legacy_runner()
            if request.method == protocol.TOOLS_CALL and eligible(runner, server.app, raw):
                assert raw is not None
                return await plain_tool_call(runner, server.app, partial(_channel, request), raw)
            return await runner.on_request(_channel(request), request.method, raw)
        return await server.serve_modern(conn, request, call, raw)
    except Exception as exc:
        if not isinstance(exc, MCPError | ValidationError):
            server.logger.exception("handler for %r raised", request.method)
        raise _wire_error(exc, modern=call.modern) from None


class EngineServer(Server):
    """An mcpframe ``Server`` serving an SDK server's methods; build it with ``engine_server(app)``."""

    def __init__(self, app: Any, *, thread_pool: bool = True) -> None:
        lowlevel = lowlevel_of(app)
        super().__init__(lowlevel.name, version=lowlevel.version, instructions=lowlevel.instructions)
        self.app = app
        self.lowlevel = lowlevel
        self.kernel = cast("LowLevelServer[Any]", _Kernel(lowlevel))
        self.info = dict(lowlevel.server_info_stamp)
        self.lifespan_state: Any = None
        self._lifespan_depth = 0
        self._lifespan_stack: AsyncExitStack | None = None
        self._sdk_capabilities: dict[str, Any] | None = None
        self._sdk_modern_capabilities: dict[str, Any] | None = None
        self.report: StartupReport | None = None
        self._modern_shaper: ServerRunner[Any] | None = None
        self.pool = WorkerPool() if thread_pool else None
        tracing.prime()
        self.fallback_handler = _served  # methods the SDK server lacks get its own -32601
        self.refresh()

    # ----------------------------------------------------------------- offers

    def capabilities(self) -> dict[str, Any]:
        """The capabilities the SDK server declares at ``initialize`` (computed once)."""
        if self._sdk_capabilities is None:
            options = self.lowlevel.create_initialization_options()
            capabilities = options.capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
            # What the SDK's result sieve leaves of them at the newest handshake revision (it drops
            # fields that revision does not define, such as `extensions`).
            shaped = methods.serialize_server_result(
                protocol.INITIALIZE,
                LATEST_HANDSHAKE_VERSION,
                {
                    "protocolVersion": LATEST_HANDSHAKE_VERSION,
                    "capabilities": capabilities,
                    "serverInfo": self.info,
                },
            )
            self._sdk_capabilities = shaped["capabilities"]
        return self._sdk_capabilities

    def modern_capabilities(self) -> dict[str, Any]:
        """The capabilities the SDK server's ``server/discover`` declares (its 2026-07-28 derivation)."""
        if self._sdk_modern_capabilities is None:
            capabilities = self.lowlevel.get_capabilities(protocol_version=LATEST_MODERN_VERSION)
            dumped = capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
            shaped = methods.serialize_server_result(
                protocol.SERVER_DISCOVER,
                LATEST_MODERN_VERSION,
                {
                    "supportedVersions": [LATEST_MODERN_VERSION],
                    "capabilities": dumped,
                    "resultType": "complete",
                    "ttlMs": 0,
                    "cacheScope": "private",
                },
            )
            self._sdk_modern_capabilities = shaped["capabilities"]
        return self._sdk_modern_capabilities

    def refresh(self) -> None:
        """Take the SDK server's method table and capabilities again (after adding handlers at run time)."""
        self._sdk_capabilities = self._sdk_modern_capabilities = None
        # Exactly the SDK server's methods: none of mcpframe's own registry-backed ones stay behind.
        # Publicly only the methods mcpframe knows can be asked for: a custom method is then not served.
        self.handlers = {
            method: _served
            for method in unstable.request_methods(self.lowlevel, sorted(protocol.SERVER_METHODS))
            if method not in OWNED_METHODS
        }

    def connection(self) -> EngineConnection:
        """Fresh per-connection state (an SDK kernel is attached once the client has initialized)."""
        return tracked(EngineConnection(self))  # a graceful stop (SIGTERM) waits for its requests

    # ----------------------------------------------------------------- serving

    async def serve_modern(
        self, conn: EngineConnection, request: Request, call: CallInfo, raw: dict[str, Any] | None
    ) -> Any:
        """One 2026-07-28 request on a born-ready SDK connection from its envelope (as the SDK does)."""
        if request.method == protocol.TOOLS_CALL and modern_eligible(self.kernel, self.app, raw):
            assert raw is not None
            params = raw

            async def sealer(dumped: dict[str, Any]) -> Any:
                connection, runner = self._modern_kernel(conn, request, call)
                try:
                    return seal(
                        runner, RequestChannel(request, can_send_request=False), params, call.version, dumped
                    )
                finally:
                    await aclose_shielded(connection)

            return await short_tool_call(self._shaper(), self.app, call.version, params, sealer)
        connection, runner = self._modern_kernel(conn, request, call)
        try:
            return await runner.on_request(
                RequestChannel(request, can_send_request=False), request.method, raw
            )
        finally:
            await aclose_shielded(connection)

    def _modern_kernel(
        self, conn: EngineConnection, request: Request, call: CallInfo
    ) -> tuple[Connection, ServerRunner[Any]]:
        """The SDK connection and kernel of one 2026-07-28 request, built from its envelope."""
        assert conn.session is not None
        meta = request.meta
        connection = Connection.from_envelope(
            call.version,
            meta.get(CLIENT_INFO_META_KEY),
            meta.get(CLIENT_CAPABILITIES_META_KEY),
            outbound=ConnectionChannel(conn.session, can_send_request=False),
        )
        return connection, ServerRunner(self.kernel, connection, self.lifespan_state)

    def _shaper(self) -> ServerRunner[Any]:
        """A kernel the short way's 2026-07-28 results are shaped by (shaping reads only the server)."""
        if self._modern_shaper is None:
            connection = Connection.from_envelope(LATEST_MODERN_VERSION, None, None)
            self._modern_shaper = ServerRunner(self.kernel, connection, None)
        return self._modern_shaper

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[Any]:
        """Run the SDK server's lifespan (entered once however many connections share it)."""
        if self._lifespan_depth == 0:
            stack = AsyncExitStack()
            await stack.__aenter__()
            try:
                manager = unstable.fastmcp_lifespan(self.app)
                if manager is not None:  # FastMCP keeps its own lifespan state beside the SDK's
                    await stack.enter_async_context(manager())
                self.lifespan_state = await stack.enter_async_context(self.lowlevel.lifespan(self.lowlevel))
                stack.callback(self._pool_sync_functions())
                stack.callback(pool_fastmcp(self.app, self.pool))
            except BaseException:
                await stack.__aexit__(None, None, None)
                raise
            self._lifespan_stack = stack
        self._lifespan_depth += 1
        try:
            yield self.lifespan_state
        finally:
            self._lifespan_depth -= 1
            if self._lifespan_depth == 0 and self._lifespan_stack is not None:
                stack, self._lifespan_stack = self._lifespan_stack, None
                await stack.aclose()

    def _pool_sync_functions(self) -> Callable[[], None]:
        """Run the ``MCPServer``'s sync tools, resources, templates and prompts on ``self.pool`` while
        serving (the SDK would use ``anyio.to_thread``); returns the undo.

        Registry entries are swapped for copies whose function is an async stand-in (``mcpframe._threads``);
        the app's own objects are untouched and come back when serving ends (unless replaced meanwhile).
        Entries added while serving keep the SDK's threads.
        """
        if self.pool is None:
            return lambda: None
        swapped: list[tuple[dict[str, object], str, object, object]] = []
        for table, kind in unstable.sync_registries(self.app):
            for key, entry in list(table.items()):
                if isinstance(entry, kind) and not unstable.is_async_callable(entry.fn):
                    update: dict[str, Any] = {"fn": threaded(entry.fn, self.pool)}
                    if isinstance(entry, SDKTool):
                        update["is_async"] = True
                    table[key] = stand_in = entry.model_copy(update=update)
                    swapped.append((table, key, entry, stand_in))

        def undo() -> None:
            for table, key, entry, stand_in in swapped:
                if table.get(key) is stand_in:
                    table[key] = entry

        return undo

    async def serve(self, transport: Transport, *, session_options: SessionOptions | None = None) -> None:
        """Serve one connection on ``transport`` inside the SDK server's lifespan."""
        async with self.lifespan():
            await super().serve(transport, session_options=session_options)
