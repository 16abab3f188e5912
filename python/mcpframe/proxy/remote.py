"""`mcpframe proxy https://host/mcp`: this process's stdin/stdout (one stdio client) to a remote server.

```python
from mcpframe.proxy.remote import fast_lane, proxy_remote, remote_transport

async with remote_transport("https://host/mcp", {"Authorization": "Bearer T"}) as remote:
    await proxy_remote(stdio, remote, lane=fast_lane(remote))  # stdio: a ByteTransport (stdio_server())
```

The remote side is `mcpframe.http`'s client transport: `AutoTransport` speaks Streamable HTTP and falls back
to the legacy HTTP+SSE transport when the server only has that. `options.headers` go with every request.
Frames are forwarded as bytes both ways: what the client writes is posted as it came (only its envelope is
read, to refuse a malformed frame with the JSON-RPC error the stdio rules ask for and to count requests in
flight); what the server sends on POST answers and the GET/SSE stream (responses, its requests for sampling,
elicitation and roots, notifications) is written to stdout. A refused or failed request (401, 403, 404, 5xx,
no connection) gets an error answer whose message names the HTTP status; an expired session is
re-initialized by the transport, once, with the client's own `initialize`.

Flow control: at most `max_in_flight` requests are posted and unanswered at once. Past it, stdin is still
read (as the Session's `Intake` does): the requests read wait in a backlog, in order, and are posted as
answers free room; what is read past them goes on at once: answers to the server's requests (the tools in
flight may be waiting for them: sampling, elicitation, roots) and notifications (a `notifications/cancelled`
naming a waiting request drops it, and neither it nor the cancel reaches the server). The backlog is
bounded: once `max_backlog` requests (default `max_in_flight`) wait, stdin is not read until one is posted,
so at most `max_backlog` requests plus those of one read (a chunk of stdin) are held. A client that queues
more requests than both bounds ahead of its answers still waits for the tools' own timeouts. At the client's
end of input what was read is still posted and answered (within `drain_timeout`), the session is ended
(DELETE) and the proxy exits 0.

Cancellation: a `notifications/cancelled` the client sends for a request in flight is posted to the server
(the transport then stops reading that request's answer; the request keeps its place in flight until the
transport posted the cancel, which it may hold back while it writes the request, so the request waiting
for that place is not posted while the cancelled one's exchange still runs), and from the moment the proxy
read it no answer to that request is written to the client, even one that crossed the cancel (the spec: a
cancelled request gets no response). A request the fast lane had not posted yet (waiting for a connection),
or whose stream it had queued for the transport to resume, is not posted or resumed.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import anyio
import anyio.abc

from mcpframe import core, protocol
from mcpframe._api import MessageLike
from mcpframe.session.batch import error_answer

from .options import ProxyOptions

__all__ = ["ByteTransport", "Lane", "fast_lane", "proxy_remote", "run_remote"]

logger = logging.getLogger("mcpframe.proxy")

MAX_IN_FLIGHT = 64
"""Requests posted to the remote server and not answered yet; past it requests wait in the backlog (as many
again at most, then the proxy stops reading stdin: see the module doc). Each
holds a connection of the HTTP client while it waits (the lean client sends one request per connection;
httpx's pool queues past 100 at a cost that grows with the queue), so it stays below their 100. Measured
with 5,000 pipelined calls: 16, 64 and 100 cost the proxy the same CPU per call (~180-220 µs)."""


CANCELLED_KEPT = 1024
"""Ids of cancelled requests remembered so that a late answer to one is not written (at least
`max_in_flight`)."""

DRAIN_TIMEOUT = 10.0
"""Seconds the requests in flight at the client's end of input get to be answered before the proxy ends."""


class ByteTransport(Protocol):
    """What the proxy needs of each side: NDJSON bytes in and out (`b""` at the end)."""

    async def receive(self) -> bytes: ...

    async def send(self, data: bytes) -> None: ...


class _InFlight:
    """The client's requests waiting for their answers, bounded (see the module's docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ids: set[Any] = set()
        self._room = anyio.Event()
        self.idle = anyio.Event()

    def add(self, rid: Any) -> None:
        self.ids.add(rid)
        if self.idle.is_set():
            self.idle = anyio.Event()

    def done(self, rid: Any) -> None:
        self.ids.discard(rid)
        if len(self.ids) < self.limit:
            self._room.set()
        if not self.ids:
            self.idle.set()

    def note(self, message: MessageLike) -> None:
        """A request from the client: it counts until answered, or until its cancel was sent on."""
        if message.kind == "request":
            self.add(message.id)

    @property
    def full(self) -> bool:
        return len(self.ids) >= self.limit

    async def wait_for_room(self) -> None:
        while len(self.ids) >= self.limit:
            self._room = anyio.Event()
            await self._room.wait()


class _Cancelled:
    """The requests the client cancelled while in flight: an answer to one of them that still comes from
    the transport is not written (the fast lane drops its own: `Lane.withdraw`). Bounded: past `limit` ids
    the oldest is forgotten. (The transport reads a request's answer until it has posted its cancel, which
    it holds back while the request is being written; the request keeps its place in `_InFlight` until
    then, so answers can come for at most `max_in_flight` cancelled ids at once, and `limit` is at least
    that. Past `limit`, the answer to the oldest would reach the client, which ignores an answer to a
    request it cancelled.)"""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ids: dict[Any, None] = {}  # in the order cancelled

    def add(self, rid: Any) -> None:
        self.ids[rid] = None
        if len(self.ids) > self.limit:
            del self.ids[next(iter(self.ids))]

    def drop(self, data: bytes, in_flight: _InFlight) -> bytes:
        """`data` (NDJSON frames from the server) without the answers to cancelled requests (each such id
        is then forgotten); the other answers end their request's count in `in_flight`."""
        found = False
        for item in _frames(data):
            if not isinstance(item, core.FrameError) and item.kind in ("result", "error"):
                if item.id in self.ids:
                    found = True
                else:
                    in_flight.done(item.id)
        if not found:
            return data
        kept: list[bytes] = []
        for line in data.splitlines(keepends=True):
            rid = _answered_id(line)
            if rid is not None and rid in self.ids:
                del self.ids[rid]
                continue
            kept.append(line)
        return b"".join(kept)


def _frames(data: bytes) -> Sequence[MessageLike | core.FrameError]:
    return core.Decoder(lazy=True).feed(data if data.endswith(b"\n") else data + b"\n")


def _answered_id(line: bytes) -> Any:
    """The id of the answer that NDJSON `line` is (`None`: something else)."""
    items = _frames(line) if line.strip() else ()
    item = items[0] if len(items) == 1 else None
    if item is None or isinstance(item, core.FrameError) or item.kind not in ("result", "error"):
        return None
    return item.id


class Lane(Protocol):
    """A fast lane for some requests (`mcpframe.http.client_fast.FastLane`): it posts them itself and
    writes their answers through `run`; `withdraw(id)`: the client cancelled that request (called before
    the cancel is posted), nothing more of it is written."""

    def accepts(self, message: MessageLike) -> bool: ...

    async def post(self, message: MessageLike) -> None: ...

    def withdraw(self, rid: Any) -> None: ...

    async def run(
        self, write: Callable[[bytes], Awaitable[None]], answered: Callable[[Any], None]
    ) -> None: ...


class _Backlog:
    """The client's requests read while `in_flight` is full: posted in order as room comes (by `run`).

    Reading stdin goes on meanwhile (the answers a tool in flight waits for are behind them) until
    `limit` requests wait; the caller then stops reading until one is posted."""

    def __init__(self, in_flight: _InFlight, limit: int, post: Callable[[MessageLike], Awaitable[None]]):
        self.in_flight = in_flight
        self.limit = limit
        self.waiting: deque[MessageLike] = deque()
        self.posting = False  # `run` holds a request it is posting
        self.closed = False  # the client's input ended: `run` returns once the backlog is empty
        self._post = post
        self._wake = anyio.Event()
        self._room = anyio.Event()
        self.done = anyio.Event()
        """Set once `run` returned (closed and every waiting request posted)."""

    @property
    def clear(self) -> bool:
        """Whether a request just read may be posted at once (nothing before it waits)."""
        return not self.waiting and not self.posting and not self.in_flight.full

    def add(self, message: MessageLike) -> None:
        self.waiting.append(message)
        self._wake.set()

    def cancel(self, rid: Any) -> bool:
        """Drop waiting request `rid` (the server never saw it: neither it nor its cancel is sent)."""
        for message in self.waiting:
            if message.id == rid:
                self.waiting.remove(message)
                self._room.set()
                return True
        return False

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def wait_for_room(self) -> None:
        """Until fewer than `limit` requests wait."""
        while len(self.waiting) >= self.limit:
            self._room = anyio.Event()
            await self._room.wait()

    async def run(self) -> None:
        """Post the waiting requests from the head as the bound allows; return once closed and empty."""
        while True:
            if not self.waiting:
                if self.closed:
                    self.done.set()
                    return
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            await self.in_flight.wait_for_room()
            if not self.waiting:  # its head was cancelled meanwhile
                continue
            message = self.waiting.popleft()
            self._room.set()
            self.posting = True
            try:
                self.in_flight.note(message)
                await self._post(message)
            finally:
                self.posting = False


async def _client_to_server(
    client: ByteTransport,
    server: ByteTransport,
    in_flight: _InFlight,
    lane: Lane | None,
    backlog: _Backlog,
    *,
    cancelled: _Cancelled,
    tg: anyio.abc.TaskGroup,
) -> None:
    """What the client writes, posted frame by frame as it came (the lane's requests by the lane);
    malformed frames answered here. A request past the in-flight bound waits in `backlog` (module doc)."""
    decoder = core.Decoder(lazy=True)
    out = _Outgoing(server, in_flight, tg)
    while True:
        await backlog.wait_for_room()  # past the backlog's bound, stdin is not read
        chunk = await client.receive()
        if not chunk:
            return
        for item in decoder.feed(chunk):
            if isinstance(item, core.FrameError):
                if not item.notification:  # answered as a stdio server would; never sent on broken
                    await client.send(error_answer(item))
                continue
            if item.kind == "request":
                if not backlog.clear:
                    await out.flush()  # what came before it goes first
                    backlog.add(item)
                    continue
                in_flight.note(item)
                if lane is not None and lane.accepts(item):
                    await out.flush()  # what came before it goes first
                    await lane.post(item)
                    continue
            elif not _passes(item, in_flight=in_flight, backlog=backlog, cancelled=cancelled, lane=lane):
                continue
            out.add(item.raw + b"\n", _settles(item, cancelled))
        await out.flush()


def _passes(
    message: MessageLike, *, in_flight: _InFlight, backlog: _Backlog, cancelled: _Cancelled, lane: Lane | None
) -> bool:
    """A notification or response from the client, noted; whether it goes on to the server (not a cancel
    of a request still in the backlog: neither goes)."""
    if message.method == protocol.NOTIFICATIONS_CANCELLED:
        rid = _cancelled_id(message)
        if backlog.cancel(rid):
            return False
        if rid in in_flight.ids:  # no answer to it is written from now on
            cancelled.add(rid)
            if lane is not None:
                lane.withdraw(rid)
    return True


def _settles(message: MessageLike, cancelled: _Cancelled) -> int | str | None:
    """The request a cancel on its way names, if it was in flight (`_passes` noted it), else `None`."""
    if message.method != protocol.NOTIFICATIONS_CANCELLED:
        return None
    rid = _cancelled_id(message)
    return rid if rid in cancelled.ids else None


def _cancelled_id(message: MessageLike) -> int | str | None:
    """The id a cancel names (`None` for anything that cannot be a request's id)."""
    params = message.params
    rid = params.get("requestId") if isinstance(params, dict) else None
    return rid if isinstance(rid, int | str) else None


class _Outgoing:
    """The client's frames for the server transport, sent together (`flush`).

    A request cancelled in flight keeps its place in `in_flight` until the transport posted its cancel (the
    transport runs the request's exchange until then: it posts the cancel, then closes the request's
    stream), so the backlog's next request does not make it run more than `max_in_flight` exchanges. The
    transport holds the cancel of a request it is still writing in a task of its own until the request was
    written (its `send` returns at once, so the client's other frames are not held up): its `held_cancel`
    then says when the place is free, and a task here waits for it. A request none of which was sent is
    dropped with its cancel, its exchange ended, before `send` returns."""

    def __init__(self, server: ByteTransport, in_flight: _InFlight, tg: anyio.abc.TaskGroup) -> None:
        self.server = server
        self.in_flight = in_flight
        self.tg = tg
        self.held: Callable[[Any], anyio.Event | None] | None = getattr(server, "held_cancel", None)
        self.frames: list[bytes] = []
        self.settling: list[Any] = []  # requests whose cancel is in `frames`

    def add(self, frame: bytes, settles: Any = None) -> None:
        """Queue `frame`; `settles`: the request in flight it cancels (`None`: none)."""
        self.frames.append(frame)
        if settles is not None:
            self.settling.append(settles)

    async def flush(self) -> None:
        frames, settling = self.frames, self.settling
        if frames:
            data = b"".join(frames)
            frames.clear()
            await self.server.send(data)
        for rid in settling:
            taken = None if self.held is None else self.held(rid)
            if taken is None:
                self.in_flight.done(rid)
            else:
                self.tg.start_soon(self._done_once, taken, rid)
        settling.clear()

    async def _done_once(self, taken: anyio.Event, rid: Any) -> None:
        await taken.wait()
        self.in_flight.done(rid)


async def _server_to_client(
    server: ByteTransport, client: ByteTransport, in_flight: _InFlight, cancelled: _Cancelled
) -> None:
    """What the server sends, to the client as it came; answers free their place in flight, and those to
    cancelled requests are not written."""
    while True:
        data = await server.receive()
        if not data:
            return
        if in_flight.ids or cancelled.ids:
            data = cancelled.drop(data, in_flight)
            if not data:
                continue
        await client.send(data)


async def proxy_remote(
    client: ByteTransport,
    server: ByteTransport,
    *,
    max_in_flight: int = MAX_IN_FLIGHT,
    max_backlog: int | None = None,
    drain_timeout: float = DRAIN_TIMEOUT,
    lane: Lane | None = None,
) -> None:
    """Forward between `client` and `server` until the client's input ends (then the requests read get up
    to `drain_timeout` seconds to be posted and answered) or the server's does. At most `max_in_flight`
    requests are unanswered, at most `max_backlog` (default: `max_in_flight`) wait for room before stdin is
    no longer read (module doc). `lane`: the requests it accepts are posted there and their answers written
    by it (`fast_lane`)."""
    in_flight = _InFlight(max_in_flight)
    cancelled = _Cancelled(max(CANCELLED_KEPT, max_in_flight))

    async def post(message: MessageLike) -> None:  # a request that waited in the backlog
        if lane is not None and lane.accepts(message):
            await lane.post(message)
        else:
            await server.send(message.raw + b"\n")

    backlog = _Backlog(in_flight, max_in_flight if max_backlog is None else max_backlog, post)
    async with anyio.create_task_group() as tg:
        tg.start_soon(backlog.run)
        if lane is not None:
            tg.start_soon(lane.run, client.send, in_flight.done)

        async def from_server() -> None:
            await _server_to_client(server, client, in_flight, cancelled)
            tg.cancel_scope.cancel()  # the remote side ended: nothing more can be answered

        tg.start_soon(from_server)
        await _client_to_server(client, server, in_flight, lane, backlog, cancelled=cancelled, tg=tg)
        # end of input: what was read is still posted and answered (as a stdio server answers what it read)
        backlog.close()
        with anyio.move_on_after(drain_timeout):
            await backlog.done.wait()
            if in_flight.ids:
                await in_flight.idle.wait()
        tg.cancel_scope.cancel()


def remote_transport(url: str, headers: Mapping[str, str]) -> Any:
    """The client transport to `url` (Streamable HTTP, or legacy SSE detected), sending `headers`."""
    from mcpframe.http.client_sse_auto import AutoTransport  # noqa: PLC0415 - the http extra

    return AutoTransport(url, headers=dict(headers))


def fast_lane(remote: Any) -> Lane | None:
    """The fast lane of `remote_transport`'s transport (its Streamable HTTP side), unless
    `MCPFRAME_PROXY_FAST_LANE=0` (every request then takes the transport's full path)."""
    from mcpframe.http.client_fast import FastLane  # noqa: PLC0415 - the http extra
    from mcpframe.http.client_sse_auto import AutoTransport  # noqa: PLC0415

    if os.environ.get("MCPFRAME_PROXY_FAST_LANE", "1") == "0" or not isinstance(remote, AutoTransport):
        return None
    return FastLane(remote.streamable, max_open=max(MAX_IN_FLIGHT, 1))


async def _serve_remote(options: ProxyOptions) -> None:
    from mcpframe.transports.stdio import stdio_server  # noqa: PLC0415

    assert options.url is not None
    async with stdio_server() as stdio, remote_transport(options.url, options.headers) as remote:
        await proxy_remote(stdio, remote, lane=fast_lane(remote))


def run_remote(options: ProxyOptions) -> int:
    """`mcpframe proxy URL`: forward this process's stdio to the remote server until stdin ends; 0 then."""
    if options.url is None or not options.url.startswith(("http://", "https://")):
        print(f"mcpframe proxy: {options.url!r} is not an http:// or https:// URL", file=sys.stderr)
        return 2
    try:
        anyio.run(_serve_remote, options)
    except KeyboardInterrupt:
        return 130
    return 0
