"""`mcpframe proxy --listen URL --multiplex shared -- command`: every handshake-era session over one child.

Where the default (`--multiplex session`) gives each HTTP session a child of its own, `shared` starts one
child, does its `initialize` once (as a client declaring `roots`, `sampling` and `elicitation`: what any of
the sessions may be asked) and answers each session's `initialize` itself from that answer. The version a
session gets: the one it asked for when that is a handshake-era version no newer than the child's, else the
child's (as the specification lets a server answer with another version it supports); the child itself
speaks its own version to every session.

Each session's requests reach the child with an id unique in it (`core.IdMap`, by the session's connection
number), spliced into the frame's bytes; their answers get the client's id back, as the client wrote it. A
request's `progressToken` reaches the child as its upstream id (`listen_stateless._for_child`, the stateless
bridge's own splice) and the child's progress goes back with the client's token. A client's
`notifications/cancelled` reaches the child with the request's upstream id; a session that ends (DELETE,
idle, shutdown) has its requests still in flight cancelled at the child. What the child sends otherwise:

- its requests (sampling, elicitation, roots/list) go to the session whose request is the newest still
  waiting (the one most likely to have caused them; else the session that sent the last request, on its
  GET stream), and the session's answer goes back to the child as it came (the child's ids are unique in it);
  a `ping` of the child is answered here; a session that ends before answering is answered for with -32000;
- `*/list_changed` goes to every session (their GET streams);
- `notifications/resources/updated` only to the sessions that subscribed to its URI (`resources/subscribe`
  is forwarded; an `unsubscribe` reaches the child only when no other session still subscribes, else it is
  answered here);
- `notifications/message` (a log line) goes to the newest waiting request's POST (the request it most
  likely belongs to) and to the GET stream of every other session of the same principal (the child's log is
  the server's, and its level is one for all: `logging/setLevel` is forwarded as it came, so the last session
  to set it sets it for every session); with no request waiting, to every session's GET stream;
- anything else goes to the newest waiting request's POST, else to every session's GET stream.

The reader never waits for one session: what it routes there is queued (`SharedBridge.deliver`) and the
session's own task writes it out as fast as its client reads; a session with more than `max_unread` bytes
queued is cut (its requests cancelled at the child, each answered with -32000, the session ended), so a
client that stops reading neither stalls the others nor grows the proxy without bound.

A child that dies fails every session's pending requests with a -32000 error naming its exit status; the
sessions live on, and the next request starts a child again (its handshake done again, the subscriptions
the sessions hold renewed), or, with `--on-upstream-exit exit`, the proxy ends with the child's status.
With no session open for `idle_timeout` seconds (`--idle-timeout`), the child is ended (`reap_idle`); the
next session's `initialize` starts one again.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from mcpframe import __version__, core, jsonrpc, protocol

from .listen_bridge import FastRoute, Route, cancel_frame
from .listen_shared_session import HANDSHAKE_ID, SharedBridge
from .listen_stateless import MAX_UNREAD
from .unreadable import answer_id, dropped_answer

if TYPE_CHECKING:
    from mcpframe._api import Id, MessageLike

    from .options import OnUpstreamExit
    from .pool import Child, ChildPool

__all__ = ["HANDSHAKE_TIMEOUT", "SharedStartError", "SharedUpstream"]

logger = logging.getLogger("mcpframe.proxy")

_PROGRESS = protocol.NOTIFICATIONS_PROGRESS
_LOG = protocol.NOTIFICATIONS_MESSAGE
_ANSWERS = frozenset(("result", "error"))
_PARAMS_TOKEN = ("params", protocol.PROGRESS_TOKEN)
_LIST_CHANGED = frozenset(
    (
        protocol.NOTIFICATIONS_TOOLS_LIST_CHANGED,
        protocol.NOTIFICATIONS_PROMPTS_LIST_CHANGED,
        protocol.NOTIFICATIONS_RESOURCES_LIST_CHANGED,
    )
)
HANDSHAKE_TIMEOUT = 60.0
"""Seconds the shared child has to answer the proxy's `initialize` (a child that starts slowly gets them)."""

