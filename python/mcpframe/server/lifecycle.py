"""A server process's life: the lifespan's start-up failure, and a graceful stop on SIGTERM or SIGINT.

The entry points that own the process (``Server.run()``, ``mcpframe serve``, ``mcpframe.compat.serve``)
run their serving coroutine under ``run_stoppable``. It turns SIGTERM and SIGINT into a ``Stop``:

1. New requests are refused (a ``-32000`` "Server shutting down" error: answered, never left unread).
2. Requests in flight get ``grace`` seconds (``DEFAULT_GRACE``; ``MCPFRAME_SHUTDOWN_GRACE`` in the
   environment, or the entry point's ``grace=``) to answer as usual.
3. What still runs then is cancelled and answered with a ``-32000`` error, so no request is lost.
4. The session closes (what was written is flushed), the lifespan's teardown runs, and the entry point
   returns: exit status 0, no ``KeyboardInterrupt`` traceback.

A second signal during the grace period exits at once, with the shell's status for a death by that signal
(128 + its number: 130 for SIGINT, 143 for SIGTERM), without the teardown.

Every connection made under ``run_stoppable`` (``Server.connection``, or ``tracked`` for a subclass's)
has its requests tracked by the ``Stop`` (``Stop.track_connection``): no wrapper, a flag and a set lookup
per request in ``ServerConnection.handle_request``; the stop finds the requests in flight in the Sessions
they came on (each Session's own table) when it settles. A connection served by
``Server.serve`` drains itself (steps 1 to 3) and then ends. When none does, the entry point's coroutine
is cancelled instead: the Streamable HTTP host (``mcpframe.http.serve_http``) then ends its GET streams,
calls ``Stop.settle`` on a ``Stop`` of its own that follows the entry point's (``Stop.follower``: steps 1
to 3 for its own requests only, so a server started inside another stops alone) and lets uvicorn stop.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from mcpframe import jsonrpc
from mcpframe.session import JSONRPCError, Request, Session

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = [
    "DEFAULT_GRACE",
    "GRACE_ENV",
    "LifespanError",
    "Stop",
    "current_stop",
    "run_stoppable",
    "shutdown_grace",
    "stopping_under",
    "tracked",
]

logger = logging.getLogger("mcpframe.server")

DEFAULT_GRACE = 10.0
"""Seconds requests in flight get to answer after SIGTERM/SIGINT (``MCPFRAME_SHUTDOWN_GRACE`` overrides)."""

GRACE_ENV = "MCPFRAME_SHUTDOWN_GRACE"
"""The environment variable every entry point reads the grace period from (`mcpframe serve --grace`)."""
_CUT_WAIT = 1.0  # after the grace period: how long cancelled handlers get to leave before the session ends
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_PRUNE_AT_LEAST = 64  # watched Sessions a stop holds before it first lets go of those that ended
_REFUSAL = "Server shutting down: request not started"
# a server started (`Stop.follower`) after the stop it follows began: it would be stopped at once anyway
_REFUSAL_LATE = f"{_REFUSAL}: this server was started after the shutdown began"

_CURRENT: contextvars.ContextVar[Stop | None] = contextvars.ContextVar("mcpframe_stop", default=None)

C = TypeVar("C", bound="ServerConnection")


class LifespanError(RuntimeError):
    """The server's lifespan failed while starting; ``str()`` is one line naming the user's file and line."""


def shutdown_grace(grace: float | None = None) -> float:
    """``grace`` if given, else the running ``Stop``'s, else ``MCPFRAME_SHUTDOWN_GRACE``, else 10 s."""
    if grace is not None:
        return _checked(grace, "grace")
    stop = _CURRENT.get()
    if stop is not None:
        return stop.grace
    text = os.environ.get(GRACE_ENV, "").strip()
    if not text:
        return DEFAULT_GRACE
    try:
        return _checked(float(text), GRACE_ENV)
    except ValueError:
        raise ValueError(f"{GRACE_ENV}={text!r}: give the seconds requests get to finish, e.g. 10") from None


def _checked(grace: float, name: str) -> float:
    if not grace >= 0 or math.isnan(grace):
        raise ValueError(f"{name} must be a number of seconds, 0 or more; got {grace!r}")
    return grace


