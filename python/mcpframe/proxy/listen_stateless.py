"""2026-07-28 (stateless) requests through the listening proxy: one shared upstream child for all of them.

A stateless request needs no session, so requests from every client go to one child, started on the first
and started again on the next request after it died. Ids are the clients' own, so two clients may both use
id 1: each request gets an id unique in the child (`with_id` splices the bytes; params are never
re-encoded), and its answer gets the client's id back. Progress notifications go to the POST whose request
named the token, other notifications to the newest POST still waiting.

Why one shared child and not a child per request: a child per request pays a process start (tens of
milliseconds for a Python server) on every call; the shared child pays nothing, and 2026-07-28 servers keep
no per-client state between requests by design.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from mcpframe import core, jsonrpc, protocol
from mcpframe.http.asgi import HttpRequest
from mcpframe.http.headers import Accepts, mirror_mismatch
from mcpframe.http.post import Body, one_line
from mcpframe.http.responses import Answer, Reply, error_response
from mcpframe.http.streams import Stream

from .listen_bridge import Route, cancel_frame, emit_bounded, progress_tokens
from .pool import ChildPool, PoolBusy

if TYPE_CHECKING:
    from mcpframe._api import Id, MessageLike

    from .listen_posts import BridgePosts
    from .pool import Child

__all__ = ["StatelessBridge"]

logger = logging.getLogger("mcpframe.proxy")

_PROGRESS = protocol.NOTIFICATIONS_PROGRESS


class StatelessBridge:
    """The shared child of the 2026-07-28 requests, and which POST waits for which of its answers."""

    def __init__(self, pool: ChildPool, *, max_frame: int, spawn: Callable[..., Any]) -> None:
        self.pool = pool
        self.max_frame = max_frame
        self.spawn = spawn  # runs the child's reader in the host's task group
        self.child: Child | None = None
        self._starting = anyio.Lock()
        self._ids = itertools.count(1)
        self.pending: dict[int, tuple[Route, Id]] = {}  # upstream id -> the POST and the client's id
        self.tokens: dict[Any, Route] = {}

    async def handle(self, request: HttpRequest, body: Body, accepts: Accepts, posts: BridgePosts) -> Answer:
        """Answer one stateless request through the shared child."""
        message = body.requests[0]
        why = mirror_mismatch(request.headers, message.method or "", message.params)
        if why is not None:
            return error_response(400, why, code=jsonrpc.HEADER_MISMATCH, rid=message.id)
        slot = await posts.admit(request, body)
        if isinstance(slot, Reply):
            return slot
        try:
            child = await self._child()
        except (PoolBusy, OSError) as exc:
            slot.release()
            return error_response(
                503, f"Service Unavailable: {exc}", rid=message.id, headers={"Retry-After": "1"}
            )
        assert message.id is not None
        upstream = next(self._ids)
        route = Route(Stream(None, None), [upstream], progress_tokens([message]))
        route.on_close.append(slot.release)
        route.on_close.append(lambda: self._forget(route, upstream))
        self.pending[upstream] = (route, message.id)
        for token in route.tokens:
            self.tokens[token] = route
        try:
            await child.write(one_line(message.with_id(upstream)))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            route.close()
            return error_response(502, "Bad Gateway: the upstream server exited", rid=message.id)
        return await posts.answer(route, None, accepts, {}, _Abandon(self, upstream), receive=request.receive)

    def _forget(self, route: Route, upstream: int) -> None:
        self.pending.pop(upstream, None)
        for token in route.tokens:
            if self.tokens.get(token) is route:
                del self.tokens[token]

    async def _child(self) -> Child:
        async with self._starting:
            child = self.child
            if child is None or child.returncode is not None:
                child = self.child = await self.pool.spawn()
                self.spawn(self._read, child)
            return child

    async def _read(self, child: Child) -> None:
        """Route the shared child's frames until it ends; then fail what it still owed."""
        try:
            async for item in child.frames(max_frame=self.max_frame):
                if not isinstance(item, core.FrameError):
                    await self._route(item)
        finally:
            with anyio.CancelScope(shield=True):
                status = await child.close()
                if self.child is child:
                    self.child = None
                for route, rid in list(self.pending.values()):
                    text = f"the upstream server exited (status {status}) before answering request {rid!r}"
                    await route.stream.emit(
                        core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, text), response=True
                    )
                    route.close()

    async def _route(self, item: MessageLike) -> None:
        if item.kind in ("result", "error"):
            found = self.pending.get(item.id) if isinstance(item.id, int) else None
            if found is None:
                return
            route, rid = found
            await emit_bounded(route.stream, item.with_id(rid), response=True)
            route.close()
            return
        target: Route | None = None
        if item.method == _PROGRESS and isinstance(item.params, dict):
            target = self.tokens.get(item.params.get(protocol.PROGRESS_TOKEN))
        if target is None and self.pending:
            target = next(reversed(self.pending.values()))[0]
        if target is not None and not target.closed:
            await emit_bounded(target.stream, item.raw, response=False)

    async def abandon(self, upstream: int) -> None:
        """The client left before its answer: cancel the request upstream."""
        found = self.pending.get(upstream)
        if found is not None:
            found[0].close()
            child = self.child
            if child is not None:
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await child.write(cancel_frame(upstream, "the HTTP client disconnected"))

    async def aclose(self) -> None:
        """End the shared child (the proxy stops)."""
        if self.child is not None:
            await self.child.close()


class _Abandon:
    """`BridgePosts.answer`'s hook for a dropped stream, bound to one stateless request."""

    def __init__(self, bridge: StatelessBridge, upstream: int) -> None:
        self._bridge = bridge
        self._upstream = upstream

    async def abandon(self, route: Route) -> None:
        await self._bridge.abandon(self._upstream)
