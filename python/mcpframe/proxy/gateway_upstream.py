"""One upstream server of the gateway: its `Client`, whether it is up, and its restarts.

Each upstream runs in a task of its own for the gateway's lifetime: connect (spawn the child, or open the
HTTP transport) and handshake, serve until the connection ends, then wait and start again. The wait doubles
from `restart_delay` up to `max_restart_delay` and starts over once the server had stayed up that long, so
a server that crashes at once is not respawned in a tight loop. A request for a server that is down cuts
the wait short (`revive`): the server is started at once and the request waits for that try, but only one
request per wait may do so; the others fail at once with the reason and the time of the next try. So a
crashing server is started at most twice per wait, and the client learns it is back from `list_changed`.

Upstreams always speak the handshake era (`initialize`): the gateway forwards the server's requests
(sampling, elicitation, roots) to its own client as requests, which is how that era carries them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Literal, Protocol

import anyio

from mcpframe.client import Client
from mcpframe.client.inbound import ElicitationHandler, Roots, SamplingHandler
from mcpframe.proxy.gateway_config import UpstreamSpec
from mcpframe.session import ConnectionClosed, JSONRPCError, RequestTimeout
from mcpframe.transports import Transport, spawn

__all__ = ["Hooks", "Upstream", "describe_failure"]

State = Literal["starting", "up", "down"]


class Hooks(Protocol):
    """What an upstream tells the gateway, and what it asks of the gateway's client."""

    sampling: SamplingHandler | None
    elicitation: ElicitationHandler | None
    roots: Roots | None

    async def upstream_notification(self, upstream: Upstream, method: str, params: Any) -> None:
        """A notification from `upstream` (log message, list_changed, resources/updated...)."""
        ...

    async def upstream_changed(self, upstream: Upstream) -> None:
        """`upstream` came up or went down (`upstream.state`)."""
        ...

    def report(self, line: str) -> None:
        """Tell the user (stderr)."""
        ...


class _Watched:
    """A transport that says when its Session closed it: the gateway's signal that the upstream ended."""

    def __init__(self, inner: Transport, closed: anyio.Event) -> None:
        self.inner = inner
        self._closed = closed
        # the Session's fast paths, when the inner transport has them (None counts as absent)
        self.pump = getattr(inner, "pump", None)
        self.send_nowait = getattr(inner, "send_nowait", None)
        self.pause_reading = getattr(inner, "pause_reading", None)
        self.resume_reading = getattr(inner, "resume_reading", None)

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def send(self, data: bytes) -> None:
        await self.inner.send(data)

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self._closed.set()


