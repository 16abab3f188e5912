"""SSE answers on the lean HTTP server written by the code that makes their events, with no task.

On the full path an SSE answer is an `SseReply`: a task that waits on the stream's `Pipe` and hands each
event to ASGI `send` (measured ~200k instructions per `def` tool call over SSE, most of it that task and
its wake-ups). For a POST the lean server takes (`fast.py`), `SseWriter` is the stream's pipe instead
(`Stream.attach_now`: the priming event and what came before, stored first when resumable, go out with the
response's head) and a `Streamed` answer of the wire server's: each event put on it is written to the
socket from the code that emitted it (a handler's task, the exchange's end), those of one loop turn in one
write, and the stream's end writes the last of them with the response's end. The head waits (`HOLD`, on
the loop's shared timers) for the first event or the end: a `def` tool's answer, back from its worker a
few loop turns later, goes out with the head, the priming event and the end in one write, as a JSON answer
would; the answer itself (the stream's last event, `DirectPipe.put`'s `last`) waits for no loop turn.

Most requests send nothing but their answer: their writer is light (`light_writer`), with no stream until
one is needed. Their exchange (`fast_pending.Pending`) puts the answer (stored first when resumable, after
a priming event) and ends it, written with the head and the end in one piece, as above; only a frame that
must go out before the answer (a log, progress, a request to the client), or a hold that runs out, makes the
stream, which the writer is then attached to (`attached`), from then on as above. (Measured per `def` tool
call over SSE, resumable: ~13k instructions fewer than a stream, its exchange and an attached writer.)

What `SseReply` does is kept: a comment every `keepalive` seconds while nothing is written, and with
`close_idle` a resumable stream closed once it has had no event for that long (SSE polling: the client
resumes after its `retry`; keep-alive comments do not count as events), on the loop's shared timers
(`Deadlines`); a client that leaves detaches it (its exchange aborted if nobody can
resume the stream); a newer connection resuming the stream (`GET` + `Last-Event-ID`, the full path)
replaces it as it replaces a reader; a client that reads slowly makes the stream's producer wait
(`DirectPipe.room`, the socket's write buffer), so nothing piles up in the server. Only what is put within
one loop turn waits here (at most `_COALESCED` events: more are written at once).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpframe._unstable.asyncio_tasks import step_now

from .deadlines import Deadlines
from .headers import MCP_SESSION_ID
from .responses import SSE_HEADERS, Reply
from .streams import KEEPALIVE, DirectPipe, Stream
from .wire_parts import Streamed, StreamOut

if TYPE_CHECKING:
    from .handling import PostHandler
    from .sessions import HttpSession

__all__ = ["HOLD", "SseWriter", "light_writer", "sse_lines"]

logger = logging.getLogger("mcpframe.http")

_LINES: dict[str, bytes] = {}  # `sse_lines`, by session id
_LINES_KEPT = 1024
_COALESCED = 64  # events put within one loop turn before they are written without waiting for its end
HOLD = 0.02
"""Seconds the response's head (with the priming event) waits for the stream's first event or its end:
a `def` tool's answer comes back from its worker a few loop turns after the POST started, and then the
whole response is one write (one system call, one packet) instead of two. At most half the quiet wait
(`close_idle`, the keep-alive), and the time held counts toward it: a quiet stream's first comment or
close comes when it would without the hold."""


class SseWriter(DirectPipe, Streamed):
    """A stream's SSE response on the lean server, written where its events are put (see the module doc).

    A light writer (`light_writer`) starts with no stream: the request's answer, if it is the only event,
    is put by its exchange (`fast_pending.Pending`, as the answer's events made whole, `events_now`) and
    written with the head and the end in one piece, as a stream's would be. The stream is made and attached
    (`attached`) only when something else must go out first, or when the hold runs out (`light`).

    While the head is held, nothing of the response is on the wire: a graceful stop writes it (it gives
    connections longer than any hold, `server._FLUSH_AT_LEAST`), but a connection dropped, or a server
    killed, within those milliseconds leaves the client no bytes, not even the priming event's id to
    resume from (the events are stored all the same, but the client has no id to ask for them by).
    """

    __slots__ = (
        "_armed", "_entry", "_hold", "_keepalive", "_lines", "_on_end", "_opened", "_out",
        "_pending", "_quiet_left", "_wait", "_window", "close_idle", "first", "first_step", "light",
        "stream",
    )  # fmt: skip

    def __init__(
        self,
        stream: Stream | None,
        lines: bytes,
        keepalive: float,
        close_idle: float | None,
        on_end: Callable[[], Any],
    ) -> None:
        # `ChunkReader.__init__`, inline (one per SSE answer): nothing reads from this pipe
        self._items: deque[bytes] = deque()
        self._waiter = None
        self.closed = False
        self.stream = stream
        self.close_idle = close_idle
        self._lines = lines
        self.first = b""  # the priming event and what came before (`Stream.attach_now`)
        self._on_end = on_end
        self._out: StreamOut | None = None
        self._opened = False  # the head is out (`_flush`; else `close` writes it with the end)
        self._pending: list[bytes] = []  # put, not written yet
        self._keepalive = keepalive
        self._wait = keepalive if close_idle is None else min(close_idle, keepalive)
        self._window = math.inf if close_idle is None else close_idle
        self._quiet_left = self._window  # seconds of quiet before the stream closes (`inf`: it never does)
        self._armed = 0.0  # the length of the quiet timer's running wait
        self._hold = min(HOLD, self._wait / 2)  # the head's wait, part of the first quiet one (`_held`)
        self._entry: list[Any] | None = None  # the hold's or the quiet timer's entry (`Deadlines`)
        # the handler's task, not run yet (`fast._handover`): its first step runs once this is opened, at
        # once rather than at the loop's next iteration
        self.first_step: asyncio.Task[None] | None = None
        # a light writer's (no stream yet): makes its stream and attaches this writer to it (`attached`)
        self.light: Callable[[], None] | None = None

    # ---------------------------------------------------------------- the wire server's (`Streamed`)

    def head(self) -> tuple[int, bytes]:
        return 200, self._lines

    def opened(self, out: StreamOut) -> None:
        self._out = out
        if self.first:
            # before anything put since `attach_now` (none today: no loop turn runs between the two, but
            # the priming event must come first however this is called)
            self._pending.insert(0, self.first)
        # the head waits for the first event or the end, `_hold` seconds at most (on the task's loop when
        # there is one: `Deadlines.of` asks for the running loop otherwise, on 3.11 a `getpid` system call)
        task, self.first_step = self.first_step, None
        if task is None:
            self._entry = Deadlines.of(self._hold).add(self._held)
            return
        loop = task.get_loop()
        self._entry = Deadlines.of(self._hold, loop).add(self._held)
        step_now(loop, task)

    def lost(self) -> None:
        self._out = None  # nothing more is written
        if self.stream is None:  # light, no stream to leave: it ends (`on_end` decides the exchange's fate)
            self.close()
            return
        try:
            self.stream.detach(self)  # closes it: `close`
        except Exception:  # this runs inside the connection's `connection_lost`: the rest of it must run
            logger.exception("ending the SSE stream %s after its client left failed", self.stream.id)

    # ---------------------------------------------------------------- the stream's (`Pipe`)

    def put(self, data: bytes, *, last: bool = False) -> bool:
        if self.closed:
            return False
        if data:
            pending = self._pending
            pending.append(data)
            if len(pending) >= _COALESCED:
                self._flush()
            elif not last and not self._scheduled(pending):
                asyncio.get_running_loop().call_soon(self._flush)
        return True

    def _scheduled(self, pending: list[bytes]) -> bool:
        """Whether a `_flush` will write what is pending without a new one: one is scheduled (the second
        event of a loop turn), or the head is held with a first part (`first`) only (`_flush` there as
        well)."""
        return len(pending) > (1 if self._opened or not self.first else 2)

    def close(self, last: bytes = b"") -> None:
        """The stream's end (`Pipe.close`); `last`: its last event, as `put(last, last=True)` then `close()`
        would write it, in one call (a light writer's answer: `fast_pending._sse_end`)."""
        if self.closed:
            return
        if last:
            self._pending.append(last)
        self.closed = True
        entry = self._entry  # (`_disarm`, inline: once per SSE answer)
        if entry is not None:
            entry[1] = None
            self._entry = None
        out, self._out = self._out, None
        pending = self._pending
        if out is not None:
            out.end(pending[0] if len(pending) == 1 else b"".join(pending))
        pending.clear()
        # what refers back to its exchange goes (its `light`, and the `on_end` closure that holds this
        # writer): the exchange and this writer are then freed by their reference counts as the answer
        # ends, not left as a cycle of ~18 objects per SSE answer for the cyclic collector (measured ~11k
        # instructions per `def` call over SSE)
        on_end, self._on_end, self.light = self._on_end, _ended, None
        on_end()

    def attached(self, stream: Stream, first: bytes) -> None:
        """A light writer's stream, made now and this writer attached to it (`Stream.attach_now`), `first`
        its first bytes (the priming event, what came before): they go before anything put."""
        self.stream = stream
        self.first = first
        if first and self._out is not None:  # (else `opened` puts it first)
            self._pending.insert(0, first)

    def queued(self) -> int:
        return len(self._pending)

    def room(self) -> asyncio.Future[None] | None:
        out = self._out
        return None if out is None else out.room()

    # ---------------------------------------------------------------- writing

    def _flush(self) -> None:
        """Write what is pending (with the head, if it is still held), and restart the quiet timer."""
        pending = self._pending
        if self.closed or self._out is None or (self._opened and not pending):
            return
        data = b"" if not pending else pending[0] if len(pending) == 1 else b"".join(pending)
        pending.clear()
        self._opened = True
        self._out.write(data)
        self._quiet_left = self._window
        self._arm()

    def _held(self) -> None:
        """The hold ran out: the head goes out (with what was put meanwhile, if a loop turn's `_flush` has
        not come yet). With nothing put but the priming event, the quiet wait already ran `_hold` seconds
        of its time (so a quiet resumable stream closes `close_idle` after the POST, not later)."""
        self._entry = None
        light, self.light = self.light, None
        if light is not None and self.stream is None and not self.closed:
            light()  # a light writer's stream, from now on (its priming event goes out with the head)
        quiet = len(self._pending) <= (1 if self.first else 0)
        self._flush()  # (restarts the whole quiet wait: right when an event went out with the head)
        if quiet and not self.closed and self._out is not None and self._wait != math.inf:
            self._quiet_left = self._window - self._hold
            self._arm(self._hold)

    def _arm(self, written_ago: float = 0.0) -> None:
        """(Re)start the quiet timer: `_quiet` when the next keep-alive is due (`written_ago` seconds after
        the last write), or sooner when the quiet `close_idle` allows (`_quiet_left`) ends."""
        self._disarm()
        wait = min(self._keepalive - written_ago, self._quiet_left)
        if wait != math.inf:
            self._armed = wait
            self._entry = Deadlines.of(wait).add(self._quiet)

    def _disarm(self) -> None:
        entry = self._entry
        if entry is not None:
            entry[1] = None
            self._entry = None

    def _quiet(self) -> None:
        """Nothing written for a while: a keep-alive comment, or (SSE polling, `close_idle` of quiet in
        all) the response ends."""
        self._entry = None
        if self.closed or self._out is None:
            return
        stream = self.stream
        if self._quiet_left <= self._armed:  # the quiet `close_idle` allows is over
            if stream is not None and stream.resumable and not stream.finished.is_set():
                stream.detach(self)  # the client resumes after its `retry`
                return
            self._quiet_left = math.inf  # (past it: keep-alives only)
        else:
            self._quiet_left -= self._armed
        self._flush()
        if self._out.room() is None:  # a client that takes nothing now gets no comments piling up
            self._out.write(KEEPALIVE)
        self._arm()


def _ended() -> None:
    """A closed writer's `on_end` (the one it was given ran once)."""


def light_writer(
    posts: PostHandler, session: HttpSession | None, priming: int | None, on_end: Callable[[], Any]
) -> SseWriter:
    """The SSE answer `PostHandler.respond` gives a started exchange that prefers SSE and has no stream yet
    (`fast_pending.Pending`): an `SseWriter` with no stream, which the exchange gives its answer alone
    (`put`, `close`), or attaches to its stream once it makes one (`attached`). Its end (`on_end`, the
    exchange's `Pending._light_ended`, a bound method: no closure and cells made and freed per answer) is
    as `respond`'s and `StreamReplies.reply`'s, but the session forgets the stream when its exchange ends
    (not there: it may run inside `HttpSession.close`'s walk over its streams), and a client that leaves an
    answer nobody can resume has the exchange aborted: nobody can ever receive it. (It may run where no
    task runs: the connection's `connection_lost`, e.g. as the server stops: `spawn` is safe there.) Its
    session counts the exchange as an open request while it runs (`fast._handover`), which covers the
    response. `priming`: the session's `posts.replies.priming(session)`, asked once by the caller."""
    close_idle = posts.options.close_idle_streams if priming is not None else None
    lines = sse_lines(None if session is None else session.id)
    # (positional: a class called with keywords builds a dict for them, once per SSE answer)
    return SseWriter(None, lines, posts.replies.keepalive, close_idle, on_end)


def sse_lines(session_id: str | None) -> bytes:
    """An SSE answer's header lines (with the session's id, if any), made once per session."""
    key = session_id or ""
    lines = _LINES.get(key)
    if lines is None:
        if len(_LINES) >= _LINES_KEPT:
            _LINES.clear()  # many sessions: start over rather than grow
        headers = {**SSE_HEADERS, MCP_SESSION_ID: key} if key else SSE_HEADERS
        lines = _LINES[key] = Reply(200, b"", headers).header_lines()
    return lines
