"""`RedisStore`: HTTP sessions and their SSE events in Redis, shared by every instance behind a balancer.

Keys (`mcpframe:` prefix), each expiring after the session's idle timeout unless used again:

- `s:<session>`: the session's `SessionState` as JSON; read (and its TTL refreshed, `GETEX`) by every request;
- `e:<session>:<stream>`: a Redis stream per SSE stream, one entry per event (`m`: the JSON-RPC frame,
  empty for a priming event; `end`: the stream ended), with ids `0-1`, `0-2`, ... (`XADD 0-*`, Redis 7), so
  the event id `<stream>.<n>` maps to entry `0-<n>` on every instance; at most `max_events` entries each;
- `k:<session>`: the set of the session's stream keys, so DELETE removes them all;
- channel `route`: a client's `notifications/cancelled` for a request running on another instance, and its
  answer to a request another instance sent it (sampling, elicitation, `roots/list`); a POST body for a
  legacy SSE session, tagged `l:<session>` (see `legacy_shared`); the new claim of a GET stream a resume
  took over, tagged `g:<session>`;
- `l:<session>`: a legacy SSE session some instance holds (its owner), while its GET lives;
- `la:<nonce>`: the holder's answer to a relayed legacy body (a list popped by the waiting instance);
- `i:<instance>`, `g:<session>`: which instances are alive, which holds a session's GET stream; the `h`
  field of a POST stream's events: which instance answers it (`redis_liveness`).

Every call is bounded by `timeout` seconds; past it (or when Redis refuses) `StoreUnavailable` is raised,
and the server answers the request with 503. The client reconnects by itself once Redis is back.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .events import Replay, split_event_id
from .pipe import Pipe
from .redis_liveness import RedisLiveness
from .store import SessionState, StoreUnavailable, _where
from .streams import format_event

__all__ = ["RedisStore"]

T = TypeVar("T")

_PREFIX = "mcpframe:"
_ROUTE = _PREFIX + "route"
_BLOCK_MS = 5000  # one XREAD BLOCK; between two, a tail checks that its session still exists
_TAIL_BATCH = 64  # entries read at once by a tail
_TAIL_QUEUED = 256  # chunks a tail lets wait in its pipe before it stops reading (flow control)
_ACK_TTL_MS = 10_000  # how long a legacy relay's answer waits for an instance that may have given up
_DELETED_TTL_MS = 10_000  # how long a deleted session's GET stream keeps its end marker for tails


class RedisStore(RedisLiveness):
    """The shared store on Redis (`redis.asyncio`); see the module's docstring for what it keeps."""

    def __init__(
        self,
        url: str,
        *,
        idle_timeout: float | None = 1800.0,
        timeout: float = 2.0,
        max_events: int = 1024,
        liveness: float = 15.0,
    ) -> None:
        self.url = url
        self.idle_timeout = idle_timeout
        self.timeout = timeout
        self.max_events = max_events
        self.liveness = liveness  # the time to live of this instance's liveness key and GET claims
        self.instance = secrets.token_hex(8)  # this instance's id in the store (`i:<instance>`)
        self._ttl_ms = None if idle_timeout is None else max(1, int(idle_timeout * 1000))
        # no socket timeout: each call is bounded by `_call`, and a tail's XREAD BLOCK waits longer on purpose
        # a connection of the pool that a restarted Redis closed is replaced once, at once (within the bound)
        retry = Retry(NoBackoff(), 1)
        self.redis: aioredis.Redis = aioredis.Redis.from_url(
            url, socket_connect_timeout=timeout, retry=retry, retry_on_error=[RedisConnectionError]
        )
        self.where = _where(url)
        self._scripts()

    # ------------------------------------------------------------ plumbing

    async def _call(self, what: str, call: Awaitable[T], timeout: float | None = None) -> T:
        """One bounded Redis round trip; `StoreUnavailable` naming Redis when it fails or is late."""
        try:
            async with asyncio.timeout(self.timeout if timeout is None else timeout):
                return await call
        except (RedisError, OSError, TimeoutError) as exc:
            late = isinstance(exc, TimeoutError | RedisTimeoutError)
            why = "did not answer in time" if late else str(exc) or type(exc).__name__
            raise StoreUnavailable(
                f"the session store (Redis at {self.where}) failed {what}: {why}", late=late
            ) from exc

    async def bounded(self, what: str, call: Awaitable[T]) -> T:
        """One Redis round trip under the store's bound (for the other users of this pool: the task store)."""
        return await self._call(what, call)

    def task_store(self) -> Any:
        """A `TaskStore` on this pool (`RedisTaskStore`): the server's tasks shared like its sessions."""
        from .redis_tasks import RedisTaskStore  # noqa: PLC0415 - it imports this module

        return RedisTaskStore(self)

    def _expire(self, pipe: Any, key: str) -> None:
        if self._ttl_ms is not None:
            pipe.pexpire(key, self._ttl_ms)

    async def start(self, deliver: Callable[[str, bytes], None]) -> Callable[[], Coroutine[Any, Any, None]]:
        """Check that Redis answers (`PING`: one that is late only is waited for by the calls to come,
        each answered with 503 until it answers); return the listener of published frames."""
        try:
            await self.ping()
        except StoreUnavailable as exc:
            if not exc.late:
                raise

        async def listen() -> None:
            while True:  # a lost connection is retried: the instance keeps serving what needs no cancel
                try:
                    pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
                    async with pubsub:
                        await pubsub.subscribe(_ROUTE)
                        async for message in pubsub.listen():
                            _dispatch(message, deliver)
                except (RedisError, OSError):
                    await asyncio.sleep(self.timeout)

        return listen

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.redis.aclose()

    async def ping(self) -> None:
        """`PING`."""
        await self._call("PING", self.redis.ping())

    # ------------------------------------------------------------ sessions

    async def save(self, session_id: str, state: SessionState) -> None:
        """`SET s:<session>` with the TTL."""
        doc = json.dumps(state.to_json(), separators=(",", ":"))
        px = self._ttl_ms
        await self._call("SET", self.redis.set(_PREFIX + "s:" + session_id, doc, px=px))

    async def load(self, session_id: str) -> SessionState | None:
        """`GETEX s:<session>` refreshing the TTL: one round trip per request."""
        key = _PREFIX + "s:" + session_id
        if self._ttl_ms is None:
            raw = await self._call("GET", self.redis.get(key))
        else:
            raw = await self._call("GETEX", self.redis.getex(key, px=self._ttl_ms))
        if raw is None:
            return None
        return SessionState.from_json(json.loads(raw))

    async def delete(self, session_id: str) -> None:
        """End the GET stream (tails elsewhere stop), then drop the state and every stream of the session."""
        streams_key = _PREFIX + "k:" + session_id
        get_key = _stream_key(session_id, "get")
        keys = await self._call("SMEMBERS", self.redis.smembers(streams_key))
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(get_key, {"end": "1"}, id="0-*")
        pipe.pexpire(get_key, _DELETED_TTL_MS)
        doomed = [k for k in keys if k != get_key.encode()]
        pipe.delete(_PREFIX + "s:" + session_id, _PREFIX + "g:" + session_id, streams_key, *doomed)
        await self._call("DELETE", pipe.execute())

    async def publish(self, session_id: str, frame: bytes) -> None:
        """`PUBLISH route`: every instance hears it; the one running the request it is about takes it."""
        payload = session_id.encode() + b"\n" + frame
        await self._call("PUBLISH", self.redis.publish(_ROUTE, payload))

    # ------------------------------------------------------------ legacy SSE sessions (`legacy_shared`)

    async def hold_legacy(self, session_id: str, owner: str | None, ttl: float) -> None:
        """`SET l:<session> {owner, instance} PX ttl`."""
        doc = json.dumps({"owner": owner, "i": self.instance})
        key = _PREFIX + "l:" + session_id
        await self._call("SET", self.redis.set(key, doc, px=max(1, int(ttl * 1000))))

    async def release_legacy(self, session_id: str) -> None:
        """`DEL l:<session>`."""
        await self._call("DEL", self.redis.delete(_PREFIX + "l:" + session_id))

    async def legacy_owner(self, session_id: str) -> tuple[str | None] | None:
        """`GET l:<session>`: `(owner,)`, or `None` when no instance holds it (or the one that did died:
        its liveness key is gone, whatever the time to live left to this key)."""
        call = self._if_alive(keys=[_PREFIX + "l:" + session_id], args=[_PREFIX + "i:"])
        found: Any = await self._call("EVALSHA", call)
        if not found or not found[0]:
            return None
        owner = json.loads(found[1]).get("owner")
        return (owner if isinstance(owner, str) else None,)

    async def relay_legacy(self, session_id: str, message: bytes, wait: float) -> bytes | None:
        """`PUBLISH route` tagged `l:<session>` with a fresh nonce, then `BLPOP la:<nonce>` up to `wait` s."""
        nonce = secrets.token_hex(12)
        payload = b"l:" + session_id.encode() + b"\n" + nonce.encode() + b"\n" + message
        await self._call("PUBLISH", self.redis.publish(_ROUTE, payload))
        call = self.redis.blpop([_PREFIX + "la:" + nonce], timeout=wait)
        got: Any = await self._call("BLPOP", call, timeout=wait + self.timeout)
        return None if got is None else bytes(got[1])

    async def ack_legacy(self, nonce: str, status: bytes) -> None:
        """`RPUSH la:<nonce>` (expiring soon: a waiter that gave up never pops it)."""
        key = _PREFIX + "la:" + nonce
        pipe = self.redis.pipeline(transaction=False)
        pipe.rpush(key, status)
        pipe.pexpire(key, _ACK_TTL_MS)
        await self._call("RPUSH", pipe.execute())

    # ------------------------------------------------------------ events (the EventStore protocol)

    async def store(self, session_id: str, stream_id: str, message: bytes | None) -> str:
        """`XADD e:<session>:<stream> MAXLEN max_events 0-*`; the id names the stream and the entry."""
        key = _stream_key(session_id, stream_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(key, self._fields(stream_id, message), id="0-*", maxlen=self.max_events, approximate=False)
        self._expire(pipe, key)
        pipe.sadd(_PREFIX + "k:" + session_id, key)
        self._expire(pipe, _PREFIX + "k:" + session_id)
        entry = (await self._call("XADD", pipe.execute()))[0]
        return f"{stream_id}.{_seq(entry)}"

    async def store_many(self, session_id: str, stream_id: str, messages: list[bytes | None]) -> list[str]:
        """`store` for several events, in one round trip (one pipeline); their ids in order."""
        key = _stream_key(session_id, stream_id)
        pipe = self.redis.pipeline(transaction=False)
        last = len(messages) - 1
        for n, message in enumerate(messages):  # the head on the newest entry is enough (`redis_liveness`)
            fields = self._fields(stream_id, message) if n == last else {"m": message or b""}
            pipe.xadd(key, fields, id="0-*", maxlen=self.max_events, approximate=False)
        self._expire(pipe, key)
        pipe.sadd(_PREFIX + "k:" + session_id, key)
        self._expire(pipe, _PREFIX + "k:" + session_id)
        done = await self._call("XADD", pipe.execute())
        return [f"{stream_id}.{_seq(entry)}" for entry in done[: len(messages)]]

    async def replay(self, session_id: str, last_event_id: str) -> Replay | None:
        """`XRANGE` after the id (priming events left out); `None` when the stream or id is unknown."""
        parsed = split_event_id(last_event_id)
        if parsed is None:
            return None
        stream_id, seq = parsed
        key = _stream_key(session_id, stream_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.xrange(key, min=f"(0-{seq}", max="+")
        pipe.xrevrange(key, max="+", min="-", count=1)
        entries, newest = await self._call("XRANGE", pipe.execute())
        if not newest or seq > _seq(newest[0][0]):
            return None
        if entries and _seq(entries[0][0]) > seq + 1:
            return None  # MAXLEN trimmed the events right after the id: a replay would skip them
        events = [(f"{stream_id}.{_seq(eid)}", f[b"m"]) for eid, f in entries if f.get(b"m")]
        return Replay(stream_id, events)

    async def forget(self, session_id: str) -> None:
        """The session ended on this instance (idle or closed): its events stay until their TTL, since
        another instance may still serve it; DELETE (`delete`) is what removes them."""

    async def end_stream(self, session_id: str, stream_id: str) -> None:
        """Append the end marker: a tail on another instance ends the response it feeds."""
        key = _stream_key(session_id, stream_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(key, {"end": "1"}, id="0-*", maxlen=self.max_events, approximate=False)
        self._expire(pipe, key)
        await self._call("XADD", pipe.execute())

    async def tail(self, session_id: str, stream_id: str, after: int, pipe: Pipe) -> None:
        """Read the stream from entry `0-<after>` on (`XREAD BLOCK`) into `pipe`; see `SharedStore.tail`.

        A failure of Redis closes the pipe: the client sees the stream end and resumes with its last id.
        A POST stream whose instance died is ended here with an error answer for each request it did not
        answer (`finish_orphan`): checked whenever nothing came for a third of the liveness time to live.
        """
        key = _stream_key(session_id, stream_id)
        last = f"0-{after}"
        block = _BLOCK_MS if stream_id == "get" else min(_BLOCK_MS, max(1, self._liveness_ms // 3))
        try:
            while not pipe.closed:
                while pipe.queued() > _TAIL_QUEUED and not pipe.closed:  # a slow reader slows the tail
                    await asyncio.sleep(0.01)
                call = self.redis.xread({key: last}, count=_TAIL_BATCH, block=block)
                got: Any = await self._call("XREAD", call, timeout=block / 1000 + self.timeout)
                if not got:
                    if not await self._call("EXISTS", self.redis.exists(_PREFIX + "s:" + session_id)):
                        return  # expired or deleted
                    if stream_id != "get":
                        await self.finish_orphan(key)  # what it appends is read next
                    continue
                entries: list[tuple[bytes, dict[bytes, bytes]]] = got[0][1]
                for entry_id, fields in entries:
                    last = entry_id.decode()
                    if b"end" in fields:
                        return
                    message = fields.get(b"m")
                    if message:
                        pipe.put(format_event(message, f"{stream_id}.{_seq(last)}"))
        except StoreUnavailable:
            pass
        finally:
            pipe.close()


def _stream_key(session_id: str, stream_id: str) -> str:
    return f"{_PREFIX}e:{session_id}:{stream_id}"


def _seq(entry_id: bytes | str) -> int:
    """The `n` of an entry id `0-n`."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.rpartition("-")[2])


def _dispatch(message: dict[str, Any], deliver: Callable[[str, bytes], None]) -> None:
    data = message.get("data")
    if isinstance(data, bytes):
        session_id, _, frame = data.partition(b"\n")
        deliver(session_id.decode(errors="replace"), frame)