def current_stop() -> Stop | None:
    """The ``Stop`` of the ``run_stoppable`` this task runs under, if any."""
    return _CURRENT.get()


@contextmanager
def stopping_under(stop: Stop) -> Iterator[Stop]:
    """Make ``stop`` the current one inside the block, as ``run_stoppable`` does but without its signals:
    connections made there (and in tasks started there) have their requests tracked by it, so whoever
    stops the block can ``settle`` them (``serve_http`` cancelled outside any entry point)."""
    token = _CURRENT.set(stop)
    try:
        yield stop
    finally:
        _CURRENT.reset(token)


def tracked(connection: C) -> C:
    """``connection``, its requests tracked by the current ``Stop`` if there is one (``track_connection``).

    The tracking happens in ``ServerConnection.handle_request``: a subclass overriding it must call
    ``super().handle_request(request)`` for its requests to be refused, waited for and cut by the stop.
    """
    stop = _CURRENT.get()
    if stop is not None:
        if connection._stops:
            stop.track_connection(connection)
        else:  # the usual case (a fresh connection: one per 2026-07-28 POST), without a call
            connection._stops = (stop,)
    return connection


def startup_failure(server_name: str, exc: BaseException) -> LifespanError:
    """A ``LifespanError`` saying where the user's lifespan failed, in one line."""
    where = _user_frame(exc)
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    prefix = f"{where}: " if where else ""
    return LifespanError(f"server {server_name!r}: its lifespan failed at start-up: {prefix}{text}")


def _user_frame(exc: BaseException) -> str:
    """``file:line`` of the innermost frame outside mcpframe and the standard library, or ``""``."""
    found = ""
    stdlib = os.path.dirname(os.__file__)
    package = os.path.dirname(os.path.dirname(__file__))
    for frame in traceback.extract_tb(exc.__traceback__):
        name = frame.filename
        if not name.startswith((stdlib, package)) and "site-packages" not in name:
            found = f"{name}:{frame.lineno}"
    return found


