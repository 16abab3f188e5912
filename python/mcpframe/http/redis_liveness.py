"""What `RedisStore` keeps about instances: who is alive, who holds a session's GET stream, who writes a
POST stream, and how a stream whose writer died is ended.

Keys (`mcpframe:` prefix):

- `i:<instance>`: the instance is alive; a time to live of `liveness` seconds, refreshed every quarter of it
  by a timer of the instance (`refresh`), whatever its traffic; deleted when it stops (`retire`);
- `g:<session>`: the claim of the session's standalone GET stream, `<instance>:<nonce>` of the response
  holding it, `SET NX` (a second GET gets 409), refreshed with the liveness key, deleted when the response
  ends; a claim nobody refreshes (its instance died) lapses within `liveness` seconds;
- in the events of a POST stream, a field `h`, its head: the instance running its requests and their
  ids, in the last entry each call appends (no extra command; the stream's newest entry always says who
  writes it, however long the stream, and older entries need not repeat it). A tail on another instance
  that finds that instance dead appends an error answer for each request the stream did not answer, then
  the end marker (`finish_orphan`).

Small Lua scripts keep each check-and-change atomic (one round trip each).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from mcpframe import core

if TYPE_CHECKING:
    import redis.asyncio as aioredis

__all__ = ["INSTANCE_GONE", "RedisLiveness"]

T = TypeVar("T")

_PREFIX = "mcpframe:"
INSTANCE_GONE = -32000
"""The JSON-RPC code of the answer a request gets when the instance running it died."""

# KEYS: the liveness key, then claim keys; ARGV: ttl ms, then each claim's token. Returns 1 per claim kept
# (refreshed), 0 per claim lost (taken over by a resuming GET elsewhere, or lapsed)
_REFRESH = """
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
local kept = {}
for n = 2, #KEYS do
  if redis.call('GET', KEYS[n]) == ARGV[n] then
    redis.call('PEXPIRE', KEYS[n], ARGV[1])
    kept[n - 1] = 1
  else
    kept[n - 1] = 0
  end
end
return kept
"""

# KEYS[1]: a claim; ARGV[1]: its token. Deleted only if still ours
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS[1]: a stream; ARGV[1]: the liveness key prefix. The head (`h`) of its newest entry when the
# instance it names is not alive; nil when that instance lives, the stream ended or has no head
_ORPHANED = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if not last[1] then return false end
local f = last[1][2]
for n = 1, #f, 2 do
  if f[n] == 'end' then return false end
  if f[n] == 'h' then
    local ok, doc = pcall(cjson.decode, f[n + 1])
    if ok and type(doc) == 'table' and type(doc['i']) == 'string'
       and redis.call('EXISTS', ARGV[1] .. doc['i']) == 0 then
      return f[n + 1]
    end
    return false
  end
end
return false
"""

# KEYS[1]: a key whose JSON value names an instance (`i`); ARGV[1]: the liveness key prefix. The value,
# or nil when that instance is not alive (or the key is gone)
_IF_ALIVE = """
local v = redis.call('GET', KEYS[1])
if not v then return false end
local ok, doc = pcall(cjson.decode, v)
if ok and type(doc) == 'table' and type(doc['i']) == 'string'
   and redis.call('EXISTS', ARGV[1] .. doc['i']) == 0 then
  return {0, v}
end
return {1, v}
"""

# KEYS[1]: a stream; ARGV[1]: its MAXLEN, then the frames to append before the end marker. Nothing when
# the stream is gone or already ended (another tail finished it first)
_FINISH = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if last[1] then
  local f = last[1][2]
  for n = 1, #f, 2 do if f[n] == 'end' then return 0 end end
