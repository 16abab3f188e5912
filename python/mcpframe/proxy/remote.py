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
more requests than both bounds ahead of its answers still waits for the tools' own timeouts.

Batches: a JSON-RPC batch from the client is posted as one (`BatchTransport.send_batch`) where the session
negotiated 2025-03-26, else element by element; either way the client gets one array (`remote_batch`).

The handshake: a client may write `notifications/initialized` and its first calls without waiting for the
answer to its `initialize`, but the server gives the session (`Mcp-Session-Id`) with that answer and
refuses with 400 what comes without it. So everything read after a handshake-era `initialize` is held, in
order, until its answer (or error) was written to stdout, then sent as if just read (`remote_queue.Handshake`;
at most `max_backlog` frames held, then stdin is not read until they went). The 2026-07-28 era has no
`initialize` and no session (its messages carry their version): nothing is held there.

The end: at the client's end of input what was read is still posted and answered: the proxy waits up to
`drain_timeout` (10 s) for the handshake's held frames to go, the backlog to be posted and every request
in flight to be answered. An answer counts as answered once written to stdout, never before, so the exit
cannot cut off an answer being written. Past the grace, each request still owed an answer (in flight,
waiting in the backlog or held) gets a `-32000` error saying no answer came within it; when the remote side
ends first (its transport closed), the requests in flight get one saying so. Then the session is ended
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any, Final, Protocol

import anyio
import anyio.abc

from mcpframe import core, jsonrpc, protocol
from mcpframe._api import MessageLike
from mcpframe.session.batch import error_answer
from mcpframe.transports.base import TransportClosedError

from .options import ProxyOptions
from .remote_batch import BatchAnswers, duplicate_id_answer
from .remote_queue import Backlog, Cancelled, Handshake, InFlight, opens_session

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


class BatchTransport(ByteTransport, Protocol):
    """A server side that can post a JSON-RPC batch whole (`StreamableHTTPTransport.send_batch`), while
    `batches` holds (the session negotiated 2025-03-26)."""

    @property
    def batches(self) -> bool: ...

    async def send_batch(self, data: bytes, ids: Sequence[Any]) -> None: ...


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


_ALONE: Final = frozenset({protocol.INITIALIZE, protocol.NOTIFICATIONS_CANCELLED})
"""Methods that keep a batch from being posted whole: each needs the proxy's own bookkeeping."""


