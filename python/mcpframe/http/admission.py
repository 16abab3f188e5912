"""Flow control for POSTs: a bound on the requests being answered, and a bounded queue in front of it.

A POST that carries requests needs room (one unit per request) before a lane starts answering it. Past
`max_in_flight` units in use it waits, first come first served, in a queue of at most `max_queued` POSTs;
only a POST that finds the queue full is refused (HTTP 503 with `Retry-After`). A waiting POST whose client
disconnects leaves the queue. Room is given back when the POST's exchange ends.

The bound is per server, not per HTTP session: 2026-07-28 requests have no session, a client may open
sessions up to `max_sessions`, and what the bound protects (handlers, threads, memory) is the server's.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Literal

from .asgi import Receive, wait_disconnect

__all__ = ["Admission", "Refused", "Slot"]

Refused = Literal["full", "gone"]
"""Why a POST got no room: the queue was full, or its client left while it waited."""


class Slot:
    """Room held by one POST; `release` (idempotent) gives it back and lets the next waiters in."""

    __slots__ = ("_admission", "weight")

    def __init__(self, admission: Admission, weight: int) -> None:
        self._admission: Admission | None = admission
        self.weight = weight

    def release(self) -> None:
        """Give the room back (once; later calls do nothing)."""
        admission, self._admission = self._admission, None
        if admission is not None:
            admission.running -= self.weight
            if admission._queue:  # (nobody to wake, most of the time: no call)
                admission.wake()


class _Waiter:
    __slots__ = ("future", "weight")

    def __init__(self, weight: int, future: asyncio.Future[None]) -> None:
        self.weight = weight
        self.future = future


class Admission:
    """The server's in-flight bound and its waiting queue (see the module's docstring)."""

    def __init__(self, max_in_flight: int, max_queued: int) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        if max_queued < 0:
            raise ValueError(f"max_queued must be 0 or more, got {max_queued}")
        self.max_in_flight = max_in_flight
        self.max_queued = max_queued
        self.running = 0  # units held by admitted POSTs
        self._queue: deque[_Waiter] = deque()

    @property
    def queued(self) -> int:
        """How many POSTs are waiting for room."""
        return len(self._queue)

    async def enter(self, requests: int, receive: Receive, *, ping: bool = False) -> Slot | Refused:
        """Room for a POST of `requests` requests, waiting for it if need be.

        A batch larger than the bound needs the whole bound (it runs alone rather than never). Pings get
        room past the bound, up to twice it, without queueing: they are cheap and say the server is alive
        (the rule the JSON-RPC Session applies too).
        """
        slot = self.try_enter(requests, ping=ping)
        if slot is not None:
            return slot
        if len(self._queue) >= self.max_queued:
            return "full"
        return await self._wait(min(requests, self.max_in_flight), receive)

    def try_enter(self, requests: int, *, ping: bool = False) -> Slot | None:
        """Room now, by `enter`'s rules, or `None` where `enter` would queue (or refuse)."""
        weight = min(requests, self.max_in_flight)
        if not self._queue and self.running + weight <= self.max_in_flight:
            self.running += weight  # (`_take`, inlined: every POST comes here)
            return Slot(self, weight)
        if ping and self.running + weight <= 2 * self.max_in_flight:
            return self._take(weight)
        return None

    def _take(self, weight: int) -> Slot:
        self.running += weight
        return Slot(self, weight)

    async def _wait(self, weight: int, receive: Receive) -> Slot | Refused:
        loop = asyncio.get_running_loop()
        waiter = _Waiter(weight, loop.create_future())
        self._queue.append(waiter)
        # the body has been read: the next ASGI message can only be the client's disconnect
        watcher = loop.create_task(wait_disconnect(receive))
        admitted = False
        try:
            await asyncio.wait((waiter.future, watcher), return_when=asyncio.FIRST_COMPLETED)
            admitted = waiter.future.done() and not watcher.done()
        finally:
            watcher.cancel()
            if waiter.future.done():
                if not admitted:  # room was given to a POST nobody waits for any more: hand it on
                    self.running -= weight
                    self.wake()
            else:
                waiter.future.cancel()
                self._queue.remove(waiter)
                self.wake()  # the head may have changed: a smaller waiter behind may fit now
        return Slot(self, weight) if admitted else "gone"

    def wake(self) -> None:
        """Admit waiters from the head of the queue while they fit (first come, first served)."""
        queue = self._queue
        while queue and self.running + queue[0].weight <= self.max_in_flight:
            waiter = queue.popleft()
            self.running += waiter.weight
            waiter.future.set_result(None)
