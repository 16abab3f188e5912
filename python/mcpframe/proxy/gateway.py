"""`mcpframe proxy --config servers.json`: one MCP endpoint in front of several servers (see docs/proxy.md).

```python
gateway = Gateway(load_config(Path("servers.json")))
status = await gateway.serve(transport)      # one client over any Transport (stdio: run_gateway)
```

The client talks to a bare JSON-RPC `Session` whose request handler is the gateway; each upstream is a
`Client` (`gateway_upstream`). The gateway is not a `Server` with forwarding tools: a `Server` validates
arguments against schemas and re-shapes results, and a gateway must pass both through untouched (only names,
cursors and progress tokens change). So it speaks MCP at the method level: it answers `initialize`, `ping`
and the list methods itself and routes the rest by name (`<server>__<tool>`), URI or completion ref
(`gateway_routes`), with everything else in the params forwarded as it came.

What crosses, and how: progress (the client's token stays here, each upstream request gets its own, and
updates are relayed), cancellation (a cancelled client request cancels its upstream request, which sends
`notifications/cancelled` upstream), the servers' requests (sampling, elicitation, roots/list: asked of the
client, declared upstream only when the client declared them), logging (`logger` prefixed with the server's
name), `list_changed` and `resources/updated`, and notifications nobody here knows (passed on as they came).
Flow control is the Sessions': the client's `max_in_flight` bounds the forwarded requests, and a slow client
slows the writers of the progress and notifications relayed to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import math
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
import anyio.abc

from mcpframe import __version__, jsonrpc, protocol
from mcpframe.proxy.gateway_config import ConfigError, UpstreamSpec, load_config
from mcpframe.proxy.gateway_lists import Lists
from mcpframe.proxy.gateway_routes import UriRoutes, split_name
from mcpframe.proxy.gateway_upstream import Upstream
from mcpframe.server.lifecycle import run_stoppable
from mcpframe.session import ConnectionClosed, JSONRPCError, Message, Request, Session
from mcpframe.transports import Transport, stdio_server

if TYPE_CHECKING:
    from mcpframe.client.inbound import ElicitationHandler, Roots, SamplingHandler
    from mcpframe.proxy.options import OnUpstreamExit, ProxyOptions

__all__ = ["Gateway", "gateway_command", "run_gateway"]

_LIST_CHANGED: Final = {
    "tools": protocol.NOTIFICATIONS_TOOLS_LIST_CHANGED,
    "prompts": protocol.NOTIFICATIONS_PROMPTS_LIST_CHANGED,
    "resources": protocol.NOTIFICATIONS_RESOURCES_LIST_CHANGED,
}
_SESSION_LEVEL: Final = (protocol.NOTIFICATIONS_PROGRESS, protocol.NOTIFICATIONS_CANCELLED)

_NO_START: Final = (protocol.INITIALIZE, protocol.PING, protocol.SERVER_DISCOVER)
"""Requests that do not start the servers: the servers start at initialize, with the client's capabilities
(a `server/discover` probe comes first from clients that try 2026-07-28)."""

Handler = Callable[[Request, dict[str, Any]], Awaitable[Any]]


def _stderr(line: str) -> None:
    print(f"mcpframe proxy: {line}", file=sys.stderr, flush=True)


def _without_token(params: dict[str, Any]) -> dict[str, Any]:
    """`params` without the client's progress token: the upstream request gets a token of its own."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or protocol.PROGRESS_TOKEN not in meta:
        return params
    meta = {key: value for key, value in meta.items() if key != protocol.PROGRESS_TOKEN}
    return {**params, "_meta": meta} if meta else {k: v for k, v in params.items() if k != "_meta"}


