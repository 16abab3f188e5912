"""One client connection: its lifecycle state, the per-message era decision, and dispatch.

A `ServerConnection` is what a `Session` calls for every incoming request and notification. It holds what
a legacy handshake negotiated (version, client capabilities, log level, subscriptions) and serves modern
(2026-07-28) requests statelessly from their `_meta`, on the same connection at the same time.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpframe import jsonrpc, protocol
from mcpframe.session import JSONRPCError, Message, Request, Session

from .context import CallInfo, InputRequired
from .eras import LOG_LEVELS, MISSING_REQUIRED_CLIENT_CAPABILITY, modern_version
from .handlers import HANDLERS, Handler, invalid

if TYPE_CHECKING:
    from .app import Server
    from .lifecycle import Stop

__all__ = ["ServerConnection"]

_CAPABILITY = {
    protocol.TOOLS_LIST: "tools",
    protocol.TOOLS_CALL: "tools",
    protocol.RESOURCES_LIST: "resources",
    protocol.RESOURCES_TEMPLATES_LIST: "resources",
    protocol.RESOURCES_READ: "resources",
    protocol.RESOURCES_SUBSCRIBE: "resources",
    protocol.RESOURCES_UNSUBSCRIBE: "resources",
    protocol.PROMPTS_LIST: "prompts",
    protocol.PROMPTS_GET: "prompts",
    protocol.COMPLETION_COMPLETE: "completions",
    protocol.LOGGING_SET_LEVEL: "logging",
}
# Legacy methods answered without a handler (or before initialize).
_UNVERSIONED = frozenset({protocol.INITIALIZE, protocol.PING})
# Gone in 2026-07-28: the level travels per request, subscriptions/listen replaces subscribe.
_LEGACY_ONLY = frozenset(
    {protocol.LOGGING_SET_LEVEL, protocol.RESOURCES_SUBSCRIBE, protocol.RESOURCES_UNSUBSCRIBE}
)
# Methods that may answer `input_required` (multi round-trip), and the param naming their target.
_ROUND_TRIP = {protocol.TOOLS_CALL: "name", protocol.PROMPTS_GET: "name", protocol.RESOURCES_READ: "uri"}
# Results that carry caching hints (ttlMs, cacheScope) in 2026-07-28.
_CACHEABLE = frozenset(
    {
        protocol.SERVER_DISCOVER,
        protocol.TOOLS_LIST,
        protocol.PROMPTS_LIST,
        protocol.RESOURCES_LIST,
        protocol.RESOURCES_TEMPLATES_LIST,
        protocol.RESOURCES_READ,
    }
)
_LIST_CHANGED = dict(protocol.LIST_CHANGED_NOTIFICATIONS)
_LIST_FLAGS = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}


_Changes = tuple[MemoryObjectSendStream[tuple[str, str]], MemoryObjectReceiveStream[tuple[str, str]]]


@dataclasses.dataclass(slots=True)
class _Listener:
    """An open `subscriptions/listen` request and what it opted in to."""

    request: Request
    accepted: dict[str, Any]
    closed: anyio.Event


def _task_sender(request: Request) -> Callable[[dict[str, Any]], Awaitable[None]]:
    """Sends a task's status as `notifications/tasks` on the `subscriptions/listen` request `request`."""

    async def send(task: dict[str, Any]) -> None:
        tagged = {**task, "_meta": {protocol.SUBSCRIPTION_ID_KEY: request.id}}
        await request.send_notification(protocol.NOTIFICATIONS_TASKS, tagged)

    return send


async def _ready(result: dict[str, Any]) -> dict[str, Any]:
    """`result`, as the awaitable `ServerConnection.handle_request` returns."""
    return result


def _method_not_found(method: str, why: str = "") -> JSONRPCError:
    return JSONRPCError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}{why}")


