"""``Client``: an MCP client over any transport, speaking both protocol eras.

```python
async with Client(server) as client:                      # an mcpframe.server.Server, in memory
    tools = await client.list_tools()
async with Client.stdio("python", ["server.py"]) as client:  # a child process
    result = await client.call_tool("add", {"a": 1, "b": 2})
async with mcpframe.http.connect(url) as client:           # Streamable HTTP (the host layer builds it)
    ...
```
Connecting probes ``server/discover`` (2026-07-28: stateless, version and capabilities in every request's
``_meta``) and falls back to ``initialize`` + ``notifications/initialized`` on any error or a timeout.

Every request has a deadline: ``timeout`` (default ``DEFAULT_TIMEOUT``, 60 s, as the official SDK's reads)
without a response or progress raises ``RequestTimeout``; pass ``timeout=`` to one call, or to ``Client``
for all of them (``None`` or ``math.inf``: wait for ever).

A client is three objects: the typed helpers (``Methods``, which ``Client`` extends) send through a
``Connection`` (session, era, server facts: ``client/connection.py``), whose transport an *opener* provides.
An opener is any ``() -> async context manager yielding a Transport``; layers above this one (the HTTP
host) hand theirs in with ``Client(opener=...)``, so the client never imports them.
"""

from __future__ import annotations

import inspect
import os
import shlex
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import IO, Any, Protocol, Unpack

import anyio

from mcpframe.client.connection import (
    LEGACY_VERSIONS,
    MODERN_VERSION,
    Connection,
    IncompatibleServerError,
)
from mcpframe.client.inbound import Inbound
from mcpframe.client.methods import LogLevel, Methods
from mcpframe.client.options import DEFAULT_TIMEOUT, ClientOptions, ClientSettings
from mcpframe.session import ConnectionClosed, Session
from mcpframe.session.peer import only
from mcpframe.transports import Transport, memory_pair, spawn
from mcpframe.transports.process import ProcessTransport

__all__ = [
    "DEFAULT_TIMEOUT",
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "Client",
    "IncompatibleServerError",
    "Opener",
    "Servable",
]


class Servable(Protocol):
    """What ``Client(server)`` serves in memory: an ``mcpframe.server.Server`` (the client does not import it:
    server and client sit side by side, neither above the other)."""

    async def serve(self, transport: Transport, /) -> None:
        """Serve one connection until the peer goes away."""
        ...


Opener = Callable[[], AbstractAsyncContextManager[Transport]]
"""Makes the transport a client speaks over, for as long as the client is connected."""


@asynccontextmanager
async def _in_memory(server: Servable) -> AsyncIterator[Transport]:
    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        yield client_end  # the session closes it on exit: the server sees EOF and its task ends


@asynccontextmanager
async def _given(transport: Transport) -> AsyncIterator[Transport]:
    yield transport  # the session closes it


async def _how_it_ended(transport: ProcessTransport, argv: Sequence[str]) -> str | None:
    """How the (closed) transport's child ended and the tail of its stderr; ``None`` while it runs."""
    status = transport.returncode
    if status is None:
        return None
    command = shlex.join(os.fspath(arg) for arg in argv)
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "an unknown signal"
        how = f"the server process ({command}) was killed by signal {-status} ({name})"
    else:
        how = f"the server process ({command}) exited with status {status}"
    tail = await transport.stderr_tail()
    if tail is None:
        return how
    if not tail.strip():
        return f"{how}, writing nothing on stderr"
    lines = "\n".join(f"    {line}" for line in tail.splitlines())
    return f"{how}; the last lines of its stderr:\n{lines}"


