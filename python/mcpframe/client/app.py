"""``Client``: an MCP client over any transport, speaking both protocol eras.

```python
async with Client(server) as client:                      # an mcpframe.server.Server, in memory
    tools = await client.list_tools()
async with Client.stdio("python", ["server.py"]) as client:  # a child process
    result = await client.call_tool("add", {"a": 1, "b": 2})
```
Connecting probes ``server/discover`` (2026-07-28: stateless, version and capabilities in every request's
``_meta``) and falls back to ``initialize`` + ``notifications/initialized`` on any error or a timeout.

Every request has a deadline: ``timeout`` (default ``DEFAULT_TIMEOUT``, 60 s, as the official SDK's reads)
without a response or progress raises ``RequestTimeout``; pass ``timeout=`` to one call, or to ``Client``
for all of them (``None`` or ``math.inf``: wait for ever).
"""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import IO, Any, Final, Literal

import anyio
import anyio.abc

from mcpframe import __version__, jsonrpc
from mcpframe.client.inbound import (
    ElicitationHandler,
    Inbound,
    LoggingHandler,
    NotificationCallback,
    Roots,
    SamplingHandler,
)
from mcpframe.client.methods import LogLevel, Methods
from mcpframe.session import JSONRPCError, ProgressCallback, RequestTimeout, Session
from mcpframe.session.peer import only
from mcpframe.transports import Transport, memory_pair, spawn

__all__ = ["DEFAULT_TIMEOUT", "LEGACY_VERSIONS", "MODERN_VERSION", "Client", "IncompatibleServerError"]

MODERN_VERSION: Final = "2026-07-28"
LEGACY_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
_MAX_INPUT_ROUNDS = 16
DEFAULT_TIMEOUT: Final = 60.0
"""Seconds a request waits for its response (or progress) unless told otherwise (the SDK's read timeout)."""

Mode = Literal["auto", "modern", "legacy"]
_Opener = Callable[[anyio.abc.TaskGroup], Awaitable[Transport]]


class IncompatibleServerError(ConnectionError):
    """The server speaks no protocol revision this client speaks."""


def _memory_opener(server: Any) -> _Opener:
    async def open_memory(tg: anyio.abc.TaskGroup) -> Transport:
        client_end, server_end = memory_pair()
        tg.start_soon(server.serve, server_end)
        return client_end

    return open_memory


def _transport_opener(transport: Transport) -> _Opener:
    async def open_given(tg: anyio.abc.TaskGroup) -> Transport:
        return transport

    return open_given


