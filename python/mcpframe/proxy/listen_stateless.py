"""2026-07-28 (stateless) requests through the listening proxy: one shared upstream child for all of them.

A stateless request needs no session, so requests from every client go to one child, started on the first
and started again on the next request after it died. Ids are the clients' own, so two clients may both use
id 1: each request gets an id unique in the child, and its answer gets the client's id back. Their progress
tokens clash the same way (SDKs commonly use the request id as the token): a request's `_meta.progressToken`
reaches the child as its upstream id too, progress notifications are routed by that to the POST whose request
named it (none once that POST ended), and go out with the client's token back, byte for byte as it wrote it
(only those two values are spliced; nothing is re-encoded). A request whose `_meta` names `progressToken`
twice is refused (-32600): only one could be spliced, and a child that reads the other would route by the
client's token. Other notifications go to the newest POST still waiting. A POST whose client takes no SSE
(JSON only) can receive nothing but its answer: nothing else is kept for it.

The child's one reader serves every client, so it never waits for one. Past `CUT_AT` bytes waiting for a
client's SSE answer, the reader holds back that client's progress notifications, keeping only the newest per
token (a later value replaces one not yet sent, in the place of the first one held). They go out once the
client is back under the mark, with the next frame the child writes for any client (every frame first looks
at the clients over the mark: none, most of the time; while the child writes nothing, nothing goes out), and
always before anything else the child sends for that request (a log line, its answer): the client gets what
the child wrote in the order it was written, only fewer progress values (held progress is
sent, not dropped, before the answer or the -32000 error of a child that ended: what the client needs to know
how far the work got). A client over the mark that takes no byte of its answer for `STALL_AFTER` seconds has
stopped reading (`ClientMeter`: on Linux its socket's unacknowledged bytes tell, which fall while it reads
however slowly; elsewhere, or behind a server other than mcpframe's, the bytes its response took from the
pipe): its POST is cut (what it had not taken is dropped, a -32000 error is its answer, the request is
cancelled upstream), and the others go on being answered. A client that reads, only slower than the child
writes log lines (they are never held back: only progress has a newest value that stands for the rest), is cut
the same way once over `MAX_UNREAD` bytes wait for it (before the frame that comes), "too slow to read": the
proxy's memory for one client is bounded, and nothing is lost silently for a client that keeps up. The mark
is well above what a client that reads can have waiting (the pipe's 64 KiB limit, plus what the reader routes
from the child's pipe between two waits: about 200 KiB).

Why one shared child and not a child per request: a child per request pays a process start (tens of
milliseconds for a Python server) on every call; the shared child pays nothing, and 2026-07-28 servers keep
no per-client state between requests by design.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from mcpframe import core, jsonrpc, protocol
from mcpframe.http.asgi import HttpRequest
from mcpframe.http.headers import Accepts, mirror_mismatch
from mcpframe.http.post import Body, one_line
from mcpframe.http.responses import Answer, Reply, error_response
from mcpframe.http.streams import Stream

from .listen_bridge import Route, cancel_frame, progress_tokens
from .pool import ChildPool, PoolBusy
from .reader import odd_id, splice, with_raw_id
from .unreadable import answer_id, dropped_answer

if TYPE_CHECKING:
    from mcpframe._api import Id, MessageLike

    from .listen_posts import BridgePosts
    from .pool import Child

__all__ = ["ClientMeter", "StatelessBridge"]

logger = logging.getLogger("mcpframe.proxy")

_PROGRESS = protocol.NOTIFICATIONS_PROGRESS
_META = ("params", "_meta")
_PARAMS_TOKEN = ("params", protocol.PROGRESS_TOKEN)
_META_TOKEN = ("params", "_meta", protocol.PROGRESS_TOKEN)
_QUOTED_TOKEN = b'"%s"' % protocol.PROGRESS_TOKEN.encode()
_TWO_TOKENS = f"Invalid Request: _meta names {protocol.PROGRESS_TOKEN} more than once"
_TWO_METAS = "Invalid Request: params names _meta more than once"
_QUOTED_META = b'"_meta"'

CUT_AT = 1 << 20
"""Bytes waiting for one stateless client past which its progress is held back (see the module doc)."""

STALL_AFTER = 30.0
"""Seconds a client over `CUT_AT` may take nothing of its answer before its POST is cut (`ClientMeter`).
Long, because where the socket cannot be asked, all the proxy sees is what the response took from its pipe,
and a client that reads steadily but slowly can take nothing from there for seconds: the response's writes
go to the kernel's socket buffers (megabytes on loopback, autotuned), and a full socket is writable again
only once about a third of its buffer drained (measured: 5.6 s with nothing taken for a client at 160 KiB/s;
2 s cut it)."""


MAX_UNREAD = 8 << 20
"""Bytes waiting for one stateless client past which a log line (any message but progress, which is held
back instead) is not added: its POST is cut, "too slow to read". So a client that reads, but slower than the
child writes log lines, costs the proxy a bound (this, plus one frame, the batch its response is writing and
the socket's buffers), not everything the child writes; a client that keeps up loses nothing. Only the bytes
already waiting count, not the frame that comes: one big frame (up to `max_frame`) goes out to a client that
is merely over `CUT_AT`, instead of cutting it whatever its speed."""

_TOO_SLOW = "the proxy ended this request: its client read the answer too slowly"
_UNREAD = f"the proxy ended this request: its client is too slow to read (over {MAX_UNREAD >> 20} MiB unread)"


if sys.platform == "linux":
    import fcntl
    import termios

    def _send_queue(fd: int) -> int:
        """Bytes in the socket's send queue its peer has not acknowledged (SIOCOUTQ, alias TIOCOUTQ)."""
        return int.from_bytes(fcntl.ioctl(fd, termios.TIOCOUTQ, bytes(4)), sys.byteorder, signed=True)

else:
    _send_queue = None


class ClientMeter:
    """How far one client has got with its SSE answer: `reading()` is the bytes its response took from the
    stream's pipe, and the bytes written to its connection that it has not acknowledged yet (the transport's
    buffer plus the socket's send queue), or 0 when that is unknown: a server that names no transport (only
    mcpframe's lean server does, on the request's `receive`), a system that does not tell (not Linux).

    The socket's count is what tells a slow reader from one that stopped: the pipe is taken from in batches
    of up to megabytes, each written once the socket has room, which for a slow reader can be many seconds
    apart, while the bytes it has not acknowledged fall with every window its reading opens."""

    __slots__ = ("stream", "transport")

    def __init__(self, stream: Stream, transport: Any = None) -> None:
        self.stream = stream
        self.transport = transport

    def reading(self) -> tuple[int, int]:
        """(bytes taken from the pipe, bytes not acknowledged on the connection)."""
        return self.stream.taken(), self.unsent()

    def unsent(self) -> int:
        """Bytes written to the client's connection that it has not acknowledged (0: unknown, or none)."""
        transport = self.transport
        if transport is None or _send_queue is None:
            return 0
        try:
            if transport.is_closing():
                return 0
            queued = _send_queue(transport.get_extra_info("socket").fileno())
            size: int = transport.get_write_buffer_size()
        except (AttributeError, OSError, ValueError):  # no socket (not a socket transport), or one closed
            return 0
        return size + queued


class _Behind:
    """A client over `CUT_AT`: its meter's last reading, since when it has not moved, and the newest
    progress notification per token held back for it."""

    __slots__ = ("progress", "since", "taken", "unsent")

    def __init__(self, reading: tuple[int, int], now: float) -> None:
        self.taken, self.unsent = reading
        self.since = now
        self.progress: dict[bytes, bytes] = {}  # by the client's token, as it wrote it

    def still_reading(self, reading: tuple[int, int], now: float) -> bool:
        """Whether the client took something within the last `STALL_AFTER` seconds, by its meter's new
        `reading`: it took something since the last one if more was taken from the pipe, or fewer bytes
        are unacknowledged (only its reading lowers those; a write raises them, after a take)."""
        taken, unsent = reading
        if taken != self.taken or unsent < self.unsent:
            self.since = now
        self.taken, self.unsent = taken, unsent
        return now - self.since <= STALL_AFTER


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
        self.raw_ids: dict[int, bytes] = {}  # upstream id -> the client's id bytes, if not its encoding
        # the progress token the child got (the request's upstream id) -> the POST, and the client's own token
        # as it wrote it (two clients may both use 1)
        self.tokens: dict[Any, tuple[Route, bytes]] = {}
        self.json_only: set[Route] = set()  # POSTs that take no SSE: no notification can ever reach them
        self.behind: dict[Route, _Behind] = {}  # POSTs whose client is over `CUT_AT`
        self.meters: dict[Route, ClientMeter] = {}  # POSTs whose client takes SSE
        self.clock: Callable[[], float] = time.monotonic

    async def handle(self, request: HttpRequest, body: Body, accepts: Accepts, posts: BridgePosts) -> Answer:
        """Answer one stateless request through the shared child."""
        message = body.requests[0]
        why = mirror_mismatch(request.headers, message.method or "", message.params)
        if why is not None:
            return error_response(400, why, code=jsonrpc.HEADER_MISMATCH, rid=message.id)
        assert message.id is not None
        upstream = next(self._ids)
        try:
            frame, token = _for_child(message, upstream)
        except ValueError as exc:
            return error_response(400, str(exc), rid=message.id)
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
        route = Route(Stream(None, None), [upstream], [] if token is None else [upstream])
        route.on_close.append(slot.release)
        route.on_close.append(lambda: self._forget(route, upstream))
        self.pending[upstream] = (route, message.id)
        if (raw_id := odd_id(message)) is not None:
            self.raw_ids[upstream] = raw_id
        if token is not None:
            self.tokens[upstream] = (route, token)
        if not accepts.sse:
            self.json_only.add(route)
        else:
            # mcpframe's lean server names the connection's transport on `receive` (as `on_disconnect`)
            transport = getattr(request.receive, "transport", None)
            self.meters[route] = ClientMeter(route.stream, transport)
        try:
            await child.write(one_line(frame))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            route.close()
            return error_response(502, "Bad Gateway: the upstream server exited", rid=message.id)
        return await posts.answer(route, None, accepts, {}, _Abandon(self, upstream), receive=request.receive)

    def _forget(self, route: Route, upstream: int) -> None:
        self.pending.pop(upstream, None)
        if self.raw_ids:
            self.raw_ids.pop(upstream, None)
        self.json_only.discard(route)
        self.behind.pop(route, None)
        self.meters.pop(route, None)
        for token in route.tokens:
            found = self.tokens.get(token)
            if found is not None and found[0] is route:
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
                else:
                    await self._unreadable(item)
        finally:
            with anyio.CancelScope(shield=True):
                status = await child.close()
                if self.child is child:
                    self.child = None
                for upstream, (route, rid) in list(self.pending.items()):
                    await self._flush(route)  # the child wrote it before it ended: it goes out first
                    text = f"the upstream server exited (status {status}) before answering request {rid!r}"
                    error = core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, text)
                    await route.stream.emit(with_raw_id(error, self.raw_ids.get(upstream)), response=True)
                    route.close()

    async def _unreadable(self, item: core.FrameError) -> None:
        """A frame of the child's that could not be read is dropped; when its first bytes show the answer to
        a pending request (an oversize result, say), that request ends with an error now."""
        logger.warning("dropping a malformed frame from the upstream server: %s", item.message)
        uid = answer_id(item.preview)
        if not isinstance(uid, int) or (found := self.pending.get(uid)) is None:
            return
        route, rid = found
        await self._flush(route)
        error = dropped_answer(rid, item)
        await route.stream.emit(with_raw_id(error, self.raw_ids.get(uid)), response=True, wait=False)
        route.close()

    async def _route(self, item: MessageLike) -> None:
        if self.behind:
            await self._release()
        if item.kind in ("result", "error"):
            found = self.pending.get(item.id) if isinstance(item.id, int) else None
            if found is None:
                return
            route, rid = found
            await self._flush(route)  # the progress held back for it goes out before its answer
            raw_id = self.raw_ids.get(item.id) if self.raw_ids else None  # type: ignore[arg-type]
            answer = item.with_id(rid) if raw_id is None else with_raw_id(item.raw, raw_id)
            await route.stream.emit(answer, response=True, wait=False)
            route.close()
        else:
            await self._notify(item)

    def _target(self, item: MessageLike) -> tuple[Route | None, bytes | None]:
        """The POST a notification goes to, and for progress its client's token (`None`: not progress)."""
        if item.method == _PROGRESS:
            params = item.params
            token = params.get(protocol.PROGRESS_TOKEN) if isinstance(params, dict) else None
            # a malformed token (a list: unhashable) must not end the reader every client shares; nor is
            # `true` the token 1 (they hash alike)
            found = self.tokens.get(token) if type(token) is int or type(token) is str else None
            return found if found is not None else (None, None)
        return (next(reversed(self.pending.values()))[0] if self.pending else None), None

    async def _notify(self, item: MessageLike) -> None:
        target, token = self._target(item)
        if target is None or target.closed or target in self.json_only:
            return  # a client that takes no SSE gets its answer alone: nothing is kept for it
        raw = item.raw
        if token is not None:
            span = core.value_span(raw, _PARAMS_TOKEN)
            assert span is not None  # the token was read from there
            raw = splice(raw, span, token)
        stream = target.stream
        if stream.held() <= CUT_AT:
            await self._flush(target)
            await stream.emit(raw, response=False, wait=False)
            return
        meter = self.meters.get(target) or ClientMeter(stream)
        behind = self.behind.get(target)
        if behind is None:
            behind = self.behind[target] = _Behind(meter.reading(), self.clock())
        elif not behind.still_reading(meter.reading(), self.clock()):
            await self._cut(target, _TOO_SLOW)  # over the mark and took nothing for that long: it stopped
            return
        if token is not None:
            # replaces the earlier value it has not been sent, in its place: held tokens go out in the
            # order they were first held
            behind.progress[token] = raw
        elif stream.held() > MAX_UNREAD:  # what waits already: the frame itself may be big
            await self._cut(target, _UNREAD)  # reading, but the child outwrites it without bound
        else:
            await self._send_held(target, behind)  # what the child wrote before this goes out first
            await stream.emit(raw, response=False, wait=False)

    async def _release(self) -> None:
        """Send the progress held back for the clients that caught up (back under the mark)."""
        for route in [route for route in self.behind if route.stream.held() <= CUT_AT]:
            await self._flush(route)

    async def _flush(self, route: Route) -> None:
        """Send the progress held back for a client that was over the mark (it is no longer behind)."""
        behind = self.behind.pop(route, None)
        if behind is not None:
            await self._send_held(route, behind)

    @staticmethod
    async def _send_held(route: Route, behind: _Behind) -> None:
        held, behind.progress = behind.progress, {}
        for raw in held.values():
            await route.stream.emit(raw, response=False, wait=False)

    async def _cut(self, route: Route, text: str) -> None:
        """End the POST of a client that stopped reading, or reads too slowly (its answer: an error with
        `text`, after nothing else: what it had not taken is dropped) and cancel its request upstream,
        rather than have the child's reader, every client's, wait for that one."""
        route.stream.drop_unsent()
        for upstream, (pending, rid) in list(self.pending.items()):
            if pending is route:
                error = core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, text)
                await route.stream.emit(
                    with_raw_id(error, self.raw_ids.get(upstream)), response=True, wait=False
                )
                route.close()
                # in a task: a write to the child waits while the child waits for this reader
                self.spawn(self._cancel, upstream, "the HTTP client read too slowly")

    async def _cancel(self, upstream: int, reason: str) -> None:
        child = self.child
        if child is not None:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await child.write(cancel_frame(upstream, reason))

    async def abandon(self, upstream: int) -> None:
        """The client left before its answer: cancel the request upstream."""
        found = self.pending.get(upstream)
        if found is not None:
            found[0].close()
            await self._cancel(upstream, "the HTTP client disconnected")

    async def aclose(self) -> None:
        """End the shared child (the proxy stops)."""
        if self.child is not None:
            await self.child.close()