_CAPABILITIES = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}


class SharedStartError(Exception):
    """The shared child did not start, or refused the proxy's `initialize`."""


class SharedUpstream:
    """The one child of the `shared` sessions: its handshake, its reader, and whose each frame is."""

    def __init__(
        self,
        pool: ChildPool,
        *,
        max_frame: int,
        spawn: Callable[..., Any],
        on_exit: OnUpstreamExit = "restart",
        stop: Callable[[int | None], None] | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        self.pool = pool
        self.max_frame = max_frame
        self.spawn = spawn  # runs the child's reader in the host's task group
        self.on_exit = on_exit
        self.stop = stop  # ends the proxy (`on_exit == "exit"`), given the child's status
        self.idle_timeout = idle_timeout  # seconds with no session before the child is ended (`reap_idle`)
        self.clock: Callable[[], float] = time.monotonic
        self.idle_since: float | None = None  # when the last session left (`None`: one is open)
        self.reaped = 0  # children ended for being idle (what tests and benchmarks read)
        self.idle_timers = 0  # `_reap_later` tasks started (one at a time runs: what tests read)
        self._timing = False  # a `_reap_later` task is running
        self.child: Child | None = None
        self.result: dict[str, Any] | None = None  # the child's initialize result
        self.version: str | None = None  # what the child negotiated
        self.ids = core.IdMap()
        self.sessions: dict[int, SharedBridge] = {}  # by connection number, the most recently active last
        # upstream token -> the POST, the client's token, its session
        self.tokens: dict[int, tuple[Route, bytes, SharedBridge]] = {}
        self.max_unread = MAX_UNREAD  # bytes queued for one session past which it is cut (`deliver`)
        self.cut_sessions = 0  # sessions cut for reading too slowly
        self.asked: dict[Id, SharedBridge] = {}  # the child's request id -> the session asked
        self.subscribers: dict[str, set[SharedBridge]] = {}  # resource URI -> the sessions subscribed
        self._conns = itertools.count(1)
        self._own = itertools.count(1)  # ids of the proxy's own requests (strings: never the IdMap's)
        self._starting = anyio.Lock()
        self._answered: anyio.Event | None = None  # the child being started answered (or its reader ended)
        self._reading: anyio.Event | None = None  # set when the reader of the latest child started has ended
        self._found: dict[int, tuple[int, Id]] = {}  # answers `_take` left to `_route`: their owners
        self._handshake: Any = None

    # ---------------------------------------------------------------- sessions

    def join(self, bridge: SharedBridge) -> int:
        """A new session: its connection number."""
        conn = next(self._conns)
        self.sessions[conn] = bridge
        self.idle_since = None
        return conn

    def active(self, bridge: SharedBridge) -> None:
        """`bridge` sent a request: it is the most recently active session."""
        conn, sessions = bridge.conn, self.sessions
        if conn in sessions and next(reversed(sessions)) != conn:  # (not once it left: it is ending)
            sessions[conn] = sessions.pop(conn)

    async def leave(self, bridge: SharedBridge, reason: str) -> None:
        """A session ended: its requests in flight are cancelled at the child, the child's requests to it
        answered with an error, its subscriptions dropped."""
        self.sessions.pop(bridge.conn, None)
        frames = [cancel_frame(uid, reason) for uid in self.ids.drop_connection(bridge.conn)]
        for rid in [rid for rid, asked in self.asked.items() if asked is bridge]:
            del self.asked[rid]
            frames.append(core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, f"{reason} before answering"))
        for uri in [uri for uri, subscribed in self.subscribers.items() if bridge in subscribed]:
            if self.unsubscribed(bridge, uri):
                frames.append(self.own_request(protocol.RESOURCES_UNSUBSCRIBE, {"uri": uri}))
        if frames:
            await self.write(b"".join(frames))
        if not self.sessions and self.idle_timeout is not None:
            self.idle_since = self.clock()
            if not self._timing:  # the running timer sees the new `idle_since` when it wakes
                self._timing = True
                self.idle_timers += 1
                self.spawn(self._reap_later)

    async def _reap_later(self) -> None:
        """The one idle timer: sleeps until `idle_timeout` after the last session left (again, for the time
        left, when sessions came and went meanwhile), then reaps; ends early once a session is open."""
        try:
            while (since := self.idle_since) is not None and not self.sessions:
                timeout = self.idle_timeout
                if timeout is None:
                    return
                left = since + timeout - self.clock()
                if left <= 0:
                    await self.reap_idle()
                    return
                await anyio.sleep(left)
        finally:
            self._timing = False

    async def reap_idle(self) -> bool:
        """End the child when no session has been open for `idle_timeout` seconds (by `clock`): with no
        session, no call is in flight either. The next `initialize` starts a child again (its handshake
        redone); ending it so is not the child dying (`--on-upstream-exit exit` does not apply). Whether
        it was ended."""
        child, since, timeout = self.child, self.idle_since, self.idle_timeout
        if child is None or self.result is None or self.sessions or since is None or timeout is None:
            return False  # none running, one starting, or a session open
        if self.clock() - since < timeout:
            return False
        self.child = self.result = None  # before the close: its reader's end is no death (`_read`)
        self.reaped += 1
        logger.debug("ending the shared upstream server: no session for %s s", timeout)
        await child.close()
        return True

    def subscribed(self, bridge: SharedBridge, uri: str) -> None:
        self.subscribers.setdefault(uri, set()).add(bridge)

    def unsubscribed(self, bridge: SharedBridge, uri: str) -> bool:
        """`bridge` no longer subscribes to `uri`: whether the child should be told (nobody else does)."""
        subscribed = self.subscribers.get(uri)
        if subscribed is None:
            return True
        subscribed.discard(bridge)
        if subscribed:
            return False
        del self.subscribers[uri]
        return True

    def own_request(self, method: str, params: Any) -> bytes:
        """A request of the proxy's own (its answer is dropped)."""
        return core.encode_request(f"{HANDSHAKE_ID}-{next(self._own)}", method, params)

    # ---------------------------------------------------------------- the child

    async def ready(self) -> Child:
        """The running child, started (and its handshake done) if there is none; `SharedStartError`."""
        child = self.child
        if child is not None and child.returncode is None and self.result is not None:
            return child
        async with self._starting:
            child = self.child
            if child is not None and child.returncode is None and self.result is not None:
                return child  # started while this waited for the lock
            if child is not None and child.returncode is None:
                await child.close()  # one whose handshake never ended (not running)
            reading = self._reading
            if reading is not None:
                # the old child's reader fails what it owed (`_died`) before a new child is started
                with anyio.move_on_after(HANDSHAKE_TIMEOUT):
                    await reading.wait()
            return await self._start()

    async def _start(self) -> Child:
        try:
            child = await self.pool.spawn()
        except OSError as exc:
            raise SharedStartError(f"the upstream server could not start ({exc})") from None
        self.child, self.result, self._handshake = child, None, None
        try:
            return await self._handshake_with(child)
        except BaseException:  # refused, or cancelled: no half-started child is left as the shared one
            with anyio.CancelScope(shield=True):
                await child.close()
            if self.child is child:
                self.child = self.result = None
            raise

    async def _handshake_with(self, child: Child) -> Child:
        answered = self._answered = anyio.Event()
        reading = self._reading = anyio.Event()
        child.output.take = self._take  # the fast path's answers are placed where the pipe read lands
        self.spawn(self._read, child, answered, reading)
        init = {
            "protocolVersion": protocol.LATEST_LEGACY,
            "capabilities": _CAPABILITIES,
            "clientInfo": {"name": "mcpframe-proxy", "version": __version__},
        }
        try:
            await child.write(core.encode_request(HANDSHAKE_ID, protocol.INITIALIZE, init))
            with anyio.move_on_after(HANDSHAKE_TIMEOUT):
                await answered.wait()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        answer = self._handshake
        result = getattr(answer, "result", None) if answer is not None else None
        if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
            await child.close()
            why = "it exited" if answer is None else f"it answered {bytes(answer.raw)[:200]!r}"
            raise SharedStartError(f"the upstream server refused the proxy's initialize ({why})")
        self.result, self.version = result, result["protocolVersion"]
        renew = [self.own_request(protocol.RESOURCES_SUBSCRIBE, {"uri": uri}) for uri in self.subscribers]
        initialized = core.encode_notification(protocol.NOTIFICATIONS_INITIALIZED)
        await child.write(b"".join((initialized, *renew)))
        return child

    async def write(self, data: bytes) -> bool:
        """Frames to the running child (none started for them); `False` when there is none."""
        child = self.child
        if child is None or child.returncode is not None:
            return False
        return await child.send(data)

    async def _read(self, child: Child, answered: anyio.Event, reading: anyio.Event) -> None:
        """Route the child's frames until it ends; then fail what it still owed every session (`answered`:
        the child's handshake event, set so that a start waiting for it stops; `reading`: set at the end)."""
        try:
            await self._read_frames(child, answered)
        finally:
            reading.set()

    async def _read_frames(self, child: Child, answered: anyio.Event) -> None:
        status: int | None = None
        served = False  # the child answered the handshake (a child that never did ends nothing)
        try:
            async for item in child.frames(max_frame=self.max_frame):
                try:
                    if isinstance(item, core.FrameError):
                        await self._unreadable(item)
                    else:
                        await self._route(item)
                except Exception:  # a bug costs that frame, never the reader every session shares
                    logger.exception("routing a frame of the shared upstream server failed")
        finally:
            with anyio.CancelScope(shield=True):
                status = await child.close()
                answered.set()
                served = self.child is child and self.result is not None
                if self.child is child:
                    await self._died(status)
        if self.on_exit == "exit" and self.stop is not None and served:
            self.stop(status)

    async def _died(self, status: int | None) -> None:
        self.child = None
        self.result = None
        why = f"the upstream server exited (status {status}) before answering"
        self.tokens.clear()
        self.asked.clear()
        self._found.clear()
        for bridge in list(self.sessions.values()):
            self.ids.drop_connection(bridge.conn)
            await bridge.fail_pending(why)

    def _take(self, item: MessageLike | core.FrameError) -> bool:
        """An answer to a request of the fast path goes to its POST at once (`ChildOutput.take`, as
        `SessionBridge._take`), its id the client's again; anything else is left to `_route`, in order (an
        answer with the session and id it was found for: `_found`)."""
        if isinstance(item, core.FrameError) or item.kind not in _ANSWERS:
            return False
        uid = item.id  # read once: each read of a core message's member is a call into the extension
        if type(uid) is not int:
            return False
        found = self.ids.discard(uid)
        if found is None:
            return True  # an answer to a request given up (cancelled, its session ended): dropped
        bridge = self.sessions.get(found[0])
        rid = found[1]
        route = bridge.pending.get(rid) if bridge is not None else None
        if type(route) is not FastRoute:
            self._found[uid] = found
            return False
        del bridge.pending[rid]  # type: ignore[union-attr]  # found: `route` is a `FastRoute`
        try:
            route.answer_now(item.with_id(rid))
        except Exception:  # a bug costs this POST, never the child's pipe read (`ChildOutput`)
            logger.exception("answering request %r failed", rid)
        return True

    async def _route(self, item: MessageLike) -> None:
        kind = item.kind
        if kind in _ANSWERS:
            rid = item.id
            if type(rid) is int:
                found = self._found.pop(rid, None) or self.ids.discard(rid)
                bridge = self.sessions.get(found[0]) if found is not None else None
                if bridge is not None:
                    await bridge.answered(item, found[1])  # type: ignore[index]  # found: not None
            elif rid == HANDSHAKE_ID:
                self._handshake = item
                if self._answered is not None:
                    self._answered.set()
            return
        if kind == "request":
            await self._ask(item)
            return
        await self._notify(item)

    async def _ask(self, item: MessageLike) -> None:
        rid = item.id
        assert rid is not None
        if item.method == protocol.PING:
            await self.write(core.encode_result(rid, {}))
            return
        route, bridge = self._newest()
        if bridge is None:
            text = "no client session is connected to ask"
            await self.write(core.encode_error(rid, jsonrpc.INTERNAL_ERROR, text))
            return
        self.asked[rid] = bridge
        stream = route.stream if route is not None else bridge.get_stream()
        bridge.deliver(stream, item.raw, response=False)

    async def _notify(self, item: MessageLike) -> None:
        method = item.method
        if method == _PROGRESS:
            params = item.params
            token = params.get(protocol.PROGRESS_TOKEN) if isinstance(params, dict) else None
            found = self.tokens.get(token) if type(token) is int else None
            if found is not None and not found[0].closed:
                span = core.value_span(item.raw, _PARAMS_TOKEN)
                assert span is not None  # the token was read from there
                raw = item.raw
                found[2].deliver(found[0].stream, raw[: span[0]] + found[1] + raw[span[1] :], response=False)
            return
        if method in _LIST_CHANGED:
            await self._everyone(item.raw)
            return
        if method == protocol.NOTIFICATIONS_RESOURCES_UPDATED:
            params = item.params
            uri = params.get("uri") if isinstance(params, dict) else None
            for bridge in list(self.subscribers.get(uri, ())) if isinstance(uri, str) else ():
                bridge.deliver(bridge.get_stream(), item.raw, response=False)
            return
        if method == protocol.NOTIFICATIONS_CANCELLED:  # the child gave up a request it asked a session
            params = item.params
            rid = params.get("requestId") if isinstance(params, dict) else None
            asked = self.asked.pop(rid, None) if isinstance(rid, int | str) else None
            if asked is not None:
                asked.deliver(asked.get_stream(), item.raw, response=False)
            return
        await self._to_newest(item.raw, log=method == _LOG)

    async def _to_newest(self, raw: bytes, *, log: bool) -> None:
        """A notification to the newest POST still waiting (else every session's GET stream); a log line
        also to every other session of that POST's principal (the child's log is the server's)."""
        route, newest = self._newest()
        if route is None or newest is None:
            await self._everyone(raw)
            return
        newest.deliver(route.stream, raw, response=False)
        if log:
            owner = newest.http.owner if newest.http is not None else None
            for bridge in list(self.sessions.values()):
                if bridge is not newest and bridge.http is not None and bridge.http.owner == owner:
                    bridge.deliver(bridge.get_stream(), raw, response=False)

    async def _everyone(self, raw: bytes) -> None:
        for bridge in list(self.sessions.values()):
            bridge.deliver(bridge.get_stream(), raw, response=False)

    def _newest(self) -> tuple[Route | None, SharedBridge | None]:
        """The newest POST still waiting (of the most recently active session that has one), and its
        session; else no POST, and the most recently active session (`None`: no session)."""
        for bridge in reversed(self.sessions.values()):
            route = bridge.newest()
            if route is not None:
                return route, bridge
        last = next(reversed(self.sessions.values()), None)
        return None, last

    async def _unreadable(self, item: core.FrameError) -> None:
        """A frame that could not be read is dropped; when its first bytes show the answer to a pending
        request (an oversize result, say), that request ends with an error now."""
        logger.warning("dropping a malformed frame from the upstream server: %s", item.message)
        uid = answer_id(item.preview)
        found = self.ids.discard(uid) if type(uid) is int else None
        bridge = self.sessions.get(found[0]) if found is not None else None
        if bridge is not None:
            rid = found[1]  # type: ignore[index]  # found: not None
            await bridge.answer_with(rid, dropped_answer(rid, item))

    async def aclose(self) -> None:
        """End the child (the proxy stops)."""
        if self.child is not None:
            await self.child.close()