class Client(Methods):
    """An MCP client; use it as an async context manager (see the module doc).

    Give exactly one of: ``server`` (an ``mcpframe.server.Server``, served in memory), ``transport=`` (any
    ``Transport``) or ``opener=`` (see ``Opener``). The keywords are the fields of ``ClientOptions``:
    ``timeout`` is how long each request waits for its response (progress restarts the clock): 60 s by
    default; a call's own ``timeout=`` wins; ``None`` waits for ever. ``discover_timeout`` bounds the
    ``server/discover`` probe (then the client falls back to ``initialize``).
    """

    def __init__(
        self,
        server: Servable | None = None,
        *,
        transport: Transport | None = None,
        opener: Opener | None = None,
        **settings: Unpack[ClientSettings],
    ) -> None:
        given = [source for source in (server, transport, opener) if source is not None]
        if len(given) != 1:
            raise TypeError("Client() needs exactly one of: a server (in memory), transport= or opener=")
        self._opener: Opener
        if opener is not None:
            self._opener = opener
        elif transport is not None:
            self._opener = lambda: _given(transport)
        elif server is not None:
            self._opener = lambda: _in_memory(server)
        self.options = ClientOptions(**settings)
        self.connection = Connection(self.options)
        super().__init__(self.connection)
        self._route_task_status()
        self._stack: AsyncExitStack | None = None

    def _route_task_status(self) -> None:
        """Show each server notification to ``self.tasks`` first (task status), then to the user's handler."""
        inbound = self.connection.inbound
        user = inbound.notifications
        tracker = self.tasks

        async def route(method: str, params: Any) -> None:
            await tracker.observe(method, params)
            if user is not None:
                outcome = user(method, params)
                if inspect.isawaitable(outcome):
                    await outcome

        inbound.notifications = route
        tracker.fulfil = inbound.fulfil  # a 2026-07-28 task's inputRequests, answered by the same handlers

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
        **settings: Unpack[ClientSettings],
    ) -> Client:
        """A client for a server run as a child process (``command args...``) over its stdio.

        The child's stderr reaches ours unless ``stderr`` is given. When the child exits (a server that
        crashes at start, say), the ``ConnectionClosed`` says how it ended and, stderr not being given,
        the last lines it wrote there.
        """

        @asynccontextmanager
        async def spawned() -> AsyncIterator[Transport]:
            transport = await spawn(
                command, args, env=env, cwd=cwd, stderr=stderr, grace=grace, tail_stderr=True
            )
            try:
                yield transport
            except ConnectionClosed as exc:
                why = await _how_it_ended(transport, [command, *args])
                if why is None:
                    raise
                raise ConnectionClosed(f"{exc}: {why}") from exc

        return cls(opener=spawned, **settings)

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            transport = await stack.enter_async_context(self._opener())
            await stack.enter_async_context(self.connection.session_for(transport))
            await self.connection.negotiate()
        except BaseException as exc:
            self.connection.forget_session()
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
        self.connection.forget_session()
        if stack is None:
            return None
        try:
            return await stack.__aexit__(*exc_info)
        except BaseExceptionGroup as group:
            if only(group, exc_info[1]):
                return False  # the block's own exception: let it propagate unwrapped
            raise

    # ------------------------------------------------------------------ what the connection knows

    @property
    def session(self) -> Session:
        """The underlying JSON-RPC session (while connected)."""
        return self.connection.session

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol revision (``None`` before connecting)."""
        return self.connection.protocol_version

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The capabilities the server declared."""
        return self.connection.server_capabilities

    @property
    def server_info(self) -> dict[str, Any] | None:
        """The server's ``serverInfo`` (name, version, ...), when it gave one."""
        return self.connection.server_info

    @property
    def instructions(self) -> str | None:
        """The server's instructions, when it gave some."""
        return self.connection.instructions

    @property
    def inbound(self) -> Inbound:
        """What answers the server's requests (sampling, elicitation, roots) and routes its notifications."""
        return self.connection.inbound

    @property
    def timeout(self) -> float | None:
        """The default wait of every request (``ClientOptions.timeout``)."""
        return self.options.timeout

    @property
    def log_level(self) -> LogLevel | None:
        """The level asked for with ``set_logging_level`` (``None``: the server's default)."""
        return self.connection.log_level

    async def set_logging_level(self, level: LogLevel) -> None:
        """Ask for log messages at ``level`` and above (per request ``_meta`` in 2026-07-28)."""
        await self.connection.set_logging_level(level)

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
    ) -> AbstractAsyncContextManager[dict[str, Any]]:
        """2026-07-28 ``subscriptions/listen``: while the block runs, the chosen notifications (list changes,
        ``notifications/resources/updated`` for ``resource_uris``) reach ``notification_handler``; with
        ``task_ids`` (the tasks extension), ``notifications/tasks`` for those tasks, which also update their
        ``TaskHandle``s and reach ``client.tasks.on_status``.

        Yields what the server accepted (e.g. ``{"toolsListChanged": True}``). Legacy servers push list
        changes unasked and use ``subscribe()`` for resources.
        """
        return self.connection.listen(
            tools=tools, prompts=prompts, resources=resources, resource_uris=resource_uris, task_ids=task_ids
        )