end
for n = 2, #ARGV do redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '0-*', 'm', ARGV[n]) end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '0-*', 'end', '1')
return 1
"""


class RedisLiveness:
    """The instance-level part of `RedisStore` (a base class: it uses the store's pool and bound)."""

    redis: aioredis.Redis
    instance: str
    liveness: float
    max_events: int
    _ttl_ms: int | None

    if TYPE_CHECKING:

        async def _call(self, what: str, call: Awaitable[T], timeout: float | None = None) -> T: ...

    def _scripts(self) -> None:
        self._refresh = self.redis.register_script(_REFRESH)
        self._release = self.redis.register_script(_RELEASE)
        self._if_alive = self.redis.register_script(_IF_ALIVE)
        self._finish = self.redis.register_script(_FINISH)
        self._orphaned = self.redis.register_script(_ORPHANED)
        self._heads: dict[str, bytes] = {}  # stream id -> head, in the newest entry of each write

    @property
    def _liveness_ms(self) -> int:
        return max(1, int(self.liveness * 1000))

    # ------------------------------------------------------------ this instance

    async def refresh(self, claims: dict[str, str]) -> set[str]:
        """Refresh this instance's liveness key and the GET claims it holds (`session id -> token`), in
        one round trip; the sessions whose claim was lost."""
        sessions = list(claims)
        keys = [_PREFIX + "i:" + self.instance, *(_PREFIX + "g:" + s for s in sessions)]
        args: list[str | int] = [self._liveness_ms, *(claims[s] for s in sessions)]
        kept: Any = await self._call("EVALSHA", self._refresh(keys=keys, args=args))
        return {s for s, ok in zip(sessions, kept, strict=True) if not ok}

    async def retire(self, claims: dict[str, str]) -> None:
        """This instance stops: it is no longer alive, its claims go (one round trip)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.delete(_PREFIX + "i:" + self.instance)
        for session_id, token in claims.items():  # queued on the pipeline (no round trip yet)
            await self._release(keys=[_PREFIX + "g:" + session_id], args=[token], client=pipe)
        await self._call("DEL", pipe.execute())

    # ------------------------------------------------------------ GET stream claims

    async def claim_get(self, session_id: str, token: str, *, take: bool) -> bool:
        """Claim the session's GET stream (`take`: even from another response, which a resume replaces);
        `False` when another response holds it."""
        key = _PREFIX + "g:" + session_id
        return bool(await self._call("SET", self.redis.set(key, token, px=self._liveness_ms, nx=not take)))

    async def release_get(self, session_id: str, token: str) -> None:
        """The response holding the claim ended: the next GET anywhere may open the stream."""
        await self._call("EVALSHA", self._release(keys=[_PREFIX + "g:" + session_id], args=[token]))

    # ------------------------------------------------------------ POST stream heads

    def describe(self, stream_id: str, request_ids: list[Any]) -> None:
        """Remember who answers the stream's requests: in the newest entry of each write from now on."""
        if len(request_ids) == 1 and type(request_ids[0]) is int:  # the common case, without json (~3x)
            ids = b"[%d]" % request_ids[0]
        else:
            ids = json.dumps(request_ids).encode()
        self._heads[stream_id] = b'{"i":"' + self.instance.encode() + b'","ids":' + ids + b"}"

    def undescribe(self, stream_id: str) -> bytes | None:
        """The stream's requests are answered (or abandoned): its head is no longer written."""
        return self._heads.pop(stream_id, None)

    def _fields(self, stream_id: str, message: bytes | None) -> dict[Any, Any]:
        """The fields of one event's entry: the frame (`m`), and the stream's head (`h`) if it has one."""
        head = self._heads.get(stream_id)
        return {"m": message or b""} if head is None else {"m": message or b"", "h": head}

    async def finish_orphan(self, key: str) -> bool:
        """End the POST stream `key` if the instance answering it died: an error answer for each of its
        requests not answered yet, then the end marker. `False` while that instance lives (or unknown)."""
        found: Any = await self._call("EVALSHA", self._orphaned(keys=[key], args=[_PREFIX + "i:"]))
        if not found:
            return False
        head = json.loads(found)
        entries: Any = await self._call("XRANGE", self.redis.xrange(key))
        answered = set()
        for _, fields in entries:
            try:
                doc = json.loads(fields.get(b"m") or b"null")
            except ValueError:
                continue
            for one in doc if isinstance(doc, list) else [doc]:  # a batch's answers come as one array
                if isinstance(one, dict) and ("result" in one or "error" in one):
                    answered.add(json.dumps(one.get("id")))
        why = (
            f"the server instance handling this request ({head.get('i')}) went away before answering; "
            "its work may or may not have been done"
        )
        frames = [
            core.encode_error(rid, INSTANCE_GONE, why).rstrip(b"\n")
            for rid in head.get("ids") or ()
            if json.dumps(rid) not in answered
        ]
        await self._call("EVALSHA", self._finish(keys=[key], args=[self.max_events, *frames]))
        return True
