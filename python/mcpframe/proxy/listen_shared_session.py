"""One HTTP session of `--multiplex shared`: the `SessionBridge` of a session whose child is shared.

The host's `SessionManager` makes one per `Mcp-Session-Id`, as for `--multiplex session`, and `BridgePosts`
drives it through the same calls (`add`, `send`, `outgoing`, `abandon`); what differs is under them: the
session's ids are mapped to the shared child's (`SharedUpstream.ids`, by the session's connection number),
and the child's frames are routed to the session by `SharedUpstream` (see `listen_shared`), not read here.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING

import anyio

from mcpframe import core, jsonrpc, protocol
from mcpframe.errors import DuplicateIdError, PendingLimitError
from mcpframe.http.post import one_line

from .listen_bridge import (
    JSON_LINES,
    SESSION_ENDED,
    SSE_LINES,
    FastRoute,
    Route,
    SessionBridge,
    cancel_frame,
    emit_bounded,
)
from .reader import odd_id, splice, with_raw_id

if TYPE_CHECKING:
    from mcpframe._api import Id, MessageLike
    from mcpframe.http.sessions import HttpSession
    from mcpframe.http.streams import Stream
    from mcpframe.session import Session

    from .listen_shared import SharedUpstream
    from .pool import Child

__all__ = ["HANDSHAKE_ID", "SharedBridge"]

logger = logging.getLogger("mcpframe.proxy")

HANDSHAKE_ID = "mcpframe-proxy"
"""The id of the proxy's own requests to the shared child (its `initialize`; then with a number): a string,
so never one of the ids the sessions' requests get there (`core.IdMap`'s are numbers)."""

_REQUEST_ID = ("params", "requestId")
_SUBSCRIPTIONS = frozenset((protocol.RESOURCES_SUBSCRIBE, protocol.RESOURCES_UNSUBSCRIBE))
_ALREADY = "Invalid Request: this session is initialized already"
_CUT_REASON = "the HTTP client read too slowly"
_ENTRY = 128
"""Bytes a queued frame costs beyond its own (its place in the queue, its bytes object's header): counted in
`SharedBridge.unread`, so a flood of tiny frames meets the bound as a flood of big ones does."""


class SharedBridge(SessionBridge):
    """The `SessionBridge` of one session over the shared child (see the module doc)."""

    spliced = True

    def __init__(self, upstream: SharedUpstream, *, max_frame: int) -> None:
        super().__init__(max_frame=max_frame)
        self.upstream = upstream
        self.conn = 0  # its connection number in `upstream.ids` (set by `join`)
        # what the shared child's reader routed to this session, not yet on its streams (`deliver`): the
        # stream, the frame, whether it is an answer, and for an answer its POST and request id
        self.outbox: deque[tuple[Stream, bytes, bool, Route | None, Id | None]] = deque()
        self.unread = 0  # bytes in `outbox`, each frame counted `_ENTRY` bytes more
        self.peak_unread = 0  # the most `unread` ever was (what tests check)
        self.cut: str | None = None  # why the session was cut for reading too slowly (`None`: it was not)
        self._more: anyio.Event | None = None  # set when `outbox` gets a frame while `_drain` waits
        self.stray_answers = 0  # the client's responses to no request the child put to this session (dropped)

    @property  # read-only here: the shared child of the moment
    def child(self) -> Child | None:
        """The shared child, once it answered the proxy's `initialize` (what the fast path writes to)."""
        upstream = self.upstream
        return upstream.child if upstream.result is not None else None

    @child.setter
    def child(self, value: Child | None) -> None:
        """Ignored (`SessionBridge.__init__` sets it): the child is `upstream`'s."""

    def join(self, http: HttpSession) -> None:
        """Bind the bridge to its HTTP session (right after the session was created) and the shared child."""
        self.http = http
        self.conn = self.upstream.join(self)
        self.id_line = b"mcp-session-id: %s\r\n" % http.id.encode()
        self.json_lines, self.sse_lines = JSON_LINES + self.id_line, SSE_LINES + self.id_line

    def send_now(self, rid: Id, method: str, line: bytes) -> bool:
        """The fast path's request `rid` (`line`: plain, as `core.plain_call` gives it) written to the shared
        child at once with an id of its own there; `False` (nothing written, nothing kept) when it cannot,
        or when the request is one the full path answers here (`_local`: a subscription)."""
        upstream = self.upstream
        child = upstream.child
        if child is None or method in _SUBSCRIPTIONS:
            return False
        try:
            uid = upstream.ids.outbound(self.conn, rid)
        except (DuplicateIdError, PendingLimitError):
            return False  # the full path answers it with the error (`send`)
        if not child.write_now(core.splice_id(line, uid)):
            upstream.ids.discard(uid)
            return False
        upstream.active(self)
        return True

    def initialize_answer(self, message: MessageLike) -> bytes:
        """The answer to the session's `initialize`, from the child's (see `listen_shared` on the version)."""
        upstream = self.upstream
        assert upstream.result is not None
        assert upstream.version is not None
        params = message.params
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        version = upstream.version
        if isinstance(asked, str) and asked in protocol.LEGACY_VERSIONS and protocol.at_least(version, asked):
            version = asked
        self.version = version
        assert message.id is not None
        answer = core.encode_result(message.id, {**upstream.result, "protocolVersion": version})
        return with_raw_id(answer, odd_id(message))

    def get_stream(self) -> Stream:
        assert self.http is not None
        return self.http.get_stream

    def newest(self) -> Route | None:
        """The session's newest POST still waiting for an answer."""
        for route in reversed(self.pending.values()):
            if not route.closed:
                # a fast request now needs a stream: the full path takes it over from here
                return route.upgrade() if isinstance(route, FastRoute) else route
        return None

    # ---------------------------------------------------------------- client -> child

    async def send(self, route: Route, requests: list[MessageLike]) -> bool:
        """The POST's requests to the shared child, each with an id (and progress token) of its own there;
        `False` when they could not be written (then none of them stays mapped)."""
        from .listen_stateless import _for_child  # noqa: PLC0415 - its splice, shared (no cycle at import)

        upstream = self.upstream
        upstream.active(self)
        lines: list[bytes] = []
        uids: list[int] = []  # the child's ids given in this call: forgotten again if nothing is written
        for message in requests:
            rid = message.id
            assert rid is not None
            local = self._local(message)
            if local is not None:
                await self.answer_with(rid, local)
                continue
            try:
                uid = upstream.ids.outbound(self.conn, rid)
            except (DuplicateIdError, PendingLimitError) as exc:  # already in flight; too many in flight
                code = (
                    jsonrpc.INVALID_REQUEST if isinstance(exc, DuplicateIdError) else jsonrpc.INTERNAL_ERROR
                )
                await self.answer_with(rid, core.encode_error(rid, code, str(exc)))
                continue
            try:
                frame, token = _for_child(message, uid)
            except ValueError as exc:
                upstream.ids.discard(uid)
                await self.answer_with(rid, core.encode_error(rid, jsonrpc.INVALID_REQUEST, str(exc)))
                continue
            if token is not None:
                upstream.tokens[uid] = (route, token, self)
                route.on_close.append(lambda uid=uid: upstream.tokens.pop(uid, None))  # type: ignore[misc]
            uids.append(uid)
            lines.append(one_line(frame))
        if not lines or await self.write(b"".join(lines)):
            return True
        for uid in uids:
            upstream.ids.discard(uid)
            upstream.tokens.pop(uid, None)
        return False

    def _local(self, message: MessageLike) -> bytes | None:
        """The answer given here to a request the child must not get (`None`: it goes to the child)."""
        method = message.method
        if method == protocol.INITIALIZE:
            return core.encode_error(message.id, jsonrpc.INVALID_REQUEST, _ALREADY)
        if method not in _SUBSCRIPTIONS:
            return None
        rid = message.id
        assert rid is not None
        params = message.params
        uri = params.get("uri") if isinstance(params, dict) else None
        if not isinstance(uri, str):
            return None  # the child refuses it
        if method == protocol.RESOURCES_SUBSCRIBE:
            self.upstream.subscribed(self, uri)
            return None
        if self.upstream.unsubscribed(self, uri):
            return None
        return core.encode_result(rid, {})  # another session still subscribes: the child keeps it

    def outgoing(self, others: list[MessageLike]) -> bytes:
        """The client's notifications and responses as the shared child gets them: a cancel names the
        request's id there (or is dropped: the request is not the child's any more), the session's
        `notifications/initialized` is dropped (the proxy sent its own), an answer to the child's request
        put to this session goes as it came, any other answer is dropped (a session never answers for
        another)."""
        lines = []
        asked = self.upstream.asked
        for message in others:
            method = message.method
            raw = message.raw
            if method == protocol.NOTIFICATIONS_CANCELLED:
                uid = self._given_up(message)
                if uid is None:
                    continue
                span = core.value_span(raw, _REQUEST_ID)
                assert span is not None  # `_given_up` found the id there
                raw = splice(raw, span, b"%d" % uid)
            elif method == protocol.NOTIFICATIONS_INITIALIZED:
                continue
            elif method is None and message.id is not None:
                if asked.get(message.id) is not self:
                    self._stray(message.id)
                    continue
                del asked[message.id]
            lines.append(one_line(raw))
        return b"".join(lines)

    def _stray(self, rid: Id) -> None:
        """Drop the client's response `rid`: the child asked this session no such request (warned of on the
        first and then every 100th, so a client cannot flood the log)."""
        self.stray_answers += 1
        if self.stray_answers % 100 == 1:
            logger.warning(
                "dropping a response to %r from session %s: no request of the upstream server's waits for it"
                " there (%d dropped)",
                rid,
                self.http.id if self.http is not None else "?",
                self.stray_answers,
            )

    def _given_up(self, message: MessageLike) -> int | None:
        """The client cancelled a request: its POST stops waiting; the child's id for it (`None`: none)."""
        params = message.params
        rid = params.get("requestId") if isinstance(params, dict) else None
        if not isinstance(rid, int | str) or isinstance(rid, bool):
            return None
        self.client_cancelled(message)
        return self.unmap(rid)

    def unmap(self, rid: Id) -> int | None:
        """Forget the child's id of request `rid` (its answer will be dropped): that id."""
        ids = self.upstream.ids
        uid = ids.upstream(self.conn, rid)
        if uid is not None:
            ids.discard(uid)
        return uid

    async def write(self, data: bytes) -> bool:
        """Frames to the shared child, started again first if it died; `False` when it cannot start."""
        from .listen_shared import SharedStartError  # noqa: PLC0415 - the module that imports this one

        try:
            await self.upstream.ready()
        except SharedStartError:
            return False
        return await self.upstream.write(data)

    async def abandon(self, route: Route) -> None:
        """Nobody can receive this POST's answers any more: cancel its requests at the child."""
        if route.closed:
            return
        ids = [rid for rid in route.ids if self.pending.get(rid) is route]
        route.close()
        frames = [cancel_frame(uid, "the HTTP client disconnected") for uid in map(self.unmap, ids) if uid]
        if frames:
            await self.upstream.write(b"".join(frames))

    # ---------------------------------------------------------------- child -> client

    async def answered(self, item: MessageLike, rid: Id) -> None:
        """The child's answer to the session's request `rid` (by the child's id, found in `ids`)."""
        await self.answer_with(rid, item.with_id(rid))  # (in the id's own spelling: `answer_with`)

    async def answer_with(self, rid: Id, frame: bytes) -> None:
        """Answer the session's request `rid` with `frame` (made here), in the id's own spelling."""
        route = self.pending.pop(rid, None)
        if route is None:
            return
        raw_id = self.raw_ids.pop(rid, None) if self.raw_ids else None
        frame = with_raw_id(frame, raw_id)
        if isinstance(route, FastRoute):  # the POST waits for these bytes alone (`listen_fast`)
            route.answer(frame)
            return
        if not self.outbox and self.cut is None:
            # nothing of the session's waits to go first: out now, never waiting for the client (an answer
            # is bounded by the requests admitted), without `_drain`'s hop
            await route.stream.emit(frame, response=True, wait=False)
            route.answered(rid)
            return
        self.deliver(route.stream, frame, response=True, route=route, rid=rid)

    def deliver(
        self,
        stream: Stream,
        frame: bytes,
        *,
        response: bool,
        route: Route | None = None,
        rid: Id | None = None,
    ) -> None:
        """Queue `frame` for `stream` (one of this session's; `route` and `rid`: the answer to that request,
        the POST ends once it is out), never waiting: the shared child's reader serves every session. The
        session's own task (`_drain`) writes the queue out as fast as its client reads; a session with more
        than `upstream.max_unread` bytes already queued is cut (`_cut_off`) instead of queueing more."""
        if self.cut is None and not self.ended and self.unread > self.upstream.max_unread:
            self._cut_off()
        if self.cut is not None or self.ended:
            if route is not None:  # dropped: its POST ends all the same (its admission slot freed)
                route.answered(rid)  # type: ignore[arg-type]  # an answer's: not None
            return
        self.outbox.append((stream, frame, response, route, rid))
        self.unread += len(frame) + _ENTRY
        self.peak_unread = max(self.peak_unread, self.unread)
        if self._more is not None:
            self._more.set()

    async def _drain(self) -> None:
        """Write the session's queue to its streams, in order, each as fast as its client takes it (for the
        session's life)."""
        outbox = self.outbox
        while True:
            while not outbox:
                more = self._more = anyio.Event()
                await more.wait()
                self._more = None
            stream, frame, response, route, rid = outbox.popleft()
            try:
                await emit_bounded(stream, frame, response=response)
            finally:  # written, or given up (the session ended): its POST ends either way
                if route is not None:
                    route.answered(rid)  # type: ignore[arg-type]  # an answer's: not None
            if self.cut is None:
                self.unread -= len(frame) + _ENTRY

    def _drop_queued(self) -> None:
        """Forget what the session has not read yet; each queued answer's POST ends (its slot freed)."""
        for _stream, _frame, _response, route, rid in self.outbox:
            if route is not None:
                route.answered(rid)  # type: ignore[arg-type]  # an answer's: not None
        self.outbox.clear()
        self.unread = 0

    def _cut_off(self) -> None:
        """The session's client reads too slowly for what the child sends it: drop what it has not read, and
        end the session (its requests cancelled at the child, each answered with a -32000 error)."""
        upstream = self.upstream
        self.cut = f"the proxy ended the session: its client read too slowly ({self.unread} bytes unread)"
        self._drop_queued()
        upstream.cut_sessions += 1
        for route in self.pending.values():
            if isinstance(route, Route):
                route.stream.drop_unsent()
        upstream.spawn(self._end_cut)

    async def _end_cut(self) -> None:
        upstream = self.upstream
        frames = [cancel_frame(uid, _CUT_REASON) for uid in upstream.ids.drop_connection(self.conn)]
        if frames:
            await upstream.write(b"".join(frames))
        why = f"{self.cut}, before answering"
        for rid, route in list(self.pending.items()):
            frame = self.failed(rid, why)
            if isinstance(route, FastRoute):
                route.answer(frame)
                continue
            await route.stream.emit(frame, response=True, wait=False)
            route.answered(rid)
        self.pending.clear()
        self.raw_ids.clear()
        if self.http is not None:
            await self.http.close()  # its GET stream ends, the host forgets it: the client's next POST, 404

    def failed(self, rid: Id, why: str = SESSION_ENDED) -> bytes:
        """The -32000 error for `rid` once the child died (the session lives on) or the session ended."""
        text = f"{why} request {rid!r}"
        return with_raw_id(core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, text), self.raw_ids.get(rid))

    async def fail_pending(self, why: str) -> None:
        """Every request still waiting gets the -32000 error naming `why` (queued: never waiting for its
        client, as `deliver`)."""
        for rid, route in list(self.pending.items()):
            frame = self.failed(rid, why)
            if isinstance(route, FastRoute):
                route.answer(frame)
            else:
                self.deliver(route.stream, frame, response=True, route=route, rid=rid)
        self.pending.clear()
        self.raw_ids.clear()

    async def run(self, main: Session) -> None:
        """The session's life: until the host closes it; then its requests are given up at the child."""
        assert self.http is not None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._drain)
                await main.run()  # ends when the host closes the session (DELETE, idle, shutdown)
                tg.cancel_scope.cancel()
        finally:
            self.ended = True
            self._drop_queued()
            with anyio.CancelScope(shield=True):
                await self.upstream.leave(self, "the HTTP session ended")
                await self._fail_pending(SESSION_ENDED)
                await self.http.close()