def _for_child(message: MessageLike, upstream: int) -> tuple[bytes, bytes | None]:
    """The request as the shared child gets it: its id, and its progress token if it names one, both
    `upstream` (unique among the child's requests); and that token as the client wrote it (`None`: none).
    `ValueError` when its `_meta` names the token more than once, or its `params` name `_meta` more than
    once: only the last would be rewritten, and a child that reads the first would route its progress by
    the client's own token."""
    frame = message.with_id(upstream)
    # `_meta` twice in `params`: the decoded message holds the last, a child that keeps the first would
    # route progress by the client's own token (or by one this never saw). Only a `\u` escape can spell
    # its letters otherwise, so only then, or when it is written twice, are the params looked at again
    if frame.count(_QUOTED_META) > 1 or frame.find(b"\\u") >= 0:
        params = core.value_span(frame, ("params",))
        obj = b"" if params is None else frame[params[0] : params[1]]
        if obj[:1] == b"{" and _named_twice(obj, "_meta"):
            raise ValueError(_TWO_METAS)
    if not progress_tokens([message]):
        return frame, None
    token = core.value_span(frame, _META_TOKEN)  # one look (a decode) of the frame: the id is spliced already
    assert token is not None  # the token was read from there
    # Written once in the whole frame and nowhere escaped, it cannot be named twice in `_meta`: only
    # otherwise is the `_meta` looked at again (a second decode)
    if frame.find(b"\\") >= 0 or frame.count(_QUOTED_TOKEN) > 1:
        meta = core.value_span(frame, _META)
        assert meta is not None
        if _named_twice(frame[meta[0] : meta[1]], protocol.PROGRESS_TOKEN):
            raise ValueError(_TWO_TOKENS)
    return splice(frame, token, b"%d" % upstream), frame[token[0] : token[1]]


def _named_twice(obj: bytes, key: str) -> bool:
    """Whether the JSON object `obj` (valid) has more than one member named `key`, escaped or not."""
    quoted = b'"%s"' % key.encode()
    if b"\\" not in obj and obj.count(quoted) <= 1:
        return False  # nothing escaped: each member named `key` has it as written, and it is there once
    found: list[list[tuple[str, Any]]] = []  # each object's members, the inner ones first: `obj`'s last
    json.loads(obj, object_pairs_hook=found.append)
    return sum(1 for name, _ in found[-1] if name == key) > 1


class _Abandon:
    """`BridgePosts.answer`'s hook for a dropped stream, bound to one stateless request."""

    def __init__(self, bridge: StatelessBridge, upstream: int) -> None:
        self._bridge = bridge
        self._upstream = upstream

    async def abandon(self, route: Route) -> None:
        await self._bridge.abandon(self._upstream)
