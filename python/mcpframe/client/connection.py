"""``Connection``: the client's side of one connection, and the `Requester` its typed methods send through.

It owns the JSON-RPC ``Session`` once open, negotiates the era (``server/discover`` for 2026-07-28, else
``initialize`` + ``notifications/initialized``), keeps what the server said about itself, and sends requests
the way the era wants them: stamped with the modern ``_meta`` in 2026-07-28, bounded by the client's
timeout, retried through ``input_required`` rounds. It knows nothing about how the transport was opened.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio

from mcpframe import jsonrpc, protocol
from mcpframe.client.inbound import Inbound
from mcpframe.client.methods import Era, LogLevel
from mcpframe.client.options import ClientOptions
from mcpframe.session import JSONRPCError, ProgressCallback, RequestTimeout, Session
from mcpframe.transports import Transport

__all__ = ["LEGACY_VERSIONS", "MODERN_VERSION", "Connection", "IncompatibleServerError"]

MODERN_VERSION: Final = protocol.LATEST_MODERN
"""The revision a client speaks without a handshake."""
LEGACY_VERSIONS: Final = protocol.LEGACY_VERSIONS
"""The handshake revisions a client accepts, newest first (it offers the first)."""
_EXTENSIONS: dict[str, Any] = {"extensions": {protocol.TASKS_EXTENSION: {}}}
"""2026-07-28 extensions the client speaks, in every request's capabilities."""
_MAX_INPUT_ROUNDS = 16
_TIMEOUT_HINT: Final = (
    "; to wait longer pass timeout=<seconds> to this call (math.inf: no limit), or"
    " Client(timeout=<seconds>) for every call (None: no limit)"
)


class IncompatibleServerError(ConnectionError):
    """The server speaks no protocol revision this client speaks."""


class Connection:
    """One client connection: its session, era, server facts and era-shaped requests."""

    def __init__(self, options: ClientOptions) -> None:
        self.options = options
        self.client_info: dict[str, Any] = {"name": options.name, "version": options.version}
        self.inbound = Inbound(
            sampling=options.sampling_handler,
            elicitation=options.elicitation_handler,
            roots=options.roots,
            logging=options.logging_handler,
            notifications=options.notification_handler,
        )
        self._session: Session | None = None
        self.protocol_version: str | None = None
        self.server_capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] | None = None
        self.instructions: str | None = None
        self.log_level: LogLevel | None = None
        self._listen_lock = anyio.Lock()

    # ------------------------------------------------------------------ lifecycle

    def session_for(self, transport: Transport) -> Session:
        """The Session to enter over ``transport``; it becomes this connection's session."""
        self._session = Session(
            transport,
            request_handler=self.inbound.handle_request,
            notification_handler=self.inbound.handle_notification,
            options=self.options.session_options,
        )
        return self._session

    def forget_session(self) -> None:
        """The session ended (or never started): requests fail with a clear error from now on."""
        self._session = None

    @property
    def session(self) -> Session:
        """The underlying JSON-RPC session (while connected)."""
        if self._session is None:
            raise RuntimeError("the client is not connected: use `async with Client(...) as client`")
        return self._session

    @property
    def era(self) -> Era | None:
        """``"modern"`` (2026-07-28), ``"legacy"`` (initialize handshake), ``None`` before connecting."""
        if self.protocol_version is None:
            return None
        return "modern" if self.protocol_version == MODERN_VERSION else "legacy"

    async def negotiate(self) -> None:
        """Pick the era with the server (see the module doc); raises when no revision is shared."""
        mode = self.options.mode
        if mode != "legacy":
            try:
                discovered = await self.session.request(
                    protocol.SERVER_DISCOVER,
                    {"_meta": self._modern_meta()},
                    timeout=self.options.discover_timeout,
                )
            except JSONRPCError:  # includes RequestTimeout
                if mode == "modern":
                    raise
            else:
                if self._adopt(discovered):
                    return
                if mode == "modern":
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
        result = await self._timed(protocol.INITIALIZE, params, timeout=None)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in LEGACY_VERSIONS:
            raise IncompatibleServerError(f"the server chose protocol version {version!r}, unsupported here")
        self.protocol_version = version
        self._take_server_facts(result)
        await self.session.notify(protocol.NOTIFICATIONS_INITIALIZED)

    def _take_server_facts(self, result: dict[str, Any]) -> None:
        capabilities = result.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        meta = result.get("_meta")
        in_meta = meta.get(protocol.SERVER_INFO_KEY) if isinstance(meta, dict) else None
        info = result.get("serverInfo") or in_meta
        self.server_info = info if isinstance(info, dict) else None
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None

    # ------------------------------------------------------------------ requests (the Requester)

    def _modern_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            protocol.PROTOCOL_VERSION_KEY: MODERN_VERSION,
            # The tasks extension: Methods.call_tool resolves a task answer (client/tasks.py)
            protocol.CLIENT_CAPABILITIES_KEY: {**self.inbound.capabilities(), **_EXTENSIONS},
            protocol.CLIENT_INFO_KEY: self.client_info,
        }
        if self.log_level is not None:
            meta[protocol.LOG_LEVEL_KEY] = self.log_level
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
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """Send a request (stamped with the modern ``_meta`` in that era) and return its result."""
        return await self._timed(
            method, self._stamp(params), timeout=timeout, on_progress=on_progress, max_timeout=max_timeout
        )

    async def _timed(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        """``session.request`` with the client's timeout; its ``RequestTimeout`` says how to wait longer."""
        # The client's timeout governs its requests (the Session's own default never applies under a
        # Client): a call's timeout, else the client's; None there means no limit.
        limit = self.options.timeout if timeout is None else timeout
        if limit is None:
            limit = math.inf
        try:
            return await self.session.request(
                method, params, timeout=limit, on_progress=on_progress, max_timeout=max_timeout
            )
        except RequestTimeout as exc:
            raise RequestTimeout(exc.message + _TIMEOUT_HINT, exc.data) from None

    async def interactive(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> dict[str, Any]:
        """A request whose server may answer ``input_required`` (2026-07-28): fulfil and retry."""
        for _ in range(_MAX_INPUT_ROUNDS):
            result = await self.request(
                method, params, timeout=timeout, on_progress=on_progress, max_timeout=max_timeout
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

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (never stamped: no notification carries the modern ``_meta``)."""
        await self.session.notify(method, params)

    # ------------------------------------------------------------------ era-specific state

    async def set_logging_level(self, level: LogLevel) -> None:
        """Ask for log messages at ``level`` and above (per request ``_meta`` in 2026-07-28)."""
        self.log_level = level
        if self.era != "modern":
            await self.request(protocol.LOGGING_SET_LEVEL, {"level": level})

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
    ) -> AsyncIterator[dict[str, Any]]:
        """2026-07-28 ``subscriptions/listen`` for as long as the block runs (see ``Client.listen``)."""
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
        if task_ids:
            wanted["taskIds"] = list(task_ids)
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
        await self.request(protocol.SUBSCRIPTIONS_LISTEN, params, timeout=math.inf)
