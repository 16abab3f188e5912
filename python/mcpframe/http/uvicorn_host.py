"""uvicorn's httptools protocol, made to hand the app an absolute-form target's authority as its `Host`
(`host_from_target`) and to bound the time a request head may take (`bounded_heads`).

uvicorn keeps only the path of a target such as `http://evil.example/mcp` (`scope["path"]` and `raw_path`
are `/mcp`) and passes the received `Host` on: the app's Host guard would then check a header RFC 9112
§3.2.2 tells an origin server to ignore, while the request names another host. This protocol swaps the
`host` header lines for the target's authority (`security.target_host`) before uvicorn builds the scope,
as the lean server (`wire.py`) does for its own. (uvicorn's h11 protocol passes such a target whole as
`path`, which matches no route of the app: it is refused there with a 404.)

`bounded_heads` adds what uvicorn lacks (0.54: its only timer is the keep-alive between two requests): a
bound on reading a request head. A connection that sends nothing is closed after `idle` seconds (the
keep-alive's), and a request head must be complete within `HttpOptions.head_timeout` seconds of its first
byte, else the client gets 408 and the connection is closed, as with the lean server (`wire.py`): a
slow-loris client (a head trickled a byte at a time, or connections opened and left silent) holds a
connection that long at most. It is uvicorn's public way in, a protocol class given as `Config(http=...)`,
overriding only asyncio's `Protocol` methods and httptools' parser callbacks (each calling uvicorn's own);
of uvicorn's state it reads three attributes, defensively (`cycle`: a pipelined head behind an answer
being written waits for it, its time starting again; `pipeline` and `flow`, each request's `flow` wrapped
in `_PipelineFlow`: reading stays paused while more than `MAX_PIPELINED` parsed requests wait, where uvicorn
resumes it after every answer and every body read, so a client that pipelines without reading its answers
had the server parse a whole read per answer, unbounded). Without
httptools (uvicorn's h11 protocol) there is no bound.
"""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

from .security import target_host
from .wire_plain import MAX_PIPELINED

__all__ = ["bounded_heads", "host_from_target"]

_TOO_SLOW = b"Request Timeout: the request head came too slowly"
_408 = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
    b"connection: close\r\n\r\n%s" % (len(_TOO_SLOW), _TOO_SLOW)
)


@cache
def host_from_target() -> type[Any] | None:
    """uvicorn's `HttpToolsProtocol` whose requests in absolute-form carry the target's authority as
    `host`; `None` where it cannot be made (no httptools, or a uvicorn whose protocol lacks the hook this
    overrides): uvicorn's own choice then (`"auto"`), as before."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415
    except ImportError:
        return None
    if not callable(getattr(HttpToolsProtocol, "on_headers_complete", None)):
        return None

    class HostFromTarget(HttpToolsProtocol):
        def on_headers_complete(self) -> None:
            """Replace the header lines in place (the scope holds this very list), then uvicorn's step."""
            url, headers = getattr(self, "url", None), getattr(self, "headers", None)
            if isinstance(url, bytes) and isinstance(headers, list):
                found = target_host(url, headers)
                if found is not headers:
                    headers[:] = found
            super().on_headers_complete()

    return HostFromTarget


@cache
def bounded_heads(head_timeout: float, idle: float) -> type[Any] | None:
    """`host_from_target()`'s protocol whose request heads are bounded in time (see the module doc):
    `head_timeout` seconds from a head's first byte, `idle` from the connection being opened to its first
    byte. `None` where `host_from_target()` is `None`."""
    base = host_from_target()
    if base is None:
        return None
    first = min(idle, head_timeout)

    class BoundedHeads(base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._head_clock = _HeadClock(transport, self, head_timeout, first)

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_clock.stop()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._head_clock.begin()

        def on_headers_complete(self) -> None:
            self._head_clock.complete()
            super().on_headers_complete()
            cycle = getattr(self, "cycle", None)  # the request just parsed: its body reads resume reading
            if cycle is not None and getattr(cycle, "flow", None) is not None:
                cycle.flow = _PipelineFlow(cycle.flow, self)

        def on_response_complete(self) -> None:
            super().on_response_complete()  # resumes reading, starts the next pipelined request
            pipeline, flow = getattr(self, "pipeline", None), getattr(self, "flow", None)
            if pipeline is not None and flow is not None and len(pipeline) > MAX_PIPELINED:
                flow.pause_reading()  # enough parsed ahead: no more read until they are answered

    return BoundedHeads


class _PipelineFlow:
    """A request's view of its connection's uvicorn `FlowControl`: the same, except that the request reading
    its body resumes reading the socket only while at most `MAX_PIPELINED` parsed requests wait."""

    __slots__ = ("_flow", "_protocol")

    def __init__(self, flow: Any, protocol: Any) -> None:
        self._flow = flow
        self._protocol = protocol

    def resume_reading(self) -> None:
        if len(getattr(self._protocol, "pipeline", ())) <= MAX_PIPELINED:
            self._flow.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._flow, name)


class _HeadClock:
    """One connection's head deadline, checked by one timer that is moved only when it fires: a request
    sets the deadline when its head begins and clears it when the head is complete, no timer armed or
    cancelled per request (the timer, at its time, looks again at the deadline then in force)."""

    __slots__ = ("_begun", "_deadline", "_head_timeout", "_loop", "_protocol", "_timer", "_transport")

    def __init__(self, transport: asyncio.BaseTransport, protocol: Any, head_timeout: float, first: float):
        self._transport = transport
        self._protocol = protocol  # uvicorn's, asked only whether it is answering a request (`_expire`)
        self._head_timeout = head_timeout
        self._loop = asyncio.get_running_loop()
        self._begun = False  # bytes of a request head came (else the connection stayed silent)
        self._deadline: float | None = self._loop.time() + first
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(first, self._check)

    def begin(self) -> None:
        """A request head's first byte came."""
        self._begun = True
        self._deadline = self._loop.time() + self._head_timeout
        if self._timer is None:
            self._timer = self._loop.call_later(self._head_timeout, self._check)

    def complete(self) -> None:
        """The head is whole: no deadline until the next one begins (uvicorn's keep-alive runs meanwhile)."""
        self._deadline = None
        self._begun = False

    def stop(self) -> None:
        """The connection ended: its timer goes (it holds the connection)."""
        self._deadline = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None:
            return
        left = deadline - self._loop.time()
        if left > 0:
            self._timer = self._loop.call_later(left, self._check)
            return
        self._deadline = None
        self._expire()

    def _expire(self) -> None:
        transport = self._transport
        if transport.is_closing():
            return
        cycle = getattr(self._protocol, "cycle", None)  # the request being answered, if any
        answering = cycle is not None and getattr(cycle, "response_complete", False) is not True
        if self._begun and answering:
            # a pipelined head behind a request still being answered: uvicorn reads no further until that
            # answer is out (a client that does not read it yet), so the head's time starts again rather
            # than cutting the answer under way
            self._deadline = self._loop.time() + self._head_timeout
            self._timer = self._loop.call_later(self._head_timeout, self._check)
            return
        if self._begun and isinstance(transport, asyncio.WriteTransport):
            transport.write(_408)
        transport.close()