class _Reader:
    """The client's side: what it writes, posted frame by frame as it came (the lane's requests by the
    lane; a batch whole where the session allows it: `_batch`); malformed frames answered here. A request
    past the in-flight bound waits in `backlog`; in the handshake era what follows an `initialize` waits in
    `handshake` for its answer (module doc)."""

    def __init__(
        self,
        client: ByteTransport,
        server: ByteTransport,
        in_flight: InFlight,
        lane: Lane | None,
        backlog: Backlog,
        *,
        cancelled: Cancelled,
        answers: BatchAnswers,
        tg: anyio.abc.TaskGroup,
        max_held: int,
    ) -> None:
        self.client = client
        self.answers = answers
        self.whole: BatchTransport | None = server if hasattr(server, "send_batch") else None  # type: ignore[assignment]
        self.in_flight = in_flight
        self.lane = lane
        self.backlog = backlog
        self.cancelled = cancelled
        self.out = _Outgoing(server, in_flight, tg)
        self.handshake = Handshake(max_held, lambda: tg.start_soon(self._replay))
        # the reader and the replay of held frames dispatch in turn (one `out`, one order); uncontended
        # but for a replay, so the reader's turn costs no loop turn
        self._turn = anyio.Lock(fast_acquire=True)

    async def run(self) -> None:
        """Until the client's input ends."""
        decoder = core.Decoder(lazy=True)
        handshake = self.handshake
        while True:
            await self.backlog.wait_for_room()  # past the backlog's bound, stdin is not read
            await handshake.wait_for_room()  # nor past the handshake's
            chunk = await self.client.receive()
            if not chunk:
                return
            async with self._turn:
                await self._take(decoder.feed(chunk), decoder.max_frame)
                await self.out.flush()
                await self.answers.flush()  # a batch a cancel completed

    async def _take(self, items: Sequence[MessageLike | core.FrameError], max_frame: int) -> None:
        """What one read of stdin completed, in order; a batch's elements (all in `items`: a batch is one
        line) go together (`_batch`)."""
        batch: list[MessageLike | core.FrameError] = []
        for item in items:
            if item.batch is not None:
                if item.batch == 0 and batch:  # the next batch begins
                    await self._batch(batch, max_frame)
                    batch = []
                batch.append(item)
                continue
            if batch:
                await self._batch(batch, max_frame)
                batch = []
            if isinstance(item, core.FrameError):
                if not item.notification:  # answered as a stdio server would; never sent on broken
                    await self.client.send(error_answer(item, max_frame=max_frame))
            elif self.handshake.engaged:
                self.handshake.hold(item)
            else:
                await self._dispatch(item)
        if batch:
            await self._batch(batch, max_frame)

    async def _batch(self, elements: list[MessageLike | core.FrameError], max_frame: int) -> None:
        """One batch of the client's, its elements in order: answered with one array (`BatchAnswers`), the
        invalid elements' errors in it; posted whole where the session allows batches (2025-03-26) and
        nothing holds its requests back (`_whole`), else element by element, each as if it came alone."""
        errors = [
            error_answer(item, max_frame=max_frame)
            for item in elements
            if isinstance(item, core.FrameError) and not item.notification
        ]
        messages = self._unique([item for item in elements if not isinstance(item, core.FrameError)], errors)
        requests = [message.id for message in messages if message.kind == "request"]
        self.answers.open(requests, errors)
        if self.whole is not None and self._whole(messages, len(requests)):
            for message in messages:
                self.in_flight.note(message)
            await self.out.flush()  # what came before it goes first
            await self.whole.send_batch(
                b"[" + b",".join(message.raw for message in messages) + b"]", requests
            )
        else:
            for message in messages:
                if self.handshake.engaged:
                    self.handshake.hold(message)
                else:
                    await self._dispatch(message)
        await self.answers.flush()

    def _unique(self, messages: list[MessageLike], errors: list[bytes]) -> list[MessageLike]:
        """`messages` but the requests whose id is already in use (repeated in the batch, or held by a
        request in flight or another batch's): JSON-RPC ids are unique among a client's open requests, so
        such a request is not forwarded; it is answered in the batch's array with a `-32600` error
        (appended to `errors`), the stdio proxy's answer to a duplicate id."""
        taken = self.in_flight.ids
        held = self.answers.of
        seen: set[Any] = set()
        kept: list[MessageLike] = []
        for message in messages:
            if message.kind == "request":
                rid = message.id
                if rid in seen or rid in taken or rid in held:
                    errors.append(duplicate_id_answer(rid))
                    continue
                seen.add(rid)
            kept.append(message)
        return kept

    def _whole(self, messages: list[MessageLike], requests: int) -> bool:
        """Whether a batch of `messages` (`requests` of them requests) is posted whole: the remote session
        takes batches, nothing before it waits, its requests fit in flight, and none needs the proxy's own
        bookkeeping (an `initialize`, a cancel)."""
        return (
            requests > 0
            and self.whole is not None
            and self.whole.batches
            and not self.handshake.engaged
            and self.backlog.clear
            and len(self.in_flight.ids) + requests <= self.in_flight.limit
            and not any(message.method in _ALONE for message in messages)
        )

    async def _replay(self) -> None:
        """The held frames, dispatched in order once the `initialize` they wait for was answered."""
        handshake = self.handshake
        async with self._turn:
            try:
                while True:
                    while (item := handshake.take()) is not None:
                        await self._dispatch(item)
                    await self.out.flush()
                    if handshake.waiting or not handshake.held:  # else: answered during the flush
                        break
            finally:
                handshake.replayed()

    async def _dispatch(self, item: MessageLike) -> None:
        in_flight, lane, backlog, out = self.in_flight, self.lane, self.backlog, self.out
        if item.kind == "request":
            if opens_session(item):  # it goes now; what follows waits for its answer (the session)
                self.handshake.engage(item.id)
            if not backlog.clear:
                await out.flush()  # what came before it goes first
                backlog.add(item)
                return
            in_flight.note(item)
            if lane is not None and lane.accepts(item):
                await out.flush()  # what came before it goes first
                await lane.post(item)
                return
        elif not _passes(
            item,
            in_flight=in_flight,
            backlog=backlog,
            cancelled=self.cancelled,
            lane=lane,
            answers=self.answers,
        ):
            return
        out.add(item.raw + b"\n", _settles(item, self.cancelled))
        if self.handshake.waiting:
            await out.flush()  # the `initialize` goes before anything is held