class ServerConnection:
    """Per-connection state and dispatch; create it with `Server.connection()`."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.session: Session | None = None
        self.version: str | None = None
        self.initialized = False
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: Any = None
        self.log_level = LOG_LEVELS["debug"]
        self.subscriptions: set[str] = set()
        self.task_owner: str | None = None
        """The scope of this connection's tasks when its host names one (the HTTP session id, which every
        instance sharing a store knows); None: a random key per connection (`TaskManager.owner_of`)."""
        self._listeners: dict[int | str, _Listener] = {}
        self._changes: _Changes | None = None  # made at the first change or pump (see _change_stream)
        self._waiting: set[tuple[str, str]] = set()
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._loop_thread = 0
        self._call: CallInfo | None = None  # see _legacy_call
        self._stops: tuple[Stop, ...] = ()  # `Stop.track_connection`: each checked on every request
        self._closed = False

    @property
    def tracked_by(self) -> tuple[Stop, ...]:
        """The graceful stops tracking this connection's requests (`Stop.track_connection`), each once;
        none once closed. A handler taken before `close` (a lane's) still answers to them: refused once
        one began, its requests waited for and cut by its `settle`."""
        return () if self._closed else self._stops

    @property
    def closed(self) -> bool:
        """Whether `close` ran: no more notifications, its listens ended."""
        return self._closed

    # ----------------------------------------------------------------- running

    def bind(self, session: Session) -> None:
        """Attach the Session this connection pushes notifications on; call it from the event loop."""
        self.session = session
        session.suspends = self.server.suspends  # a `def` tool's call starts in a task of its own
        self._token = session.loop_token()
        self._loop_thread = threading.get_ident()
        self.server._connections.add(self)

    async def run(self, session: Session) -> None:
        """Bind to `session`, run it to its end, deliver change notifications meanwhile, then clean up."""
        self.bind(session)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.pump)
                try:
                    await session.run()
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self.close()

    def close(self) -> None:
        """Forget this connection: no more notifications, open listens end."""
        self.server._connections.discard(self)
        self.server.tasks.forget(self)  # its running tasks: nobody could fetch their results now
        self._token = None
        for listener in list(self._listeners.values()):
            listener.closed.set()
        self._closed = True
        session = self.session
        if session is not None:
            for stop in self._stops:  # its Session ended: the stops need not hold it (or its transport)
                stop.forget(session)

    def post(self, kind: str, value: str) -> None:
        """Queue a change notification from any thread (`("list", kind)` or `("updated", uri)`)."""
        if self._token is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._enqueue((kind, value))
            return
        try:
            anyio.from_thread.run_sync(self._enqueue, (kind, value), token=self._token)
        except RuntimeError:  # the event loop is gone
            self._token = None

    def _enqueue(self, change: tuple[str, str]) -> None:
        """Queue ``change`` unless the same one already waits (on the loop's thread).

        A change notification says "look again": two of the same kind waiting say no more than one, so
        the queue holds each (kind, value) once and is bounded by the lists and subscribed URIs.
        """
        if change not in self._waiting:
            self._waiting.add(change)
            self._change_stream()[0].send_nowait(change)

    def _change_stream(self) -> _Changes:
        """The queue of change notifications, made when first needed: a connection made per request (a
        2026-07-28 POST) mostly never sees one, and making it measured ~39k instructions."""
        if self._changes is None:
            # unbounded in type only: _enqueue keeps each (kind, value) in it once
            self._changes = anyio.create_memory_object_stream[tuple[str, str]](math.inf)
        return self._changes

    async def pump(self) -> None:
        """Deliver queued change notifications until cancelled."""
        async for kind, value in self._change_stream()[1]:
            self._waiting.discard((kind, value))  # a change from now on is news again
            try:
                await self._deliver(kind, value)
            except Exception:  # a closed peer must not end the pump for the others
                self.server.logger.debug("could not deliver %s %s", kind, value, exc_info=True)

    async def _deliver(self, kind: str, value: str) -> None:
        if kind == "list":
            method, legacy, flag = (
                _LIST_CHANGED[value],
                self.version is not None,
                _LIST_FLAGS[value],
            )
            params: dict[str, Any] = {}
            wanted = [lst for lst in self._listeners.values() if lst.accepted.get(flag)]
        else:
            method, legacy, params = (
                protocol.NOTIFICATIONS_RESOURCES_UPDATED,
                value in self.subscriptions,
                {"uri": value},
            )
            wanted = [
                lst
                for lst in self._listeners.values()
                if value in lst.accepted.get("resourceSubscriptions", ())
            ]
        if legacy and self.session is not None:
            await self.session.notify(method, params or None)
        for listener in wanted:
            tagged = {**params, "_meta": {protocol.SUBSCRIPTION_ID_KEY: listener.request.id}}
            await listener.request.send_notification(method, tagged)

    # ----------------------------------------------------------------- dispatch

    async def handle_notification(self, message: Message) -> None:
        """The Session's notification handler."""
        if message.method == protocol.NOTIFICATIONS_INITIALIZED:
            self.initialized = True

    def handle_request(self, request: Request) -> Awaitable[Any]:
        """The Session's request handler: decide the era of this message, then dispatch.

        It returns the awaitable that answers `request` (for a handshake-era request, the method handler's
        own coroutine) and raises at once what it refuses. Not `async def`: the Session awaits the
        handler's coroutine itself, with no frame of this method in between on every request.

        Under a graceful stop (`tracked_by`) it refuses the request once the stop began, and has the stop
        watch the Session the request came on (the stop finds the requests in flight there as it settles):
        a flag and a set lookup, where a wrapper per connection (one per 2026-07-28 POST) cost ~7k
        instructions.
        """
        stops = self._stops
        if stops:  # the first stop's test inlined: the others (rare) in _track
            stop = stops[0]
            if stop.refusing or len(stops) > 1 or request.session not in stop.sessions:
                self._track(request)
        params = request.params
        if params is None:
            params = {}
        elif not isinstance(params, dict):
            raise invalid("params must be an object")
        meta = request.meta
        if meta:  # `modern_version`'s test, inlined: every 2026-07-28 request passes here
            version = meta.get(protocol.PROTOCOL_VERSION_KEY)
            if version is not None:
                if version not in protocol.MODERN_VERSIONS:
                    modern_version(meta)  # refused: -32022 with the supported versions
                return self._modern(request, version, params)
        method = request.method
        if self.version is None or method in _UNVERSIONED:
            return _ready(self._unversioned(method, params))
        call = self._call  # _legacy_call()'s test, inlined: it is true on almost every request
        if (
            call is None
            or call.log_level != self.log_level
            or call.client_capabilities is not self.client_capabilities
            or call.version is not self.version
        ):
            call = self._legacy_call()
        return self._handler(method)(self, request, call, params)

    def _track(self, request: Request) -> None:
        """Refuse `request` if one of this connection's stops began, else have each watch its Session."""
        for stop in self._stops:
            if stop.refusing:  # refused before the request is looked at
                raise JSONRPCError(jsonrpc.CONNECTION_CLOSED, stop.refusal)
            if request.session not in stop.sessions:
                stop.watch(request.session)

    def _handler(self, method: str) -> Handler:
        handler = self.server.handlers.get(method)
        if handler is None:
            if self.server.fallback_handler is not None:
                return self.server.fallback_handler
            raise _method_not_found(method)
        capability = _CAPABILITY.get(method)
        if capability is not None and capability not in self.server.capabilities():
            raise _method_not_found(method, f" (this server offers no {capability})")
        return handler

    def _unversioned(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A legacy request that needs no handler: initialize, ping, or anything before initialize."""
        if method == protocol.INITIALIZE:
            return self._initialize(params)
        if method == protocol.PING:
            return {}
        if method in self.server.handlers:
            raise JSONRPCError(jsonrpc.INVALID_REQUEST, f"Invalid Request: send initialize before {method}")
        raise _method_not_found(method)

    def _legacy_call(self) -> CallInfo:
        """The CallInfo of a handshake-era request: shared while what it holds stays the same.

        Legacy requests never touch its round-trip fields (`responses`, `asked`), so one object serves all.
        """
        call = self._call
        if (
            call is None
            or call.log_level != self.log_level
            or call.client_capabilities is not self.client_capabilities
            or call.version is not self.version
        ):
            assert self.version is not None
            call = self._call = CallInfo(self.version, False, self.client_capabilities, self.log_level)
        return call

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.version is not None:
            raise JSONRPCError(
                jsonrpc.INVALID_REQUEST, "Invalid Request: the connection is already initialized"
            )
        requested = params.get("protocolVersion")
        self.version = requested if requested in protocol.LEGACY_VERSIONS else protocol.LATEST_LEGACY
        if self.session is not None:  # the one batch rule (protocol.batches_allowed), now that it is known
            self.session.batches = protocol.batches_allowed(self.version)
        capabilities = params.get("capabilities")
        self.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.client_info = params.get("clientInfo")
        result = {
            "protocolVersion": self.version,
            "capabilities": self.server.capabilities(),
            "serverInfo": self.server.info,
        }
        if self.server.instructions is not None:
            result["instructions"] = self.server.instructions
        return result

    async def _modern(self, request: Request, version: str, params: dict[str, Any]) -> dict[str, Any]:
        """A 2026-07-28 request's answer, stamped (`_finish`). One coroutine from the dispatch to the method
        handler's: a `def` tool's call suspends and resumes through each frame between."""
        method = request.method
        target = _ROUND_TRIP.get(method)
        if target is None:  # neither discover, listen nor a legacy-only method is a round-trip one
            if method == protocol.SERVER_DISCOVER:
                return self._finish(method, self._discover())
            if method == protocol.SUBSCRIPTIONS_LISTEN:
                return self._finish(method, await self._listen(request, params))
            if method in _LEGACY_ONLY:
                raise _method_not_found(method, f" (not part of {protocol.V2026_07_28})")
        handler = self._handler(method)
        meta = request.meta
        capabilities = meta.get(protocol.CLIENT_CAPABILITIES_KEY)
        level = meta.get(protocol.LOG_LEVEL_KEY)
        call = CallInfo(
            version,
            True,
            capabilities if isinstance(capabilities, dict) else {},
            None if level is None else LOG_LEVELS.get(str(level)),
        )
        if target is None or handler is not HANDLERS.get(method):
            return self._finish(method, await handler(self, request, call, params))
        # A handler that may need client input: it asks for it with an `input_required` result.
        named = params.get(target)
        if type(named) is not str:
            named = str(named)
        if "requestState" in params or "inputResponses" in params:  # an earlier round's answers
            self._gather(request, call, params, named)
        try:
            return self._finish(method, await handler(self, request, call, params))
        except InputRequired as need:
            sealed = self.server.request_state.seal(method, named, call.responses)
            asked = {"resultType": "input_required", "inputRequests": need.requests, "requestState": sealed}
            return self._finish(method, asked)

    def _gather(self, request: Request, call: CallInfo, params: dict[str, Any], target: str) -> None:
        """Put the input responses of earlier rounds (`requestState`) and this one into `call`."""
        state = params.get("requestState")
        if state is not None:
            call.responses.update(self.server.request_state.open(state, request.method, target))
        given = params.get("inputResponses")
        if given is not None:
            if not isinstance(given, dict):
                raise invalid('"inputResponses" must be an object')
            call.responses.update(given)

    def _finish(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        kind = result.setdefault("resultType", "complete")
        if kind == "complete" and method in _CACHEABLE:
            result.setdefault("ttlMs", self.server.cache_ttl_ms)
            result.setdefault("cacheScope", self.server.cache_scope)
        meta = result.get("_meta")
        info = self.server.info
        result["_meta"] = (
            {protocol.SERVER_INFO_KEY: info}
            if meta is None or not isinstance(meta, dict)
            else {**meta, protocol.SERVER_INFO_KEY: info}
        )
        return result

    def _discover(self) -> dict[str, Any]:
        result = {
            "supportedVersions": list(protocol.SUPPORTED_VERSIONS),
            "capabilities": self.server.modern_capabilities(),
        }
        if self.server.instructions is not None:
            result["instructions"] = self.server.instructions
        return result

    async def _task_ids(self, request: Request, task_ids: Any) -> list[str]:
        """The `taskIds` of a listen that this server will report on: its live 2026-07-28 tasks among them.
        A client that did not declare the tasks extension is refused (-32021, as the extension says)."""
        if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids):
            raise invalid('"taskIds" must be a list of task ids (strings)')
        capabilities = request.meta.get(protocol.CLIENT_CAPABILITIES_KEY)
        extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
        if not (isinstance(extensions, dict) and isinstance(extensions.get(protocol.TASKS_EXTENSION), dict)):
            data: dict[str, Any] = {"requiredCapabilities": {"extensions": {protocol.TASKS_EXTENSION: {}}}}
            raise JSONRPCError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: task status notifications need the "
                f"{protocol.TASKS_EXTENSION} extension",
                data,
            )
        return await self.server.tasks.known(task_ids)

    async def _listen(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        wanted = params.get("notifications")
        if not isinstance(wanted, dict):
            raise invalid('subscriptions/listen needs a "notifications" object')
        offered = self.server.capabilities()
        accepted: dict[str, Any] = {}
        for kind, flag in _LIST_FLAGS.items():
            if wanted.get(flag) is True and kind in offered:
                accepted[flag] = True
        uris = wanted.get("resourceSubscriptions")
        if isinstance(uris, list) and "resources" in offered:
            accepted["resourceSubscriptions"] = [uri for uri in uris if isinstance(uri, str)]
        task_ids = wanted.get("taskIds")
        if task_ids is not None and "tasks" in offered:
            accepted["taskIds"] = await self._task_ids(request, task_ids)
        listener = _Listener(request, accepted, anyio.Event())
        self._listeners[request.id] = listener
        unwatch: list[Callable[[], None]] = []
        try:
            ack = {"notifications": accepted, "_meta": {protocol.SUBSCRIPTION_ID_KEY: request.id}}
            await request.send_notification(protocol.NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED, ack)
            for task_id in accepted.get("taskIds", ()):
                unwatch.append(await self.server.tasks.watch(task_id, _task_sender(request)))
            await listener.closed.wait()
        finally:
            for stop in unwatch:
                stop()
            self._listeners.pop(request.id, None)
        return {"_meta": {protocol.SUBSCRIPTION_ID_KEY: request.id}}
