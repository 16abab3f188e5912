"""Legacy HTTP+SSE sessions (2024-11-05) across instances sharing a store (`HttpOptions(store=...)`).

A legacy session lives in the GET `/sse` that opened it, on one instance (its holder); its POSTs may land
on any instance behind a balancer. The rule:

- the holder registers the session in the store while its stream lives (`mcpframe:l:<id>`, holding the
  owner; a time to live of `HOLD_TTL` seconds refreshed every third of it; deleted when the stream ends);
- a POST for a session not held here, whose key exists (for the same owner), is checked as usual (the same
  400s, 413, 415), then relayed on the store's `route` channel, tagged legacy (`l:<id>`): the holder
  queues the frames on the session's input like a local POST would, and answers through the store;
- flow control: the POST waits for that answer, as a local POST waits for room in the session's input
  (`BoundedPipe`). The holder waits at most `store_timeout` seconds for room (and lets at most
  `MAX_WAITING` relayed bodies wait per session); past that nothing is queued and the POST gets 503 (with
  `Retry-After`), never a silent drop. So relayed input is bounded by the same byte bound as local input,
  plus at most `MAX_WAITING` bodies waiting for room;
- the key names the holder's instance: once that instance's liveness key is gone (it died; see
  `redis_liveness`), the session counts as gone at once and its POSTs get 404, whatever time the key has
  left; a holder that lives but does not answer in time: 503.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from mcpframe import protocol

from .store import StoreUnavailable

if TYPE_CHECKING:
    from .legacy import LegacySession
    from .store_sessions import SharedSessions

__all__ = ["HOLD_TTL", "MAX_WAITING", "SharedLegacy"]

logger = logging.getLogger("mcpframe.http")

HOLD_TTL = 30.0
"""Seconds a legacy session's key outlives its holder's last refresh (an instance that died)."""

MAX_WAITING = 16
"""Relayed bodies that may wait for room in one legacy session's input on its holder; more get 503."""

_ENDED = 256  # ended sessions remembered (a body relayed after its key went arrives within a round trip)

# what the holder answers a relayed body
OK = b"ok"  # queued on the session's input: the POST answers 202
GONE = b"gone"  # the session ended: 404
FULL = b"full"  # no room in time (or too many waiting): 503
NO_BATCH = b"nobatch"  # a batch on a session whose revision has none: the same 400 as locally


class SharedLegacy:
    """The shared-store side of `LegacySSE`: registering held sessions, relaying and taking POSTed frames."""

    def __init__(self, shared: SharedSessions, find: Callable[[str], LegacySession | None]) -> None:
        self.shared = shared
        self.store = shared.store
        self.find = find  # the legacy session held here with this id
        self.feed_wait = self.store.timeout  # how long a relayed body may wait for room on the holder
        self.waiting: Counter[str] = Counter()
        # sessions that ended here lately: a body relayed just before its key went is answered 404 at once
        self.ended: deque[str] = deque(maxlen=_ENDED)
        shared.legacy = self.deliver

    # ------------------------------------------------------------ on the holder

    async def hold(self, legacy: LegacySession) -> None:
        """Register the session (before the client learns its endpoint); `StoreUnavailable` when it fails."""
        await self.store.hold_legacy(legacy.id, legacy.owner, HOLD_TTL)

    async def keep(self, legacy: LegacySession) -> None:
        """While the stream lives: refresh the key (a failed refresh is logged; the next one retries)."""
        while True:
            await anyio.sleep(HOLD_TTL / 3)
            try:
                await self.store.hold_legacy(legacy.id, legacy.owner, HOLD_TTL)
            except StoreUnavailable as exc:
                logger.warning("%s", exc)

    async def release(self, legacy: LegacySession) -> None:
        """The stream ended: POSTs for it get 404 on every instance."""
        self.ended.append(legacy.id)
        try:
            await self.store.release_legacy(legacy.id)
        except StoreUnavailable as exc:
            logger.warning("%s (the key expires in %.0f s)", exc, HOLD_TTL)

    def deliver(self, session_id: str, payload: bytes) -> None:
        """A body relayed by another instance: queue it if the session is held here (else not ours)."""
        nonce, _, rest = payload.partition(b"\n")
        legacy = self.find(session_id)
        if legacy is None:
            if session_id in self.ended:
                self.shared.manager.spawn(self._answer, nonce, GONE)
            return
        flag, _, frames = rest.partition(b"\n")
        if flag == b"b" and not protocol.batches_allowed(legacy.version):
            self.shared.manager.spawn(self._answer, nonce, NO_BATCH)
        elif self.waiting[session_id] >= MAX_WAITING:
            self.shared.manager.spawn(self._answer, nonce, FULL)
        else:
            self.waiting[session_id] += 1  # counted now: the next relayed body sees it at once
            self.shared.manager.spawn(self._feed, legacy, nonce, frames)

    async def _feed(self, legacy: LegacySession, nonce: bytes, frames: bytes) -> None:
        try:
            with anyio.move_on_after(self.feed_wait) as scope:
                queued = await legacy.transport.feed(frames)
            status = FULL if scope.cancelled_caught else OK if queued else GONE
        finally:
            self.waiting[legacy.id] -= 1
            if self.waiting[legacy.id] <= 0:
                del self.waiting[legacy.id]
        await self._answer(nonce, status)

    async def _answer(self, nonce: bytes, status: bytes) -> None:
        try:
            await self.store.ack_legacy(nonce.decode("ascii", "replace"), status)
        except StoreUnavailable as exc:
            logger.warning("%s", exc)

    # ------------------------------------------------------------ on the instance a POST reached

    async def held(self, session_id: str, owner: str | None) -> bool:
        """Whether an instance holds this session for this owner (`StoreUnavailable` when unknown)."""
        found = await self.store.legacy_owner(session_id)
        return found is not None and found[0] == owner

    async def relay(self, session_id: str, frames: bytes, *, batch: bool) -> bytes | None:
        """Hand a checked body to the holder and wait for its answer (`OK`, `GONE`, `FULL`, `NO_BATCH`);
        `None` when no holder answered in time."""
        flag = b"b" if batch else b"-"
        wait = self.feed_wait + self.store.timeout  # the holder's wait, then one round trip for its answer
        return await self.store.relay_legacy(session_id, flag + b"\n" + frames, wait)