class Client(Methods):
    """An MCP client; use it as an async context manager (see the module doc).

    ``timeout`` is how long each request waits for its response (progress restarts the clock): 60 s by
    default; a call's own ``timeout=`` wins; ``None`` waits for ever. ``discover_timeout`` bounds the
    ``server/discover`` probe (then the client falls back to ``initialize``).
    """

    def __init__(
        self,
        server: Any = None,
        *,
        transport: Transport | None = None,
        name: str = "mcpframe-client",
        version: str = __version__,
        mode: Mode = "auto",
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        roots: Roots | None = None,
        logging_handler: LoggingHandler | None = None,
        notification_handler: NotificationCallback | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        discover_timeout: float = 10.0,
        **session_options: Any,
    ) -> None:
        if (server is None) == (transport is None):
            raise TypeError("Client() needs exactly one of: a server (in memory) or transport=")
        self._open: _Opener = (
            _transport_opener(transport) if transport is not None else _memory_opener(server)
        )
        self.client_info: dict[str, Any] = {"name": name, "version": version}
        self.mode: Mode = mode
        self.timeout = timeout
        self.discover_timeout = discover_timeout
        self.inbound = Inbound(
            sampling=sampling_handler,
            elicitation=elicitation_handler,
            roots=roots,
            logging=logging_handler,
            notifications=notification_handler,
        )
        self._session_options = session_options
        self._session: Session | None = None
        self._stack: AsyncExitStack | None = None
        self.protocol_version: str | None = None
        self.server_capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] | None = None
        self.instructions: str | None = None
        self.log_level: LogLevel | None = None
        self._listen_lock = anyio.Lock()

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: int | IO[Any] | None = None,
        grace: float = 2.0,
        **options: Any,
    ) -> Client:
        """A client for a server run as a child process (``command args...``) over its stdio."""
        client = cls(transport=_DeferredTransport(), **options)

        async def open_process(tg: anyio.abc.TaskGroup) -> Transport:
            return await spawn(command, args, env=env, cwd=cwd, stderr=stderr, grace=grace)

        client._open = open_process
        return client

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        http_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> Client:
        """A client for a Streamable HTTP endpoint (needs ``mcpframe[http]``); ``http_options`` are keyword
        arguments of ``StreamableHTTPTransport`` (``http_client=``, ``timeout=``, ``get_stream=``...)."""
        from mcpframe.http.client import StreamableHTTPTransport  # noqa: PLC0415 (optional: httpx)

        client = cls(transport=_DeferredTransport(), **options)

        async def open_http(tg: anyio.abc.TaskGroup) -> Transport:
            transport = StreamableHTTPTransport(url, headers=headers, **(http_options or {}))
            await tg.start(transport.run)
            return transport

        client._open = open_http
        return client

    # ------------------------------------------------------------------ lifecycle

    @property
    def session(self) -> Session:
        """The underlying JSON-RPC session (while connected)."""
        if self._session is None:
            raise RuntimeError("the client is not connected: use `async with Client(...) as client`")
        return self._session

    @property
    def era(self) -> Literal["modern", "legacy"] | None:
        """``"modern"`` (2026-07-28), ``"legacy"`` (initialize handshake), ``None`` before connecting."""
        if self.protocol_version is None:
            return None
        return "modern" if self.protocol_version == MODERN_VERSION else "legacy"

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            tg = await stack.enter_async_context(anyio.create_task_group())
            transport = await self._open(tg)
            session = Session(
                transport,
                request_handler=self.inbound.handle_request,
                notification_handler=self.inbound.handle_notification,
                **self._session_options,
            )
            self._session = await stack.enter_async_context(session)
            await self._negotiate()
        except BaseException as exc:
            self._session = None
            try:
                await stack.__aexit__(type(exc), exc, exc.__traceback__)
            except BaseExceptionGroup as group:
                if not only(group, exc):
                    raise
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        stack, self._stack = self._stack, None
        self._session = None
        if stack is None:
            return None
        try:
            return await stack.__aexit__(*exc_info)
        except BaseExceptionGroup as group:
            if only(group, exc_info[1]):
                return False  # the block's own exception: let it propagate unwrapped
            raise

    async def _negotiate(self) -> None:
        if self.mode != "legacy":
            try:
                discovered = await self.session.request(
                    "server/discover", {"_meta": self._modern_meta()}, timeout=self.discover_timeout
                )
            except JSONRPCError:  # includes RequestTimeout
                if self.mode == "modern":
                    raise
            else:
                if self._adopt(discovered):
                    return
                if self.mode == "modern":
                    raise IncompatibleServerError(f"the server does not speak {MODERN_VERSION}")
        await self._initialize()

    def _adopt(self, discovered: Any) -> bool:
        if not isinstance(discovered, dict):
            return False
        versions = discovered.get("supportedVersions")
        if not isinstance(versions, list) or MODERN_VERSION not in versions:
            return False
        self.protocol_version = MODERN_VERSION
        self._take_server_facts(discovered)
        return True

    async def _initialize(self) -> None:
        params = {
            "protocolVersion": LEGACY_VERSIONS[0],
            "capabilities": self.inbound.capabilities(),
            "clientInfo": self.client_info,
        }
        result = await self._timed("initialize", params, timeout=None)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in LEGACY_VERSIONS:
            raise IncompatibleServerError(f"the server chose protocol version {version!r}, unsupported here")
        self.protocol_version = version
        self._take_server_facts(result)
        await self.session.notify("notifications/initialized")

    def _take_server_facts(self, result: dict[str, Any]) -> None:
        capabilities = result.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        meta = result.get("_meta")
        info = result.get("serverInfo") or (meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None)
        self.server_info = info if isinstance(info, dict) else None
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None

    # ------------------------------------------------------------------ requests

    def _modern_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            PROTOCOL_VERSION_KEY: MODERN_VERSION,
            CLIENT_CAPABILITIES_KEY: self.inbound.capabilities(),
            CLIENT_INFO_KEY: self.client_info,
        }
        if self.log_level is not None:
            meta[LOG_LEVEL_KEY] = self.log_level
        return meta

    def _stamp(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        if self.era != "modern":
            return params
        params = dict(params or {})
        meta = params.get("_meta")
        params["_meta"] = {**(meta if isinstance(meta, dict) else {}), **self._modern_meta()}
        return params

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """Send any request (stamped with the modern ``_meta`` when in that era) and return its result.

        ``RequestTimeout`` after ``timeout`` (default: the client's, 60 s unless set) without a response.
        """
        return await self._timed(
            method, self._stamp(params), timeout=timeout, progress=progress, max_timeout=max_timeout
        )

    async def _timed(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None,
        progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """``session.request`` with the client's timeout; its ``RequestTimeout`` says how to wait longer."""
        limit = self.timeout if timeout is None else timeout
        try:
            return await self.session.request(
                method, params, timeout=limit, on_progress=progress, max_timeout=max_timeout
            )
        except RequestTimeout as exc:
            hint = (
                "; to wait longer pass timeout=<seconds> to this call, or Client(timeout=<seconds>) for"
                " every call (None: no limit)"
            )
            raise RequestTimeout(exc.message + hint, exc.data) from None

    async def interactive(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> dict[str, Any]:
        """A request whose server may answer ``input_required`` (2026-07-28): fulfil and retry."""
        for _ in range(_MAX_INPUT_ROUNDS):
            result = await self.request(
                method, params, timeout=timeout, progress=progress, max_timeout=max_timeout
            )
            if not isinstance(result, dict):
                raise JSONRPCError(jsonrpc.INTERNAL_ERROR, f"{method}: the result is not an object")
            if result.get("resultType") != "input_required":
                return result
            params = dict(params)
            params["inputResponses"] = await self.inbound.fulfil(result.get("inputRequests") or {})
            state = result.get("requestState")
            if state is None:
                params.pop("requestState", None)
            else:
                params["requestState"] = state
        raise JSONRPCError(jsonrpc.INTERNAL_ERROR, f"{method}: too many input_required rounds")

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check the server answers (``ping``; ``server/discover`` in 2026-07-28, which has no ping)."""
        if self.era == "modern":
            await self.request("server/discover", timeout=timeout)
        else:
            await self.request("ping", timeout=timeout)

    async def set_logging_level(self, level: LogLevel) -> None:
        """Ask for log messages at ``level`` and above (per request ``_meta`` in 2026-07-28)."""
        self.log_level = level
        if self.era != "modern":
            await self.request("logging/setLevel", {"level": level})

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
    ) -> AsyncIterator[dict[str, Any]]:
        """2026-07-28 ``subscriptions/listen``: while the block runs, the chosen notifications (list changes,
        ``notifications/resources/updated`` for ``resource_uris``) reach ``notification_handler``.

        Yields what the server accepted (e.g. ``{"toolsListChanged": True}``). Legacy servers push list
        changes unasked and use ``subscribe()`` for resources.
        """
        if self.era != "modern":
            raise RuntimeError("subscriptions/listen is part of 2026-07-28 only; use subscribe() here")
        wanted: dict[str, Any] = {}
        for flag, on in (("toolsListChanged", tools), ("promptsListChanged", prompts)):
            if on:
                wanted[flag] = True
        if resources:
            wanted["resourcesListChanged"] = True
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)
        async with self._listen_lock, anyio.create_task_group() as tg:
            acks_in, acks_out = anyio.create_memory_object_stream[dict[str, Any]](1)
            self.inbound.acknowledged = acks_in  # one listen opens at a time: its ack is the next one
            try:
                tg.start_soon(self._listen, {"notifications": wanted})
                accepted = await acks_out.receive()
            finally:
                self.inbound.acknowledged = None
            try:
                yield accepted
            finally:
                tg.cancel_scope.cancel()  # cancels the request: the server ends the stream

    async def _listen(self, params: dict[str, Any]) -> None:
        await self.request("subscriptions/listen", params, timeout=math.inf)

    async def notify_roots_changed(self) -> None:
        """Tell the server the roots changed."""
        await self.session.notify("notifications/roots/list_changed")


class _DeferredTransport:
    """Placeholder until ``Client.stdio`` spawns the process on entry."""

    async def receive(self) -> bytes:
        return b""

    async def send(self, data: bytes) -> None:
        raise RuntimeError("not connected")

    async def aclose(self) -> None:
        return None
