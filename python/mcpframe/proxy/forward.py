"""The byte forwarder: many client sessions over one upstream byte stream (see docs/proxy.md).

Every frame is routed by its envelope alone: a client's request gets a fresh upstream id from the core's
`IdMap`, spliced into its bytes (by the core's `Relay` for the plain ones, in one native call per chunk;
else `Message.with_id`), and the upstream's answer gets the client's own id back the same way (by the
core's `AnswerRelay`, grouped per session; the requests the proxy follows are marked with `IdMap.hold`
so that their answers come to it), so ids of any JSON type and size cross exactly and params are
never re-encoded. Only the frames a rewrite needs are decoded further: `notifications/cancelled` (its
`requestId`), requests carrying a `progressToken` and the progress notifications for them, the server's
`notifications/cancelled`, `resources/subscribe`/`unsubscribe` and `resources/updated` (their `uri`).
Their rewritten values (a token, a `requestId`) are spliced in too, at the byte span `core.value_span`
finds: no frame is ever re-encoded on its way through.

The forwarder knows no transport. A client side calls `open_session(send)` and feeds the session the bytes
its client wrote (`ClientSession.feed`); what goes back to that client is handed to its `send`. The
upstream is an `UpstreamLink` made by a `connect` function, read by `Forwarder.serve`. Flow control is the
awaiting itself: a session's `feed` returns once the upstream took its frames, and `serve` reads the
upstream again once every client took what the last chunk carried, so a slow side holds the other back and
nothing queues without bound (the pending maps are bounded by `max_pending` and cleared on each answer).

With the thread pump (`mcpframe.proxy.pump`: a link with `pump_thread`, sessions fed by `feed_thread`),
plain chunks are relayed and written in the reader threads, and every other chunk is handed to the event
loop, where it takes the same path as above while its thread waits.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal, cast

import anyio

from mcpframe import core, jsonrpc, protocol
from mcpframe.errors import DuplicateIdError, PendingLimitError, UnknownIdError
from mcpframe.transports.base import TransportClosedError

from .link import Sink, SinkNowait, UpstreamLink, Writer, read_through
from .pump import GuardedIds, Step, ThreadWriter
from .reader import Reader, odd_id, splice, splice_two, with_raw_id
from .session import Batch, ClientSession
from .unreadable import answer_id, dropped_answer

__all__ = ["ClientSession", "Forwarder", "UpstreamLink"]

_REPLAY = -1  # the IdMap connection of replayed `initialize` requests: their answers are swallowed
_REPLAY_TIMEOUT = 30.0
_TOKEN = b'"progressToken"'
_META_TOKEN = ("params", "_meta", protocol.PROGRESS_TOKEN)
_PARAMS_TOKEN = ("params", protocol.PROGRESS_TOKEN)
_REQUEST_ID = ("params", "requestId")
_WATCHED = frozenset({protocol.INITIALIZE, protocol.RESOURCES_SUBSCRIBE, protocol.RESOURCES_UNSUBSCRIBE})
_FrameError = core.FrameError
_NO_ITEMS: list[core.Message | core.FrameError] = []  # read only


def _error(id: Any, code: int, message: str) -> bytes:
    return core.encode_error(id, code, message)


class Forwarder:
    """Many `ClientSession`s over one upstream, ids and progress tokens rewritten (module doc).

    `connect()` starts the upstream; `serve()` reads it, and returns its exit status when it ended and
    `on_upstream_exit` is `"exit"` (or `finish()` was called); with `"restart"` its pending requests fail
    and the next request starts it again, replaying each session's `initialize` handshake first.
    Upstream-initiated requests (sampling, elicitation, roots/list, ping) go to the session with the most
    recent request in flight (the only session, in the stdio mode); logging messages and `list_changed`
    notifications go to every session, `resources/updated` to the sessions that subscribed to its URI.
    """

    def __init__(
        self,
        connect: Callable[[], Awaitable[UpstreamLink]],
        *,
        on_upstream_exit: Literal["restart", "exit"] = "restart",
        max_frame: int = core.DEFAULT_MAX_FRAME,
        max_pending: int = 65536,
        warn: Callable[[str], object] | None = None,
    ) -> None:
        self._connect = connect
        self._policy = on_upstream_exit
        self._max_frame = max_frame
        self._warn = warn or (lambda text: print(f"mcpframe proxy: {text}", file=sys.stderr, flush=True))
        self._core_ids = core.IdMap(max_pending=max_pending)  # the relays' (they take `guard` themselves)
        self.guard: threading.RLock | None = None
        """Held around every use of the shared `IdMap` when its methods are not atomic (the python core),
        so that the thread pump's relays and the event loop take turns; `None` with the native core."""
        self._ids = self._core_ids
        if core.BACKEND == "python":
            self.guard = threading.RLock()
            self._ids = cast(core.IdMap, GuardedIds(self._core_ids, self.guard))
        self._sessions: dict[int, ClientSession] = {}
        self._next_conn = 0
        self._link: UpstreamLink | None = None
        self.up: Writer | None = None
        """Writes to the live upstream (`writer()`), read by the sessions' hot paths without a call."""
        self._reading: UpstreamLink | None = None  # the link `serve` reads: `_link` once its replay is done
        self._linked = anyio.Event()
        self._starting = anyio.Lock()
        self._dead = False  # the upstream ended and will not be restarted
        self._finishing = False
        self.last: ClientSession | None = None
        """The session with the latest request in flight (`relayed`; the sessions' hot paths set it)."""
        self._progress: dict[int, tuple[ClientSession, bytes]] = {}  # upstream id (= token) -> owner, token
        self._watch: dict[int, tuple[str, str]] = {}  # upstream id -> (initialize|subscribe|unsubscribe, uri)
        self._batches: dict[int, Batch] = {}  # upstream id -> the client batch its answer belongs in
        self._raw_ids: dict[int, bytes] = {}  # upstream id -> its client's id bytes, when not canonical
        self._server_requests: dict[int, tuple[int, Any]] = {}  # proxy id -> (conn, upstream's id)
        self._next_server_request = 0
        self._replays: dict[int, anyio.Event] = {}
        self._refusals: list[bytes] = []  # answers to upstream requests no session can take

    # ------------------------------------------------------------------ sessions

    def open_session(
        self, send: Sink, send_nowait: SinkNowait | None = None, *, writer: Writer | None = None
    ) -> ClientSession:
        """A new client session whose outgoing bytes go to `send` (`send_nowait` first, if given), or to
        `writer` (a `ThreadWriter` for the thread pump)."""
        self._next_conn += 1
        relay = core.Relay(self._core_ids, self._next_conn, max_frame=self._max_frame)
        session = ClientSession(self, self._next_conn, writer or Writer(send, send_nowait), relay)
        self._sessions[session.conn] = session
        return session

    async def close_session(self, session: ClientSession) -> None:
        """The client went away: cancel its requests upstream and refuse the server's requests to it."""
        self._sessions.pop(session.conn, None)
        if self.last is session:
            self.last = None
        frames: list[bytes] = []
        for uid in self._ids.drop_connection(session.conn):
            self._progress.pop(uid, None)
            self._raw_ids.pop(uid, None)
            self._watch.pop(uid, None)
            self._batches.pop(uid, None)
            params = {"requestId": uid, "reason": "the client disconnected from the proxy"}
            frames.append(core.encode_notification(protocol.NOTIFICATIONS_CANCELLED, params))
        for pid, (conn, upstream_id) in list(self._server_requests.items()):
            if conn == session.conn:
                del self._server_requests[pid]
                frames.append(_error(upstream_id, jsonrpc.CONNECTION_CLOSED, "the client disconnected"))
        if frames and self.up is not None:
            with contextlib.suppress(TransportClosedError):
                await self.up.write(b"".join(frames))

    # ------------------------------------------------------------------ client -> upstream

    def client_request(self, session: ClientSession, msg: core.Message, batch: Batch | None = None) -> bytes:
        """The request's bytes for the upstream, or (ending in LF) an error answer for the client. A
        request of a `batch` has its answer held here, to be written in the batch's one array."""
        try:
            uid = self._ids.outbound(session.conn, msg.id)  # type: ignore[arg-type]
        except DuplicateIdError:
            text = f"Invalid Request: id {msg.id!r} is already in use"
            return with_raw_id(_error(msg.id, jsonrpc.INVALID_REQUEST, text), odd_id(msg))
        except PendingLimitError:
            text = "the proxy has too many requests in flight"
            return with_raw_id(_error(msg.id, jsonrpc.CONNECTION_CLOSED, text), odd_id(msg))
        self.last = session
        if (raw_id := odd_id(msg)) is not None:
            self._raw_ids[uid] = raw_id
            self._ids.hold(uid)  # its answer comes here: it gets these bytes back
        if batch is not None:
            self._batches[uid] = batch
            batch.waiting += 1
            self._ids.hold(uid)  # its answer comes here: it goes into the batch's array
        method = msg.method
        if method in _WATCHED:
            self._watch_request(session, msg, uid)
        raw_params = msg.raw_params
        if raw_params is not None and _TOKEN in raw_params:
            return self._with_token(session, msg, uid)
        return msg.with_id(uid)

    def relayed(self, session: ClientSession) -> None:
        """The session's relay forwarded requests (their ids are mapped already)."""
        self.last = session

    def _watch_request(self, session: ClientSession, msg: core.Message, uid: int) -> None:
        if msg.method == protocol.INITIALIZE:
            session.initialize = msg.raw
            self._watch[uid] = (protocol.INITIALIZE, "")
            self._ids.hold(uid)  # its answer comes here: the revision it negotiates decides on batches
            return
        params = msg.params
        uri = params.get("uri") if isinstance(params, dict) else None
        if isinstance(uri, str):
            self._watch[uid] = (str(msg.method), uri)
            self._ids.hold(uid)  # its answer comes here, not straight to the client

    def _with_token(self, session: ClientSession, msg: core.Message, uid: int) -> bytes:
        """Splice a request: its `_meta.progressToken` becomes its upstream id (unique in flight)."""
        raw = msg.raw
        token = core.value_span(raw, _META_TOKEN)
        if token is None:
            return msg.with_id(uid)  # the bytes were elsewhere (an argument): nothing to rewrite
        id_span = core.value_span(raw, ("id",))
        assert id_span is not None  # a request has an id
        self._progress[uid] = (session, raw[token[0] : token[1]])  # the client's token, as it wrote it
        self._ids.hold(uid)  # its answer comes here: the token's entry ends with it
        new = b"%d" % uid
        return splice_two(raw, token, new, id_span, new)

    def client_notification(self, session: ClientSession, msg: core.Message) -> bytes | None:
        """The notification's bytes for the upstream (`None`: dropped); a batch it completes (a request
        cancelled was the last one it waited for) goes to `session.ready`."""
        method = msg.method
        if method == protocol.NOTIFICATIONS_CANCELLED:
            params = msg.params
            if not isinstance(params, dict):
                return None
            request_id = params.get("requestId")
            if not isinstance(request_id, int | str) or isinstance(request_id, bool):
                return None
            uid = self._ids.upstream(session.conn, request_id)
            if uid is None:  # answered already, or never sent: nothing to cancel
                return None
            self._ids.discard(uid)  # the server need not answer a cancelled request
            self._progress.pop(uid, None)
            self._raw_ids.pop(uid, None)
            self._watch.pop(uid, None)
            if frame := self._batch_answer(uid, None):
                session.ready.append(frame)
            return self._with_request_id(msg.raw, uid)
        if method == protocol.NOTIFICATIONS_INITIALIZED:
            session.initialized = msg.raw
        return msg.raw

    @staticmethod
    def _with_request_id(raw: bytes, request_id: int) -> bytes:
        """A cancellation with its `params.requestId` replaced (the caller saw it there)."""
        span = core.value_span(raw, _REQUEST_ID)
        assert span is not None
        return splice(raw, span, b"%d" % request_id)

    def client_answer(self, session: ClientSession, msg: core.Message) -> bytes | None:
        """The client's answer to an upstream request, with the upstream's id back (`None`: dropped)."""
        pid = msg.id
        entry = self._server_requests.get(pid) if type(pid) is int else None
        if entry is None or entry[0] != session.conn:
            self._warn(f"dropped an answer from a client to no request of the server (id {pid!r})")
            return None
        del self._server_requests[pid]  # type: ignore[arg-type]
        return msg.with_id(entry[1])

    def writer(self) -> Writer | None:
        """The live upstream's writer (`None` while none runs, or while a restarted one is replayed to)."""
        return self.up

    async def to_upstream(self, session: ClientSession, data: bytes) -> None:
        """Write a session's frames upstream, starting (or restarting) the upstream first if needed."""
        link = self._link
        if link is None:
            try:
                link = await self.ensure_upstream()
            except OSError as exc:
                await self._refuse(session, f"cannot start the upstream server again: {exc}")
                return
        if link is None:
            await self._refuse(session, "the upstream server has exited")
            return
        up = self.up
        if up is not None:
            with contextlib.suppress(TransportClosedError):  # it died: `serve` fails the pending requests
                await up.write(data)

    async def _refuse(self, session: ClientSession, why: str) -> None:
        """Fail every request of `session` in flight (the upstream is gone for good)."""
        frames = [self._fail(uid, cid, why) for uid, cid in self._ids.pending(session.conn)]
        if frames:
            await session.deliver(b"".join(frames))

    # ------------------------------------------------------------------ the upstream

    async def ensure_upstream(self) -> UpstreamLink | None:
        """The live upstream, started (handshakes replayed) if it is not running; `None` once it is dead."""
        async with self._starting:
            if self._link is not None or self._dead or self._finishing:
                return self._link
            link = await self._connect()
            self._reading = link
            self._linked.set()
            await self._replay(link)  # before anything else is written to it
            if self._reading is not link:  # it died during the replay: `serve` has failed what it had
                return None
            self._link = link
            self.up = getattr(link, "writer", None) or Writer(link.send, getattr(link, "send_nowait", None))
            return link

    async def _replay(self, link: UpstreamLink) -> None:
        """Give a restarted upstream each session's handshake; the replayed answers are swallowed."""
        for session in list(self._sessions.values()):
            if session.initialize is None or session.initialized is None:
                continue
            uid = self._ids.outbound(_REPLAY, session.conn)
            self._ids.hold(uid)  # its answer is swallowed here
            done = self._replays[uid] = anyio.Event()
            try:
                await link.send(core.splice_id(session.initialize, uid) + b"\n")
                with anyio.move_on_after(_REPLAY_TIMEOUT):
                    await done.wait()
                await link.send(session.initialized + b"\n")
            except TransportClosedError:
                return
            finally:
                self._replays.pop(uid, None)

    async def serve(self) -> int:
        """Read the upstream until it ends for good; its exit status (module and class doc)."""
        await self.ensure_upstream()
        while True:
            await self._linked.wait()
            link = self._reading
            if link is None:  # `finish` while no upstream ran
                return 0
            reader = self._new_reader()
            pump = getattr(link, "pump_thread", None)
            if pump is not None:  # a link that offers the thread pump (`ChildUpstream(threaded=True)`)
                await pump(self._thread_step(reader))
            else:
                await read_through(link, functools.partial(self._route_chunk, reader))
            await self._route(*self._close_reader(reader))
            status = await link.wait()
            await link.aclose()
            self._link = self.up = self._reading = None  # no await from here to `_fail_pending`'s collection
            self._linked = anyio.Event()
            final = self._finishing or self._policy == "exit"
            if final:
                self._dead = True
            await self._fail_pending(status, restart=not final)
            if final:
                return status

    async def finish(self) -> None:
        """No more client input: end the upstream's input; `serve` returns once the upstream ended."""
        self._finishing = True
        link = self._reading
        if link is not None:
            await link.close_input()
        else:
            self._linked.set()  # never started, or already dead: let `serve` see there is nothing left

    def _fail(self, uid: int, cid: Any, why: str) -> bytes:
        """Forget a request in flight; the error answer for its client (in its batch's array, if it has
        one: `b""` until that batch is complete)."""
        self._ids.discard(uid)
        error = with_raw_id(_error(cid, jsonrpc.CONNECTION_CLOSED, why), self._raw_ids.pop(uid, None))
        if uid in self._batches:
            return self._batch_answer(uid, error[:-1])
        return error

    def _batch_answer(self, uid: int, answer: bytes | None) -> bytes:
        """Put the answer to `uid` (`None`: it gets none, it was cancelled) in its batch; the batch's array
        line once that was its last answer, else `b""` (also when `uid` is in no batch)."""
        batch = self._batches.pop(uid, None)
        if batch is None:
            return b""
        if answer is not None:
            batch.add(answer)
        batch.waiting -= 1
        return batch.line()

    async def _fail_pending(self, status: int, *, restart: bool) -> None:
        """Answer every request the dead upstream had with a clear error (collected before any await)."""
        why = f"the upstream server exited with status {status}"
        if restart:
            why += "; it is restarted on the next request"
        out: dict[ClientSession, list[bytes]] = {}
        for session in self._sessions.values():
            if pending := self._ids.pending(session.conn):
                out[session] = [self._fail(uid, cid, why) for uid, cid in pending]
        self._progress.clear()
        self._watch.clear()
        self._batches.clear()
        self._raw_ids.clear()
        self._server_requests.clear()
        self._refusals.clear()
        self._ids.drop_connection(_REPLAY)
        for event in self._replays.values():  # a replay waiting for the dead upstream's answer stops
            event.set()
        for session, frames in out.items():
            await session.deliver(b"".join(frames))

    # ------------------------------------------------------------------ upstream -> clients

    def _close_reader(
        self, reader: Reader
    ) -> tuple[list[tuple[int, bytes]], list[core.Message | core.FrameError]]:
        """`reader.close()` under `guard`: it touches the shared python `IdMap` the client thread feeds."""
        if self.guard is None:
            return reader.close()
        with self.guard:
            return reader.close()

    def _new_reader(self) -> Reader:
        return Reader(self._core_ids, self._max_frame)

    def _thread_step(self, reader: Reader) -> Step:
        """The thread pump's step for the upstream's output, in its reader thread: plain answers are written
        to their clients from the thread; anything else is returned as work for the event loop.

        A closure over what it reads per chunk: a call made alone runs it once per answer."""
        feed, guard, sessions = reader.relay.feed, self.guard, self._sessions

        def step(chunk: bytes) -> Callable[[], Coroutine[Any, Any, None]] | None:
            if guard is None:
                relayed, held = feed(chunk)
            else:
                with guard:
                    relayed, held = feed(chunk)
            if held or self._refusals:
                return functools.partial(self._route, relayed, reader.decode(held))
            if len(relayed) == 1:  # the common chunk: one session's answers (always so in the stdio mode)
                conn, data = relayed[0]
                session = sessions.get(conn)
                if session is None:  # the client is gone: its answers have no taker
                    return None
                writer = session.writer
                if type(writer) is not ThreadWriter:
                    return functools.partial(self._route, relayed, _NO_ITEMS)
                try:
                    writer.write_blocking(data)
                except TransportClosedError:
                    return functools.partial(self.close_session, session)
                return None
            return self._thread_many(relayed)

        return step

    def _thread_many(
        self, relayed: list[tuple[int, bytes]]
    ) -> Callable[[], Coroutine[Any, Any, None]] | None:
        """`_thread_step` for answers to several sessions: written from the thread if every session's
        writer is a `ThreadWriter`, else all routed on the loop."""
        sessions = [self._sessions.get(conn) for conn, _ in relayed]
        if not all(isinstance(s.writer, ThreadWriter) for s in sessions if s is not None):
            return functools.partial(self._route, relayed, _NO_ITEMS)
        gone: list[ClientSession] = []
        for session, (_, data) in zip(sessions, relayed, strict=True):
            if session is not None:  # else the client is gone: its answers have no taker
                try:
                    session.writer.write_blocking(data)  # type: ignore[attr-defined]
                except TransportClosedError:
                    gone.append(session)
        if gone:
            return functools.partial(self._close_sessions, gone)
        return None

    async def _close_sessions(self, sessions: list[ClientSession]) -> None:
        for session in sessions:
            await self.close_session(session)

    def _route_chunk(self, reader: Reader, chunk: bytes) -> Awaitable[None] | None:
        relayed, items = reader.feed(chunk)
        if items or len(relayed) != 1 or self._refusals:
            return self._route_nowait(relayed, items)
        # The one-call-at-a-time case: one session's answers and nothing else, written as they came
        # (they end in LF already), without the grouping `_route_nowait` does.
        conn, data = relayed[0]
        session = self._sessions.get(conn)
        if session is None:  # the client is gone: its answers have no taker
            return None
        try:
            rest: bytes | None = session.writer.write_nowait(data)
        except (TransportClosedError, OSError):
            rest = None
        return self._settle([(session, rest)]) if rest != b"" else None

    async def _route(
        self, relayed: list[tuple[int, bytes]], items: list[core.Message | core.FrameError]
    ) -> None:
        if (rest := self._route_nowait(relayed, items)) is not None:
            await rest

    def _route_nowait(
        self, relayed: list[tuple[int, bytes]], items: list[core.Message | core.FrameError]
    ) -> Awaitable[None] | None:
        """Route the upstream's frames (the answers the core relayed first, then the held frames) and
        write them at once where the clients take them; else what is left to await (reading the
        upstream stops until it is done)."""
        out: dict[ClientSession, list[bytes]] = {}
        for conn, data in relayed:
            session = self._sessions.get(conn)
            if session is not None:  # else the client is gone: its answers have no taker
                out[session] = [data[:-1]]
        for item in items:
            self._route_one(item, out)
        rests: list[tuple[ClientSession, bytes | None]] = []  # None: the client is gone
        for session, frames in out.items():
            frames.append(b"")
            try:
                if rest := session.writer.write_nowait(b"\n".join(frames)):
                    rests.append((session, rest))
            except (TransportClosedError, OSError):
                rests.append((session, None))
        if rests or self._refusals:
            return self._settle(rests)
        return None

    def _route_one(self, item: core.Message | core.FrameError, out: dict[ClientSession, list[bytes]]) -> None:
        if isinstance(item, _FrameError):
            preview = item.preview.decode("utf-8", "replace")
            self._warn(f"dropped a malformed frame from the upstream server: {item.message} ({preview!r})")
            self._unreadable_answer(item, out)
            return
        kind = item.kind
        if kind in {"result", "error"}:
            self._answer(item, out)
        elif kind == "request":
            self._server_request(item, out)
        else:
            self._notification(item, out)

    async def _settle(self, rests: list[tuple[ClientSession, bytes | None]]) -> None:
        for session, rest in rests:
            try:
                if rest is None:
                    raise TransportClosedError("the client is gone")
                await session.writer.write_rest(rest)
            except (TransportClosedError, OSError):
                await self.close_session(session)
        if self._refusals and self.up is not None:
            refusals, self._refusals = b"".join(self._refusals), []
            with contextlib.suppress(TransportClosedError):
                await self.up.write(refusals)

    def _unreadable_answer(self, item: core.FrameError, out: dict[ClientSession, list[bytes]]) -> None:
        """A dropped frame whose first bytes show an answer to one of the proxy's requests (an oversize
        result, say): that request ends with an error now, instead of waiting until the upstream exits."""
        uid = answer_id(item.preview)
        if not isinstance(uid, int):  # the proxy's own ids are integers
            return
        try:
            conn, cid = self._ids.inbound(uid)
        except UnknownIdError:
            return
        self._progress.pop(uid, None)
        self._watch.pop(uid, None)
        session = self._sessions.get(conn)
        if session is None or conn == _REPLAY:
            self._batches.pop(uid, None)
            return
        answer = dropped_answer(cid, item)
        answer = with_raw_id(answer, self._raw_ids.pop(uid, None))
        if uid in self._batches:  # one of a batch: in its array, written with its last answer
            answer = self._batch_answer(uid, answer[:-1])
        if answer:
            out.setdefault(session, []).append(answer[:-1])

    def _answer(self, msg: core.Message, out: dict[ClientSession, list[bytes]]) -> None:
        uid = msg.id
        if uid is None:
            self._warn(f"dropped an error with id null from the upstream server: {msg.error!r}")
            return
        if not isinstance(uid, int):
            return  # the proxy's ids are integers: this answers nothing it sent
        try:
            conn, cid = self._ids.inbound(uid)
        except UnknownIdError:
            return  # a request cancelled (or failed) here already: its late answer has no taker
        if conn == _REPLAY:
            event = self._replays.get(uid)
            if event is not None:
                event.set()
            return
        session = self._sessions.get(conn)
        if session is None:
            return
        if self._progress:
            self._progress.pop(uid, None)
        answer = msg.with_id(cid)
        if self._watch or self._batches or self._raw_ids:
            answer = self._followed(session, uid, msg, answer)
        if answer:
            out.setdefault(session, []).append(answer)

    def _followed(self, session: ClientSession, uid: int, msg: core.Message, answer: bytes) -> bytes:
        """An answer to a request the proxy follows: it gets its client's id bytes back (`odd_id`), what it
        tells is noted (`_subscribed`); one of a batch goes into the batch's array, written with its last
        answer (`b""` until then)."""
        if (raw_id := self._raw_ids.pop(uid, None)) is not None:
            answer = with_raw_id(answer, raw_id)
        if uid in self._watch:
            self._subscribed(session, uid, msg)
        if uid in self._batches:
            return self._batch_answer(uid, answer)[:-1]
        return answer

    def _subscribed(self, session: ClientSession, uid: int, msg: core.Message) -> None:
        """An `initialize` was answered: the session takes batches if its revision does (the server it
        fronts would). A `resources/subscribe` or `unsubscribe` was answered: follow it if it succeeded."""
        method, uri = self._watch.pop(uid)
        if msg.kind != "result":
            return
        if method == protocol.INITIALIZE:
            result = msg.result
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            session.batches = protocol.batches_allowed(version if isinstance(version, str) else None)
            return
        if method == protocol.RESOURCES_SUBSCRIBE:
            session.subscriptions.add(uri)
        else:
            session.subscriptions.discard(uri)

    def _server_request(self, msg: core.Message, out: dict[ClientSession, list[bytes]]) -> None:
        session = self._owner()
        if session is None:
            self._warn(f"no client session for the server's {msg.method} request: refused")
            refusal = _error(msg.id, jsonrpc.CONNECTION_CLOSED, "no client is connected to the proxy")
            self._refusals.append(refusal)
            return
        self._next_server_request += 1
        pid = self._next_server_request
        self._server_requests[pid] = (session.conn, msg.id)
        out.setdefault(session, []).append(msg.with_id(pid))

    def _owner(self) -> ClientSession | None:
        """The session an upstream request belongs to: the one with the latest request in flight."""
        last = self.last
        if last is not None and last.conn in self._sessions:
            return last
        for session in self._sessions.values():
            if self._ids.pending(session.conn):
                return session
        return next(iter(self._sessions.values()), None)

    def _notification(self, msg: core.Message, out: dict[ClientSession, list[bytes]]) -> None:
        method = msg.method
        if method == protocol.NOTIFICATIONS_PROGRESS:
            self._progress_notification(msg, out)
        elif method == protocol.NOTIFICATIONS_RESOURCES_UPDATED:
            params = msg.params
            uri = params.get("uri") if isinstance(params, dict) else None
            for session in self._sessions.values():
                if uri in session.subscriptions:
                    out.setdefault(session, []).append(msg.raw)
        elif method == protocol.NOTIFICATIONS_CANCELLED:
            self._server_cancelled(msg, out)
        else:  # list_changed, logging messages and anything this proxy does not know: to everyone
            for session in self._sessions.values():
                out.setdefault(session, []).append(msg.raw)

    def _progress_notification(self, msg: core.Message, out: dict[ClientSession, list[bytes]]) -> None:
        params = msg.params
        token = params.get(protocol.PROGRESS_TOKEN) if isinstance(params, dict) else None
        owner = self._progress.get(token) if type(token) is int else None
        if owner is None:
            return  # a token of no request in flight here (finished, cancelled or never ours)
        session, client_token = owner
        raw = msg.raw
        span = core.value_span(raw, _PARAMS_TOKEN)
        assert span is not None  # the token was read from there
        out.setdefault(session, []).append(splice(raw, span, client_token))

    def _server_cancelled(self, msg: core.Message, out: dict[ClientSession, list[bytes]]) -> None:
        params = msg.params
        request_id = params.get("requestId") if isinstance(params, dict) else None
        for pid, (conn, upstream_id) in self._server_requests.items():
            session = self._sessions.get(conn)
            if upstream_id == request_id and session is not None:
                del self._server_requests[pid]
                out.setdefault(session, []).append(self._with_request_id(msg.raw, pid))
                return
