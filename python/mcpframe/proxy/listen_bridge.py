"""One HTTP session of the listening proxy joined to its upstream child, frame by frame, as bytes.

`SessionBridge` stands where an mcpframe `ServerConnection` stands in the HTTP host: the host's
`SessionManager` makes one per `Mcp-Session-Id` and runs it for the session's life, so session ids, the
reaper, GET streams, resumability, DELETE and the 404 of an ended session are the host's own. What the
bridge adds is the routing of what the child writes:

- a response goes to the SSE stream (or JSON answer) of the POST that carried its request (by id: the child
  is the session's alone, so ids need no rewriting);
- `notifications/progress` goes to the POST whose request named that `progressToken`;
- any other notification or server request (log messages, sampling, elicitation, roots/list, list_changed)
  goes to the newest POST still waiting for an answer (the request it most likely belongs to), else to the
  session's GET stream.

Frames are never re-encoded: the lazy decoder reads the envelope, the frame's bytes go on as they came. A
child that ends fails the requests still waiting with a `-32000` error naming its exit status, and ends the
HTTP session: the client's next request gets 404 and it initializes again (a new child).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import Id, MessageLike
from mcpframe.http.post import one_line
from mcpframe.http.responses import SSE_HEADERS, Reply

from .reader import odd_id, with_raw_id
from .unreadable import answer_id, dropped_answer

if TYPE_CHECKING:
    from mcpframe.http.sessions import HttpSession
    from mcpframe.http.streams import Stream
    from mcpframe.session import Session

    from .pool import Child

__all__ = [
    "HIGH_WATER",
    "JSON_LINES",
    "SSE_LINES",
    "FastRoute",
    "Route",
    "SessionBridge",
    "cancel_frame",
    "emit_bounded",
    "progress_tokens",
]

logger = logging.getLogger("mcpframe.proxy")

_PROGRESS = protocol.NOTIFICATIONS_PROGRESS
_ANSWERS = frozenset(("result", "error"))
SESSION_ENDED = "the HTTP session ended before the upstream server answered"
"""Why a request still pending at its child gets an error when its HTTP session ended (`failed`)."""


JSON_LINES = Reply(200, b"", None, "application/json").header_lines()
SSE_LINES = Reply(200, b"", SSE_HEADERS).header_lines()

HIGH_WATER = 64
"""SSE events queued for one client's response before the bridge stops reading its child's output."""
_POLL = 0.005  # seconds between looks at a full stream (only while one is full)


async def emit_bounded(stream: Stream, frame: bytes, *, response: bool) -> None:
    """Emit `frame` on `stream`, then wait while the client reads too slowly to keep its queue under
    `HIGH_WATER` events: the child's output is not read meanwhile, so a slow client slows its server down
    instead of growing the proxy (a client that leaves, or a stream that ends, releases the wait)."""
    await stream.emit(frame, response=response)
    while stream.queued() > HIGH_WATER and not stream.finished.is_set():
        await anyio.sleep(_POLL)


def cancel_frame(rid: Id, reason: str) -> bytes:
    """A `notifications/cancelled` for request `rid` (NDJSON)."""
    return core.encode_notification(protocol.NOTIFICATIONS_CANCELLED, {"requestId": rid, "reason": reason})


def progress_tokens(requests: list[MessageLike]) -> list[Any]:
    """The `progressToken`s the requests name (their progress notifications are routed by them)."""
    tokens = []
    for message in requests:
        params = message.params
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get(protocol.PROGRESS_TOKEN) if isinstance(meta, dict) else None
        if isinstance(token, int | str):
            tokens.append(token)
    return tokens


class Route:
    """One POST's requests waiting for their answers, and the stream the answers go to."""

    def __init__(self, stream: Stream, ids: list[Id], tokens: list[Any]) -> None:
        self.stream = stream
        self.ids = set(ids)
        self.tokens = tokens
        self.on_close: list[Callable[[], object]] = []
        self.closed = False

    def answered(self, rid: Id) -> None:
        """`rid` got its answer (or was cancelled): the POST ends once none is left."""
        self.ids.discard(rid)
        if not self.ids:
            self.close()

    def close(self) -> None:
        """End the POST's stream and run its callbacks (once)."""
        if self.closed:
            return
        self.closed = True
        self.stream.finish()
        for callback in self.on_close:
            callback()