class Gateway:
    """One client in front of the configured servers (see the module doc).

    `start_timeout` bounds each server's start and handshake; a server that ends is started again after
    `restart_delay` seconds, doubling up to `max_restart_delay`; with `on_upstream_exit="exit"` the gateway
    ends instead (status 1). `env` and `headers` are added to every stdio / remote server's own.
    """

    def __init__(
        self,
        servers: Sequence[UpstreamSpec],
        *,
        start_timeout: float = 30.0,
        restart_delay: float = 1.0,
        max_restart_delay: float = 30.0,
        on_upstream_exit: OnUpstreamExit = "restart",
        env: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        report: Callable[[str], None] = _stderr,
    ) -> None:
        if not servers:
            raise ValueError("a gateway needs at least one server")
        self.report = report
        self.on_upstream_exit = on_upstream_exit
        self.upstreams: dict[str, Upstream] = {}
        for spec in servers:
            if spec.name in self.upstreams:
                raise ValueError(f"two servers are named {spec.name!r}")
            self.upstreams[spec.name] = Upstream(
                spec,
                self,
                start_timeout=start_timeout,
                restart_delay=restart_delay,
                max_restart_delay=max_restart_delay,
                env=env or {},
                headers=headers or {},
            )
        self.routes = UriRoutes()
        self.lists = Lists(self.upstreams, self.routes, self.forward, report)
        # asked of the client for the servers; set at initialize from the client's capabilities
        self.sampling: SamplingHandler | None = None
        self.elicitation: ElicitationHandler | None = None
        self.roots: Roots | None = None
        self.exit_status = 0
        self._session: Session | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._started = False
        self._ready = False  # every server has had its first try
        self._announced = False  # initialize answered: changes are news to the client from now on
        self._log_level: str | None = None
        self._subscribed: dict[str, set[str]] = {}  # server -> the URIs the client subscribed to there
        self._methods = self._method_table()

    def _method_table(self) -> dict[str, Handler]:
        """What answers each MCP method the gateway knows (the rest: `_unknown`)."""
        return {
            protocol.INITIALIZE: self._initialize,
            protocol.PING: self._ping,
            protocol.SERVER_DISCOVER: self._discover,
            protocol.TOOLS_LIST: self.lists.tools,
            protocol.PROMPTS_LIST: self.lists.prompts,
            protocol.RESOURCES_LIST: self.lists.resources,
            protocol.RESOURCES_TEMPLATES_LIST: self.lists.templates,
            protocol.TOOLS_CALL: self._by_name,
            protocol.PROMPTS_GET: self._by_name,
            protocol.RESOURCES_READ: self._by_uri,
            protocol.RESOURCES_SUBSCRIBE: self._by_uri,
            protocol.RESOURCES_UNSUBSCRIBE: self._by_uri,
            protocol.COMPLETION_COMPLETE: self._complete,
            protocol.LOGGING_SET_LEVEL: self._set_level,
        }

    # ------------------------------------------------------------------ the client's side

    async def serve(self, transport: Transport) -> int:
        """Serve one client over `transport` until it goes away; the exit status (1: an upstream ended
        with `on_upstream_exit="exit"`)."""
        session = Session(
            transport, request_handler=self._handle, notification_handler=self._notified, batches=False
        )  # batches follow protocol.batches_allowed, as on `mcpframe serve`: set at initialize
        self._session = session
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await session.run()
            tg.cancel_scope.cancel()  # the client is gone: the servers are stopped
        return self.exit_status

    async def _handle(self, request: Request) -> Any:
        params = request.params if isinstance(request.params, dict) else {}
        handler = self._methods.get(request.method)
        if not self._ready and request.method not in _NO_START:
            await self._start()  # a client that skipped initialize still reaches the servers
        if handler is None:
            return await self._unknown(request, params)
        return await handler(request, params)

    async def _notified(self, message: Message) -> None:
        method = message.method or ""
        if method in _SESSION_LEVEL or method == protocol.NOTIFICATIONS_INITIALIZED:
            return
        params = message.params if isinstance(message.params, dict) else None
        for upstream in self._live():  # roots/list_changed and anything unknown: every server hears it
            if upstream.client is not None:
                with contextlib.suppress(ConnectionClosed):
                    await upstream.client.connection.notify(method, params)

    async def _ask_client(self, method: str, params: Any) -> Any:
        """A server's request (sampling, elicitation, roots/list), asked of the client."""
        assert self._session is not None
        try:
            return await self._session.request(method, params, timeout=math.inf)
        except ConnectionClosed:
            raise JSONRPCError(jsonrpc.CONNECTION_CLOSED, "the gateway's client went away") from None

    async def _tell_client(self, method: str, params: Any = None) -> None:
        if self._session is None:
            return
        with contextlib.suppress(ConnectionClosed):
            await self._session.notify(method, params)

    # ------------------------------------------------------------------ handshake

    async def _start(self) -> None:
        """Start every server once (on the first request) and wait for each one's first try."""
        if not self._started:
            self._started = True
            assert self._tg is not None
            for upstream in self.upstreams.values():
                self._tg.start_soon(upstream.run, name=f"mcpframe-gateway-{upstream.name}")
        for upstream in self.upstreams.values():
            await upstream.first_try.wait()
        # from now on no request waits here: a set anyio Event's wait() still yields to the loop once
        self._ready = True

    async def _initialize(self, request: Request, params: dict[str, Any]) -> Any:
        capabilities = params.get("capabilities")
        wanted = capabilities if isinstance(capabilities, dict) else {}
        if "sampling" in wanted:
            self.sampling = lambda asked: self._ask_client(protocol.SAMPLING_CREATE_MESSAGE, asked)
        if "elicitation" in wanted:
            self.elicitation = lambda asked: self._ask_client(protocol.ELICITATION_CREATE, asked)
        if "roots" in wanted:
            self.roots = self._client_roots
        await self._start()
        version = params.get("protocolVersion")
        if version not in protocol.LEGACY_VERSIONS:
            version = protocol.LATEST_LEGACY
        if self._session is not None:
            self._session.batches = protocol.batches_allowed(version)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self._capabilities(),
            "serverInfo": {"name": "mcpframe-gateway", "version": __version__},
        }
        notes = [f"{u.name}: {u.instructions}" for u in self.upstreams.values() if u.instructions]
        if notes:
            result["instructions"] = "\n\n".join(notes)
        self._announced = True
        return result

    def _capabilities(self) -> dict[str, Any]:
        """Tools, prompts and resources always (a server may come later; list_changed says so), logging and
        completions when a server has them, subscribe when one supports it."""
        ups = list(self.upstreams.values())
        subscribe = any(
            isinstance(u.capabilities.get("resources"), dict) and u.capabilities["resources"].get("subscribe")
            for u in ups
        )
        caps: dict[str, Any] = {
            "tools": {"listChanged": True},
            "prompts": {"listChanged": True},
            "resources": {"listChanged": True, "subscribe": bool(subscribe)},
        }
        for optional in ("logging", "completions"):
            if any(optional in u.capabilities for u in ups):
                caps[optional] = {}
        return caps

    async def _client_roots(self) -> list[dict[str, Any]]:
        result = await self._ask_client(protocol.ROOTS_LIST, None)
        roots = result.get("roots") if isinstance(result, dict) else None
        return roots if isinstance(roots, list) else []

    async def _ping(self, request: Request, params: dict[str, Any]) -> Any:
        return {}

    async def _discover(self, request: Request, params: dict[str, Any]) -> Any:
        raise JSONRPCError(
            jsonrpc.METHOD_NOT_FOUND,
            "Method not found: server/discover (the gateway speaks the initialize handshake)",
        )

    # ------------------------------------------------------------------ routing

    def _live(self) -> list[Upstream]:
        return [u for u in self.upstreams.values() if u.state == "up"]

    def _named(self, server: str, what: str, full: Any) -> Upstream:
        upstream = self.upstreams.get(server)
        if upstream is None:
            names = ", ".join(self.upstreams)
            raise JSONRPCError(
                jsonrpc.INVALID_PARAMS,
                f"unknown {what} {full!r}: no server named {server!r} (servers: {names})",
            )
        return upstream

    async def forward(self, upstream: Upstream, request: Request, method: str, params: dict[str, Any]) -> Any:
        """`method` with `params` to `upstream` on behalf of the client's `request`; its result."""
        client = upstream.client
        if client is None and await upstream.revive():  # down: the first request starts it again
            client = upstream.client
        if client is None:
            raise JSONRPCError(jsonrpc.CONNECTION_CLOSED, upstream.unavailable())
        on_progress = None
        if request.progress_token is not None:

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                await request.report_progress(progress, total, message)

        try:
            return await client.connection.request(
                method, _without_token(params), timeout=math.inf, on_progress=on_progress
            )
        except ConnectionClosed:
            raise JSONRPCError(
                jsonrpc.CONNECTION_CLOSED, f"server {upstream.name!r} went away while answering {method}"
            ) from None

    async def _by_name(self, request: Request, params: dict[str, Any]) -> Any:
        what = "tool" if request.method == protocol.TOOLS_CALL else "prompt"
        server, name = split_name(params.get("name"), what)
        upstream = self._named(server, what, params.get("name"))
        return await self.forward(upstream, request, request.method, {**params, "name": name})

    async def _by_uri(self, request: Request, params: dict[str, Any]) -> Any:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise JSONRPCError(jsonrpc.INVALID_PARAMS, f'{request.method}: "uri" must be a string')
        upstream = await self._owner(request, uri)
        result = await self.forward(upstream, request, request.method, params)
        subscribed = self._subscribed.setdefault(upstream.name, set())
        if request.method == protocol.RESOURCES_SUBSCRIBE:
            subscribed.add(uri)  # renewed if the server restarts
        elif request.method == protocol.RESOURCES_UNSUBSCRIBE:
            subscribed.discard(uri)
        return result

    async def _owner(self, request: Request, uri: str) -> Upstream:
        """The server of `uri`: the one that listed it or has a matching template; the only one with
        resources; else, after listing every server's resources once more, -32602."""
        server = self.routes.owner(uri)
        if server is None:
            holders = [u for u in self.upstreams.values() if u.has("resources")]
            if len(holders) == 1:
                return holders[0]
            await self.lists.learn(request)
            server = self.routes.owner(uri)
        if server is None:
            raise JSONRPCError(
                jsonrpc.INVALID_PARAMS,
                f"unknown resource {uri!r}: no server listed it or has a template that matches it",
            )
        return self.upstreams[server]

    async def _complete(self, request: Request, params: dict[str, Any]) -> Any:
        ref = params.get("ref")
        kind = ref.get("type") if isinstance(ref, dict) else None
        if isinstance(ref, dict) and kind == "ref/prompt":
            server, name = split_name(ref.get("name"), "prompt")
            upstream = self._named(server, "prompt", ref.get("name"))
            return await self.forward(
                upstream, request, request.method, {**params, "ref": {**ref, "name": name}}
            )
        if isinstance(ref, dict) and kind == "ref/resource" and isinstance(ref.get("uri"), str):
            upstream = await self._owner(request, ref["uri"])
            return await self.forward(upstream, request, request.method, params)
        raise JSONRPCError(jsonrpc.INVALID_PARAMS, f"completion/complete: unknown ref {ref!r}")

    async def _set_level(self, request: Request, params: dict[str, Any]) -> Any:
        level = params.get("level")
        if level not in protocol.LOGGING_LEVELS:
            raise JSONRPCError(jsonrpc.INVALID_PARAMS, f"logging/setLevel: unknown level {level!r}")
        self._log_level = level
        for upstream in self._live():
            if upstream.has("logging"):
                await self.forward(upstream, request, request.method, params)
        return {}

    async def _unknown(self, request: Request, params: dict[str, Any]) -> Any:
        """A method the gateway does not know goes to the server when only one is configured; with several,
        nothing says which one it is for."""
        if len(self.upstreams) == 1:
            (upstream,) = self.upstreams.values()
            return await self.forward(upstream, request, request.method, params)
        raise JSONRPCError(
            jsonrpc.METHOD_NOT_FOUND,
            f"Method not found: {request.method} (the gateway routes only the MCP methods it knows "
            "when several servers are configured)",
        )

    # ------------------------------------------------------------------ what the servers say

    async def upstream_notification(self, upstream: Upstream, method: str, params: Any) -> None:
        """Relay a server's notification: log messages with the server's name in `logger`."""
        if method in _SESSION_LEVEL:
            return  # progress and cancellation of our own exchanges with the server: the Sessions' business
        if method == protocol.NOTIFICATIONS_MESSAGE and isinstance(params, dict):
            logger = params.get("logger")
            params = {**params, "logger": f"{upstream.name}.{logger}" if logger else upstream.name}
        elif method == protocol.NOTIFICATIONS_RESOURCES_LIST_CHANGED:
            self.routes.forget(upstream.name)
        await self._tell_client(method, params)

    async def upstream_changed(self, upstream: Upstream) -> None:
        """A server came up or went down: its lists changed (the client hears it), its URIs route nowhere."""
        if upstream.state != "up":
            self.routes.forget(upstream.name)
            if self.on_upstream_exit == "exit" and self._session is not None:
                self.report(f"ending, as --on-upstream-exit exit asks: server {upstream.name!r} ended")
                self.exit_status = 1
                await self._session.aclose()
                return
        elif self._log_level is not None or self._subscribed.get(upstream.name):
            self._tg_soon(self._restore, upstream)
        if not self._announced:
            return
        for kind, method in _LIST_CHANGED.items():
            if kind in upstream.capabilities:
                await self._tell_client(method)

    def _tg_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        if self._tg is not None:
            self._tg.start_soon(func, *args)

    async def _restore(self, upstream: Upstream) -> None:
        """A restarted server gets the client's log level and subscriptions again (failures are reported)."""
        client = upstream.client
        renew: list[tuple[str, dict[str, Any]]] = []
        if self._log_level is not None and upstream.has("logging"):
            renew.append((protocol.LOGGING_SET_LEVEL, {"level": self._log_level}))
        renew += [
            (protocol.RESOURCES_SUBSCRIBE, {"uri": uri}) for uri in self._subscribed.get(upstream.name, ())
        ]
        for method, params in renew:
            if client is None:
                return
            try:
                await client.connection.request(method, params)
            except (JSONRPCError, ConnectionClosed) as exc:
                self.report(f"server {upstream.name!r}: renewing {method} {params} failed: {exc}")