class Stop:
    """One graceful stop: the signal that asked for it, and the requests it waits for.

    ``track_connection`` has a connection's requests refused once the stop began and their Sessions
    watched; ``drain`` waits for the signal, then refuses new requests, waits up to ``grace`` seconds for
    the running ones, and answers those still running then with an error before closing the session.
    """

    def __init__(self, grace: float, *, own: bool = False) -> None:
        self.grace = grace
        self.own = own  # made by one ``serve_http`` for itself: never shared with another one started inside
        self.requested = anyio.Event()
        self.signal: int | None = None
        self.refusing = False
        self.refusal = _REFUSAL
        """The message of the -32000 error refusing a request once ``refusing``."""
        self.claimed = False  # a connection drains itself (Server.serve): main is not cancelled
        self.on_request: Callable[[], object] = lambda: None
        self.sessions: set[Session] = set()
        """The Sessions tracked connections took requests on (``watch``): where ``settle`` looks."""
        self._prune_at = _PRUNE_AT_LEAST
        self._settled: anyio.Event | None = None
        self._followers: list[Stop] = []

    def request(self, sig: int | None = None) -> None:
        """Begin the stop (what a first signal does), and that of the stops following it; idempotent."""
        if not self.requested.is_set():
            self.signal = sig
            self.requested.set()
            self.on_request()
            for follower in list(self._followers):
                follower.request(sig)

    @contextmanager
    def follower(self, grace: float | None = None) -> Iterator[Stop]:
        """A ``Stop`` of its own (``own``) for one ``serve_http`` under this one while the block runs: it is
        requested when this one is (a signal still stops every server) but settles only its own requests,
        with ``grace`` (default: this one's). Made after this one was requested, it refuses every request,
        saying why (a server started during the shutdown would only be stopped at once)."""
        stop = Stop(self.grace if grace is None else grace, own=True)
        if self.requested.is_set():
            stop.request(self.signal)
            stop.refusing = True
            stop.refusal = _REFUSAL_LATE
        self._followers.append(stop)
        try:
            yield stop
        finally:
            self._followers.remove(stop)

    # ------------------------------------------------------------ requests

    @property
    def _running(self) -> list[Request]:
        """The requests in flight on the sessions this stop watches (each Session's own table)."""
        return [request for session in self.sessions for request in session.requests_in_flight()]

    def watch(self, session: Session) -> None:
        """Count ``session``'s requests in flight among this stop's (a tracked connection's request came
        on it: ``ServerConnection.handle_request``). Sessions that ended are let go as new ones come, and
        when their connection closes (``forget``)."""
        sessions = self.sessions
        if len(sessions) >= self._prune_at:
            sessions.difference_update([s for s in sessions if s.closed and not s.in_flight])
            self._prune_at = max(_PRUNE_AT_LEAST, 2 * len(sessions))
        sessions.add(session)

    def forget(self, session: Session) -> None:
        """Let go of ``session`` if it ended (closed, no request in flight): its connection closed."""
        if session.closed and not session.in_flight:
            self.sessions.discard(session)

    async def _all_done(self) -> None:
        while running := self._running:
            for request in running:
                await request.wait_done()

    def track_connection(self, connection: ServerConnection) -> None:
        """Track ``connection``'s requests (once, however often it is asked): once this stop began, its
        ``handle_request`` refuses them, and this stop's ``settle`` waits for (then cuts) those running.

        Nothing wraps the handler: the connection checks its stops' ``refusing`` on each request, and has
        each stop ``watch`` the Session the request came on; the stop finds what runs there at settle time.
        """
        stops = connection._stops
        if self not in stops:  # one stop (the usual case): a one-item tuple, compared by identity first
            connection._stops = (*stops, self)

    async def settle(self) -> None:
        """Refuse new requests, wait up to ``grace`` for the running ones, cut the rest (done once)."""
        if self._settled is not None:
            await self._settled.wait()
            return
        self._settled = anyio.Event()
        self.refusing = True
        with anyio.move_on_after(self.grace):
            await self._all_done()
        if self._running:
            logger.warning(
                "shutting down: %d request(s) still running after the %g s grace period are cancelled",
                len(self._running),
                self.grace,
            )
            why = f"Server shutting down: the request did not finish in the {self.grace:g} s grace period"
            for request in self._running:
                request.abort(JSONRPCError(jsonrpc.CONNECTION_CLOSED, why))
            with anyio.move_on_after(_CUT_WAIT):
                await self._all_done()
        self._settled.set()

    async def drain(self, session: Session, before: Callable[[], object]) -> None:
        """Once the stop is requested: ``before()``, ``settle()``, then close ``session``."""
        await self.requested.wait()
        before()
        await self.settle()
        await session.aclose()

    # ------------------------------------------------------------ signals

    @contextmanager
    def signals(self) -> Iterator[None]:
        """SIGINT/SIGTERM begin this stop (a second one exits at once) while the block runs.

        Only on the main thread of a Unix event loop; elsewhere signals keep their handlers.
        """
        loop = asyncio.get_running_loop()
        previous: dict[int, Any] = {}
        for sig in _SIGNALS:
            handler = signal.getsignal(sig)
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no Unix
                continue
            previous[sig] = handler
        try:
            yield
        finally:
            for number, handler in previous.items():
                loop.remove_signal_handler(number)
                if handler is not None:
                    signal.signal(number, handler)

    def _on_signal(self, sig: int) -> None:
        name = signal.Signals(sig).name
        if self.requested.is_set():
            sys.stderr.write(f"mcpframe: {name} again: exiting now, without waiting\n")
            sys.stderr.flush()
            os._exit(128 + sig)  # "at once": no teardown, no unwinding
        logger.info(
            "%s: shutting down (requests in flight get %g s; %s again exits at once)", name, self.grace, name
        )
        self.request(sig)


async def run_stoppable(main: Callable[[], Awaitable[None]], *, grace: float | None = None) -> None:
    """Run ``main()`` until it returns, stopping it gracefully on SIGTERM or SIGINT (see the module doc).

    Connections ``Server.serve`` runs inside drain themselves; if none does, ``main`` is cancelled.
    """
    stop = Stop(shutdown_grace(grace))
    token = _CURRENT.set(stop)
    try:
        with stop.signals(), anyio.CancelScope() as scope:
            # when no connection drains itself (Streamable HTTP), cancelling lets the host drain its way
            stop.on_request = lambda: None if stop.claimed else scope.cancel()
            await main()
    finally:
        _CURRENT.reset(token)