class FastRoute:
    """A request the fast path wrote to the child (`listen_fast`): its POST waits for `finish` alone.

    `finish` is called once, with the child's answer (`bytes`), `None` when the client cancelled the
    request, or, once the request needs more than its answer (the child sent something else while it was
    the newest request, or it waited past its hold), the `Route` that takes its place: from there on the
    full path answers it. An answer read from the child's pipe is finished there (`answer_now`); the rest
    one loop turn later (`answer`, `upgrade`), as when the POST awaited a future: never inside the bridge's
    own routing step.
    """

    __slots__ = ("bridge", "done", "finish", "rid", "session", "slot_release")
    closed = False  # what `SessionBridge._target` asks of a route

    def __init__(
        self,
        bridge: SessionBridge,
        session: HttpSession,
        rid: Id,
        slot_release: Callable[[], None],
        *,
        finish: Callable[[bytes | Route | None], None],
    ) -> None:
        self.bridge = bridge
        self.session = session
        self.rid = rid
        self.slot_release = slot_release
        self.finish = finish
        self.done = False  # `finish` was called or is scheduled (or the POST gave the request up)

    def answer(self, frame: bytes | None) -> None:
        """The child's answer (or `None`: nothing will come); the bridge has dropped the request."""
        if not self.done:
            self.done = True
            asyncio.get_running_loop().call_soon(self.finish, frame)

    def answer_now(self, frame: bytes) -> None:
        """The child's answer, read just now from its pipe: the POST is answered from here."""
        if not self.done:
            self.done = True
            self.finish(frame)

    def answered(self, rid: Id) -> None:
        """The client cancelled the request (`SessionBridge.client_cancelled`)."""
        self.answer(None)

    def waiting(self) -> bool:
        """Whether the request is still the bridge's and unanswered."""
        return not self.done and self.bridge.pending.get(self.rid) is self

    def upgrade(self) -> Route:
        """A `Route` with a stream of the session in this request's place, as `BridgePosts` makes one; the
        waiting POST carries on with it on the full path."""
        session = self.session
        stream = session.new_stream()
        route = Route(stream, [self.rid], [])
        route.on_close += (self.slot_release, lambda: session.stream_ended(stream))
        route.on_close.append(lambda: self.bridge._forget(route))
        self.bridge.pending[self.rid] = route
        self.done = True
        asyncio.get_running_loop().call_soon(self.finish, route)
        return route