def _passes(
    message: MessageLike,
    *,
    in_flight: InFlight,
    backlog: Backlog,
    cancelled: Cancelled,
    lane: Lane | None,
    answers: BatchAnswers,
) -> bool:
    """A notification or response from the client, noted; whether it goes on to the server (not a cancel
    of a request still in the backlog: neither goes). A cancelled request's batch does not wait for it."""
    if message.method == protocol.NOTIFICATIONS_CANCELLED:
        rid = _cancelled_id(message)
        if backlog.cancel(rid):
            answers.withdraw(rid)
            return False
        if rid in in_flight.ids:  # no answer to it is written from now on
            answers.withdraw(rid)
            cancelled.add(rid)
            in_flight.withdraw(rid)
            if lane is not None:
                lane.withdraw(rid)
    return True


def _settles(message: MessageLike, cancelled: Cancelled) -> int | str | None:
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

    def __init__(self, server: ByteTransport, in_flight: InFlight, tg: anyio.abc.TaskGroup) -> None:
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
    server: ByteTransport,
    in_flight: InFlight,
    cancelled: Cancelled,
    handshake: Handshake,
    answers: BatchAnswers,
) -> None:
    """What the server sends, to the client as it came; answers free their place in flight once written
    (never before: the end of input waits for that, so an answer read is never cut off by the exit; one to
    a batch's request once its array is complete or held for it with a request still in flight), and
    those to cancelled requests are not written."""
    while True:
        data = await server.receive()
        if not data:
            return
        if not in_flight.ids and not cancelled.ids:
            await answers.send(data)  # the client's
            continue
        data, answered = cancelled.drop(data)
        if data:
            await answers.write(data)
        for rid in answered:
            in_flight.done(rid)
            handshake.answered(rid)


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
    to `drain_timeout` seconds to be posted and answered; those still unanswered then get an error answer)
    or the server's does (the requests unanswered get one too). At most `max_in_flight` requests are
    unanswered, at most `max_backlog` (default: `max_in_flight`) wait for room before stdin is no longer
    read, as many frames at most are held for an `initialize`'s answer (module doc). `lane`: the requests
    it accepts are posted there and their answers written by it (`fast_lane`)."""
    in_flight = InFlight(max_in_flight)
    cancelled = Cancelled(max(CANCELLED_KEPT, max_in_flight))
    limit = max_in_flight if max_backlog is None else max_backlog

    async def post(message: MessageLike) -> None:  # a request that waited in the backlog
        if lane is not None and lane.accepts(message):
            await lane.post(message)
        else:
            await server.send(message.raw + b"\n")

    backlog = Backlog(in_flight, limit, post)
    answers = BatchAnswers(client.send)
    remote_ended = False
    async with anyio.create_task_group() as tg:
        reader = _Reader(
            client,
            server,
            in_flight,
            lane,
            backlog,
            cancelled=cancelled,
            answers=answers,
            tg=tg,
            max_held=limit,
        )
        tg.start_soon(backlog.run)
        if lane is not None:
            tg.start_soon(lane.run, answers.write, in_flight.done)

        async def from_server() -> None:
            nonlocal remote_ended
            await _server_to_client(server, in_flight, cancelled, reader.handshake, answers)
            remote_ended = True
            tg.cancel_scope.cancel()  # the remote side ended: nothing more can be answered

        tg.start_soon(from_server)
        await reader.run()
        # end of input: what was read is still posted and answered (as a stdio server answers what it read)
        with anyio.move_on_after(drain_timeout):
            await reader.handshake.idle.wait()  # the held frames went (they may add to the backlog)
            backlog.close()
            await backlog.done.wait()
            if in_flight.ids:
                await in_flight.idle.wait()
        tg.cancel_scope.cancel()
    # What is still owed an answer gets one (after the tasks ended: an answer being written was counted).
    owed = [
        *in_flight.unanswered(),
        *(message.id for message in backlog.waiting),
        *reader.handshake.unanswered(),
    ]
    if remote_ended:
        why = "mcpframe proxy: the connection to the remote server ended before the answer"
    else:
        why = f"mcpframe proxy: no answer from the remote server within {drain_timeout:g} s after stdin ended"
    await _fail(answers.write, owed, why, drain_timeout)


async def _fail(
    write: Callable[[bytes], Awaitable[None]], owed: Sequence[Any], why: str, timeout: float
) -> None:
    """Answer each request in `owed` with a `-32000` error saying `why` (bounded: the client may not read);
    `write`: `BatchAnswers.write` (an answer owed to a batch's request completes its array)."""
    if not owed:
        return
    logger.warning("%s: %d request(s) answered with an error", why, len(owed))
    data = b"".join(core.encode_error(rid, jsonrpc.CONNECTION_CLOSED, why) for rid in owed)
    with anyio.move_on_after(timeout), suppress(TransportClosedError, OSError):
        await write(data)


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