def gateway_command(options: ProxyOptions) -> tuple[str, ...]:
    """The `mcpframe proxy --config` command line of a gateway child serving over stdio."""
    assert options.config is not None
    command = [sys.executable, "-m", "mcpframe", "proxy", "--config", str(Path(options.config).resolve())]
    command += ["--on-upstream-exit", options.on_upstream_exit]
    for name, value in options.env.items():
        command += ["--env", f"{name}={value}"]
    for name, value in options.headers.items():
        command += ["--header", f"{name}: {value}"]
    return tuple(command)


def _listen(options: ProxyOptions) -> int:
    """`--config` with `--listen`: the listen bridge in front of a gateway child per HTTP session.

    Each client session gets a gateway of its own (and so upstreams of its own): a server's sampling,
    elicitation and roots requests then have exactly one client to go to, and one session's failures stay
    its own. The price is processes per session, bounded by `--pool-size` and reaped after
    `--idle-timeout`, as the listen mode does for any stdio server.
    """
    try:  # the listen mode loads only when it runs (and is another module's business)
        listen = importlib.import_module("mcpframe.proxy.listen")
    except ModuleNotFoundError as exc:
        if exc.name != "mcpframe.proxy.listen":
            raise
        _stderr("this build has no listen mode (mcpframe.proxy.listen)")
        return 2
    run_listen = cast("Callable[[ProxyOptions], int]", listen.run_listen)
    bridged = dataclasses.replace(options, config=None, command=gateway_command(options), env={}, headers={})
    return int(run_listen(bridged))


def run_gateway(options: ProxyOptions) -> int:
    """`mcpframe proxy --config FILE`: serve this process's stdio (or `--listen URL`: HTTP clients, see
    `_listen`); the exit status (2: a bad config)."""
    assert options.config is not None
    try:
        servers = load_config(options.config)
    except ConfigError as exc:
        _stderr(str(exc))
        return 2
    if options.listen is not None:
        return _listen(options)
    gateway = Gateway(
        servers, on_upstream_exit=options.on_upstream_exit, env=options.env, headers=options.headers
    )

    status = 0

    async def over_stdio() -> None:
        nonlocal status
        async with stdio_server() as transport:
            status = await gateway.serve(transport)

    try:  # SIGTERM/SIGINT cancel the gateway: its servers are stopped (their process groups ended)
        anyio.run(run_stoppable, over_stdio, backend="asyncio")
    except KeyboardInterrupt:
        return 130
    return status
