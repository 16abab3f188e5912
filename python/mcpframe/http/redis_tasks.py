"""`RedisTaskStore`: a server's tasks kept in Redis, so every instance behind a balancer can answer for them.

With `--store redis://...` the HTTP host puts the server's tasks here (unless the application chose its own
`TaskStore`): a task started on one instance is read (`tasks/get`, `tasks/list`), waited for (`tasks/result`
polls the store at the poll interval for a task running elsewhere) and cancelled from any other; tasks are
scoped by the HTTP session id, which every instance shares.

Keys (the `mcpframe:` prefix of `RedisStore`):

- `t:<owner>:<taskId>`: the `TaskRecord` as JSON, expiring with the task's ttl (none for an unlimited one);
- `to:<owner>`: a sorted set of the owner's task ids by creation time, for `tasks/list` and the count bound.

Every call goes through `RedisStore`'s bound (`StoreUnavailable` past it): a request about a task then fails
with the store's error instead of hanging.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from mcpframe.server.tasks_store import TaskLimitError, TaskRecord

from .redis_store import RedisStore

__all__ = ["RedisTaskStore"]

_PREFIX = "mcpframe:"


def _record_key(owner: str, task_id: str) -> str:
    return f"{_PREFIX}t:{owner}:{task_id}"


def _index_key(owner: str) -> str:
    return f"{_PREFIX}to:{owner}"


def _dump(record: TaskRecord) -> str:
    return json.dumps(dataclasses.asdict(record), separators=(",", ":"))


def _load(raw: bytes | str) -> TaskRecord:
    fields: dict[str, Any] = json.loads(raw)
    return TaskRecord(**fields)


class RedisTaskStore:
    """A `TaskStore` on the shared `RedisStore`'s connection pool; at most `max_tasks` per owner."""

    def __init__(self, store: RedisStore, *, max_tasks: int = 1000) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.store = store
        self.max_tasks = max_tasks

    async def add(self, record: TaskRecord) -> None:
        """Keep `record`; past `max_tasks` the owner's oldest finished task goes, or `TaskLimitError`."""
        redis, index = self.store.redis, _index_key(record.owner)
        counted = await self.store.bounded("ZCARD", redis.zcard(index))
        # only near the bound are the records read (which also drops the ids of those that expired)
        live = await self.owned(record.owner) if counted >= self.max_tasks else []
        if len(live) >= self.max_tasks:
            oldest = next((old for old in live if old.terminal), None)
            if oldest is None:
                raise TaskLimitError(
                    f"too many tasks in progress (this server keeps at most {self.max_tasks})"
                )
            await self.store.bounded("DEL", redis.delete(_record_key(oldest.owner, oldest.task_id)))
            await self.store.bounded("ZREM", redis.zrem(index, oldest.task_id))
        ttl = None if record.ttl_ms is None else max(1, record.ttl_ms)
        pipe = redis.pipeline(transaction=False)
        pipe.set(_record_key(record.owner, record.task_id), _dump(record), px=ttl)
        pipe.zadd(index, {record.task_id: record.created_at})
        if ttl is not None:  # the index lives as long as its longest-lived task (NX: new key; GT: longer)
            pipe.pexpire(index, ttl, nx=True)
            pipe.pexpire(index, ttl, gt=True)
        await self.store.bounded("SET", pipe.execute())

    async def get(self, owner: str, task_id: str) -> TaskRecord | None:
        """The owner's record, or None (unknown, someone else's, or expired: Redis dropped it)."""
        raw = await self.store.bounded("GET", self.store.redis.get(_record_key(owner, task_id)))
        return None if raw is None else _load(raw)

    async def save(self, record: TaskRecord) -> None:
        """`SET ... XX KEEPTTL`: a changed record, unless it has expired or been dropped meanwhile."""
        key = _record_key(record.owner, record.task_id)
        await self.store.bounded("SET", self.store.redis.set(key, _dump(record), xx=True, keepttl=True))

    async def owned(self, owner: str) -> list[TaskRecord]:
        """The owner's live records, oldest first (ids whose record expired are dropped from the index)."""
        redis, index = self.store.redis, _index_key(owner)
        found = await self.store.bounded("ZRANGE", redis.zrange(index, 0, -1))
        ids = [i.decode() if isinstance(i, bytes) else str(i) for i in found]
        if not ids:
            return []
        raws = await self.store.bounded("MGET", redis.mget([_record_key(owner, i) for i in ids]))
        gone = [task_id for task_id, raw in zip(ids, raws, strict=True) if raw is None]
        if gone:
            await self.store.bounded("ZREM", redis.zrem(index, *gone))
        return [_load(raw) for raw in raws if raw is not None]

    async def drop_owner(self, owner: str) -> None:
        """Forget the owner's records (its session has ended)."""
        redis, index = self.store.redis, _index_key(owner)
        ids = await self.store.bounded("ZRANGE", redis.zrange(index, 0, -1))
        keys = [_record_key(owner, i.decode() if isinstance(i, bytes) else str(i)) for i in ids]
        await self.store.bounded("DEL", redis.delete(index, *keys))