def describe_failure(exc: BaseException, spec: UpstreamSpec) -> str:
    """One line saying why an upstream could not start or ended."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and spec.command is not None:
        return f"command not found: {spec.command}"
    if isinstance(exc, RequestTimeout):
        return "no answer to initialize in time"
    if isinstance(exc, ConnectionClosed):
        return "it closed the connection before the handshake ended"
    if isinstance(exc, JSONRPCError):
        return f"initialize failed: {exc}"
    return f"{type(exc).__name__}: {exc}"


class Upstream:
    """One configured server: connected (`client`, `capabilities`) or down (`reason`, `next_start`)."""

    def __init__(
        self,
        spec: UpstreamSpec,
        hooks: Hooks,
        *,
        start_timeout: float,
        restart_delay: float,
        max_restart_delay: float,
        env: Mapping[str, str],
        headers: Mapping[str, str],
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self._hooks = hooks
        self._start_timeout = start_timeout
        self._restart_delay = restart_delay
        self._max_restart_delay = max_restart_delay
        self._env = {**env, **spec.env}
        self._headers = {**headers, **spec.headers}
        self.state: State = "starting"
        self.client: Client | None = None
        self.capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self.reason: str | None = None
        self.next_start: float | None = None
        self.first_try = anyio.Event()
        """Set once the first start has succeeded or failed."""
        self._inner: Transport | None = None
        self._wake = anyio.Event()
        self._outcome = anyio.Event()  # set when the current start attempt has an outcome, then replaced
        self._asked = False  # a request has cut the current wait short

    def has(self, capability: str) -> bool:
        """Whether the server is up and declared `capability` (`tools`, `prompts`, ...)."""
        return self.state == "up" and capability in self.capabilities

    def unavailable(self) -> str:
        """Why a request cannot go to this server now."""
        why = f"server {self.name!r} is not running"
        if self.reason:
            why += f" ({self.reason})"
        if self.next_start is not None:
            why += f"; next start in {max(0.0, self.next_start - anyio.current_time()):.1f} s"
        return why

    async def run(self) -> None:
        """Connect, serve, and after each end start again with backoff, until cancelled."""
        delay = self._restart_delay
        while True:
            started = anyio.current_time()
            await self._run_once()
            if anyio.current_time() - started >= self._max_restart_delay:
                delay = self._restart_delay  # it had been up a good while: a fresh crash, not a loop
            self.next_start = anyio.current_time() + delay
            with anyio.move_on_after(delay) as waited:
                await self._wake.wait()
            if waited.cancelled_caught:
                self._asked = False  # a try of the clock's own: a request may cut the next wait short
            self._wake = anyio.Event()
            self.next_start = None
            delay = min(delay * 2, self._max_restart_delay)

    async def revive(self) -> bool:
        """A request wants this server: start it now if it is waiting to restart and no request has asked
        during this wait, then wait for the try. Whether it is up."""
        if self.state == "down" and self.next_start is not None and not self._asked:
            self._asked = True
            outcome = self._outcome
            self._wake.set()
            await outcome.wait()
        elif self.state == "starting":
            await self._outcome.wait()
        return self.state == "up"

    def _tried(self) -> None:
        """The current start attempt has an outcome: wake whoever waits for it."""
        self._outcome.set()
        self._outcome = anyio.Event()

    async def _run_once(self) -> None:
        closed = anyio.Event()
        client = self._client(closed)
        was_up = False
        self.state = "starting"
        try:
            async with client:
                self.client = client
                self.capabilities = dict(client.server_capabilities)
                self.instructions = client.instructions
                self.state, self.reason, was_up = "up", None, True
                self._asked = False
                self.first_try.set()
                self._tried()
                await self._hooks.upstream_changed(self)
                await closed.wait()
        except Exception as exc:
            self.reason = describe_failure(exc, self.spec)
        finally:
            self.client = None
            self.state = "down"
        if was_up:
            self.reason = self._exit_reason()
            self._hooks.report(f"server {self.name!r} ended: {self.reason}")
            await self._hooks.upstream_changed(self)  # not shielded: a gateway that is ending tells no one
        else:
            self._hooks.report(f"server {self.name!r} did not start: {self.reason} ({self.spec.describe()})")
            self._tried()
        self.first_try.set()

    def _exit_reason(self) -> str:
        code = getattr(self._inner, "returncode", None)
        if isinstance(code, int):
            return f"it exited with status {code}"
        return "its connection ended"

    def _client(self, closed: anyio.Event) -> Client:
        hooks = self._hooks

        async def notified(method: str, params: Any) -> None:
            await hooks.upstream_notification(self, method, params)

        return Client(
            opener=self._opener(closed),
            name="mcpframe-gateway",
            mode="legacy",
            timeout=self._start_timeout,  # bounds the handshake; forwarded calls pass their own
            sampling_handler=hooks.sampling,
            elicitation_handler=hooks.elicitation,
            roots=hooks.roots,
            notification_handler=notified,
        )

    def _opener(self, closed: anyio.Event) -> Callable[[], Any]:
        spec = self.spec

        @asynccontextmanager
        async def stdio() -> AsyncIterator[Transport]:
            assert spec.command is not None
            self._inner = await spawn(spec.command, spec.args, env=self._env, cwd=spec.cwd, grace=2.0)
            yield _Watched(self._inner, closed)

        @asynccontextmanager
        async def http() -> AsyncIterator[Transport]:
            from mcpframe.http.client import StreamableHTTPTransport  # noqa: PLC0415 - needs httpx
            from mcpframe.http.client_sse import SSETransport  # noqa: PLC0415
            from mcpframe.http.client_sse_auto import AutoTransport  # noqa: PLC0415

            make: type[AutoTransport | StreamableHTTPTransport | SSETransport] = AutoTransport
            if spec.kind == "sse":
                make = SSETransport
            elif spec.kind == "streamable-http":
                make = StreamableHTTPTransport
            assert spec.url is not None
            async with make(spec.url, headers=self._headers) as transport:
                self._inner = transport
                yield _Watched(transport, closed)

        return stdio if spec.kind == "stdio" else http