class SessionBridge:
    """The `ServerConnection` stand-in of one proxied HTTP session (see the module's docstring)."""

    spliced = False
    """Whether its requests reach the child with ids of the child's (`SharedBridge`), not their own."""

    def send_now(self, rid: Id, method: str, line: bytes) -> bool:  # pragma: no cover - a spliced one's
        """The fast path's write of a spliced bridge (`SharedBridge.send_now`)."""
        raise NotImplementedError

    def unmap(self, rid: Id) -> Id | None:  # pragma: no cover - a spliced one's
        """The child's id of request `rid`, forgotten (`SharedBridge.unmap`)."""
        raise NotImplementedError

    def __init__(self, *, max_frame: int, on_died: Callable[[int | None], object] | None = None) -> None:
        self.max_frame = max_frame
        # called with the child's status when it ended by itself (not with the session): the proxy ends
        # (`--on-upstream-exit exit`); `None`: the session ends, the next `initialize` starts a child
        self.on_died = on_died
        self.http: HttpSession | None = None
        self.child: Child | None = None
        self.version: str | None = None  # what the child's initialize answer negotiated
        self.pending: dict[Id, Route | FastRoute] = {}
        # a pending id written unlike its encoding (`odd_id`) -> those bytes: the child answers with its own
        # spelling of the id, the client gets its own back
        self.raw_ids: dict[Id, bytes] = {}
        self.tokens: dict[Any, Route] = {}
        self._init_id: Id | None = None
        self.ended = False
        # the fast path's header lines of this session's whole answers (`listen_fast`): its id alone, and
        # after the JSON or SSE head lines
        self.id_line = self.json_lines = self.sse_lines = b""
        self.fast_plan: Any = None  # the fast path's per-session decisions (`listen_fast._Plan`)

    # the host's main Session calls these for routed client notifications: the bridge sends those to the
    # child itself, so they are never used
    async def handle_request(self, request: Any) -> Any:  # pragma: no cover - see above
        raise RuntimeError("the proxy forwards requests to its upstream")

    async def handle_notification(self, notification: Any) -> None:  # pragma: no cover - see above
        return None

    def attach(self, http: HttpSession, child: Child) -> None:
        """Bind the bridge to its HTTP session and its child (right after the session was created)."""
        self.http = http
        self.child = child
        self.id_line = b"mcp-session-id: %s\r\n" % http.id.encode()  # the server's own token
        self.json_lines, self.sse_lines = JSON_LINES + self.id_line, SSE_LINES + self.id_line

    # ---------------------------------------------------------------- client -> child

    def add(self, route: Route, requests: list[MessageLike]) -> None:
        """Register a POST's requests before they are written, so that no answer can come first."""
        for message in requests:
            if message.id is not None:
                self.pending[message.id] = route
                if (raw_id := odd_id(message)) is not None:
                    self.raw_ids[message.id] = raw_id
                if message.method == protocol.INITIALIZE:
                    self._init_id = message.id
        for token in route.tokens:
            self.tokens[token] = route
        route.on_close.append(lambda: self._forget(route))

    def _forget(self, route: Route) -> None:
        for token in route.tokens:
            if self.tokens.get(token) is route:
                del self.tokens[token]
        for rid in list(route.ids):
            if self.pending.get(rid) is route:
                del self.pending[rid]
                if self.raw_ids:
                    self.raw_ids.pop(rid, None)

    async def send(self, route: Route, requests: list[MessageLike]) -> bool:
        """The POST's requests (registered with `add`) to the child, as they came; `False` when it is gone."""
        return await self.write(b"".join(one_line(r.raw) for r in requests))

    def outgoing(self, others: list[MessageLike]) -> bytes:
        """The client's notifications and responses as the child gets them: as they came (a cancel also
        stops its POST's wait for the request)."""
        for message in others:
            if message.method == protocol.NOTIFICATIONS_CANCELLED:
                self.client_cancelled(message)
        return b"".join(one_line(m.raw) for m in others)

    async def write(self, data: bytes) -> bool:
        """Frames to the child; `False` when it is gone (the session is ending)."""
        child = self.child
        if child is None or self.ended:
            return False
        try:
            await child.write(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return False
        return True

    def client_cancelled(self, message: MessageLike) -> None:
        """The client cancelled a request: its POST stops waiting for it (the caller forwards the cancel)."""
        params = message.params
        rid = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(rid, int | str) and not isinstance(rid, bool):
            route = self.pending.pop(rid, None)
            if self.raw_ids:
                self.raw_ids.pop(rid, None)
            if route is not None:
                route.answered(rid)

    def forget(self, route: FastRoute) -> bool:
        """The fast path gave up on its request (its POST was cancelled): its answer will be dropped.
        `True` when the child still works on it (else it was answered, cancelled or handed on)."""
        if self.pending.get(route.rid) is not route:
            return False
        del self.pending[route.rid]
        return True

    async def abandon(self, route: Route) -> None:
        """Nobody can receive this POST's answers any more (its stream was dropped): cancel them upstream."""
        if route.closed:  # answered, or abandoned already (a notification and the leaving in one turn)
            return
        ids = [rid for rid in route.ids if self.pending.get(rid) is route]
        route.close()
        for rid in ids:
            await self.write(cancel_frame(rid, "the HTTP client disconnected"))

    # ---------------------------------------------------------------- child -> client

    async def run(self, main: Session) -> None:
        """The session's life: route the child's frames until the child ends or the session does."""
        assert self.http is not None
        assert self.child is not None
        child = self.child

        async def watch_main() -> None:
            await main.run()  # ends when the host closes the session (DELETE, idle, shutdown)
            tg.cancel_scope.cancel()

        status: int | None = None
        died = False
        child.output.take = self._take  # the fast path's answers are placed where the pipe read lands
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch_main)
                async for item in child.frames(max_frame=self.max_frame):
                    await self._route(item)
                tg.cancel_scope.cancel()
        finally:
            self.ended = True
            with anyio.CancelScope(shield=True):
                died = not self.http.closed  # else the host ended the session (DELETE, idle, shutdown)
                status = await child.close()
                why = (
                    f"the upstream server exited (status {status}) before answering"
                    if died
                    else SESSION_ENDED
                )
                await self._fail_pending(why)
                await self.http.close()
        logger.debug("session %s: upstream child ended (status %s)", self.http.id, status)
        if died and self.on_died is not None:
            self.on_died(status)

    def _take(self, item: MessageLike | core.FrameError) -> bool:
        """An answer to a request of the fast path goes to its POST at once (`ChildOutput.take`); anything
        else is left to `_route`, in order."""
        if isinstance(item, core.FrameError) or item.kind not in _ANSWERS:
            return False
        rid = item.id  # read once: each read of a core message's member is a call into the extension
        if rid is None:
            return False
        route = self.pending.get(rid)
        if type(route) is not FastRoute:
            return False
        del self.pending[rid]
        if route.done:  # (`answer_now`, inlined: this runs for every answer of the fast path)
            return True
        route.done = True
        try:
            route.finish(item.raw)
        except Exception:  # a bug costs this POST, never the child's pipe read (`ChildOutput`)
            logger.exception("answering request %r failed", rid)
        return True

    def failed(self, rid: Id, why: str = SESSION_ENDED) -> bytes:
        """The -32000 error that answers `rid` when the session or its child ended first (in the id's
        own spelling)."""
        text = f"{why} request {rid!r}; initialize a new session"
        return with_raw_id(core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, text), self.raw_ids.get(rid))

    async def _fail_pending(self, why: str) -> None:
        for rid, route in list(self.pending.items()):
            frame = self.failed(rid, why)
            if isinstance(route, FastRoute):
                route.answer(frame)
                continue
            await route.stream.emit(frame, response=True)
            route.answered(rid)
        self.pending.clear()
        self.raw_ids.clear()

    async def _route(self, item: MessageLike | core.FrameError) -> None:
        if isinstance(item, core.FrameError):
            logger.warning("dropping a malformed frame from the upstream server: %s", item.message)
            await self._unreadable_answer(item)
            return
        kind = item.kind
        if kind in {"result", "error"}:
            rid = item.id
            route = self.pending.pop(rid, None) if rid is not None else None
            if route is None:
                logger.debug("dropping an answer to unknown or cancelled request %r", rid)
                return
            raw = item.raw
            if self.raw_ids and (raw_id := self.raw_ids.pop(rid, None)) is not None:  # type: ignore[arg-type]
                raw = with_raw_id(raw, raw_id)
            if type(route) is FastRoute:  # the POST waits for these bytes alone (`listen_fast`)
                route.answer(raw)
                return
            if rid == self._init_id:
                self._adopt_version(item)
            assert isinstance(route, Route)
            await emit_bounded(route.stream, raw, response=True)
            route.answered(rid)  # type: ignore[arg-type]  # rid is not None: it was found
            return
        target = self._target(item)
        stream = target.stream if target is not None else self._get_stream()
        await emit_bounded(stream, item.raw, response=False)

    async def _unreadable_answer(self, item: core.FrameError) -> None:
        """A dropped frame whose first bytes show the answer to a pending request (an oversize result, say):
        that request ends with an error now, instead of waiting until the child exits."""
        rid = answer_id(item.preview)
        route = self.pending.pop(rid, None) if rid is not None else None
        if route is None:
            return
        frame = dropped_answer(rid, item)
        if self.raw_ids and rid is not None:
            frame = with_raw_id(frame, self.raw_ids.pop(rid, None))
        if isinstance(route, FastRoute):
            route.answer(frame)
            return
        await emit_bounded(route.stream, frame, response=True)
        route.answered(rid)  # type: ignore[arg-type]  # rid is not None: it was found

    def _target(self, item: MessageLike) -> Route | None:
        """The POST a server notification or request belongs to (see the module's docstring)."""
        if item.method == _PROGRESS:
            params = item.params
            token = params.get(protocol.PROGRESS_TOKEN) if isinstance(params, dict) else None
            found = self.tokens.get(token) if isinstance(token, int | str) else None
            if found is not None and not found.closed:
                return found
        for route in reversed(self.pending.values()):
            if not route.closed:
                # a fast request now needs a stream: the full path takes it over from here
                return route.upgrade() if isinstance(route, FastRoute) else route
        return None

    def _get_stream(self) -> Stream:
        assert self.http is not None
        return self.http.get_stream

    def _adopt_version(self, item: MessageLike) -> None:
        result = item.result
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            self.version = version
