"""Where a server keeps its tasks (2025-11-25 experimental tasks, SEP-1686): records and the store seam.

A `TaskRecord` is the state of one task as the wire shows it (`Task`) plus what `tasks/result` returns once
it is terminal. A `TaskStore` keeps records keyed by (owner, taskId): the owner is the session that made the
task, so one session can never read or cancel another's (the lookup itself is scoped, and an unknown id and
someone else's id get the same "not found" answer). `MemoryTaskStore` is the default; a shared store (Redis,
for several server processes) implements the same five methods.

Records are kept for their `ttl` from creation, then dropped (the specification lets a receiver delete a task
and its result once its ttl has elapsed, whatever its status); the memory store also holds at most
`max_tasks`, dropping the oldest finished task to make room and refusing a new one when all are running.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

__all__ = [
    "TERMINAL",
    "MemoryTaskStore",
    "TaskLimitError",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""Statuses a task never leaves."""

Clock = Callable[[], float]
"""Seconds since the epoch (``time.time``); injectable so tests can expire a task without waiting."""


def iso8601(seconds: float) -> str:
    """A UTC timestamp as the specification's `createdAt` / `lastUpdatedAt` carry it."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskLimitError(Exception):
    """The store is full of running tasks: no room for a new one."""


@dataclasses.dataclass(slots=True)
class TaskRecord:
    """One task: its wire state, and once terminal the outcome `tasks/result` gives back.

    ``outcome`` is ``{"result": CallToolResult}`` or ``{"error": {"code", "message", "data"?}}``: plain JSON,
    so a store in another process can hold it.
    """

    task_id: str
    owner: str
    status: TaskStatus
    created_at: float
    updated_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None
    status_message: str | None = None
    outcome: dict[str, Any] | None = None
    modern: bool = False
    """Made by a 2026-07-28 request (the tasks extension): its Task has that era's shape."""
    input_requests: dict[str, Any] | None = None
    """2026-07-28: the requests to the client the task waits on (``inputRequests`` while input_required)."""

    @property
    def terminal(self) -> bool:
        """Whether the task has finished (completed, failed or cancelled)."""
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        """Whether its ttl (counted from creation) has elapsed; an unlimited ttl never does."""
        return self.ttl_ms is not None and now >= self.created_at + self.ttl_ms / 1000

    def wire(self) -> dict[str, Any]:
        """The `Task` object of `tasks/get`, `tasks/list`, `tasks/cancel` and status notifications."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso8601(self.created_at),
            "lastUpdatedAt": iso8601(self.updated_at),
            "ttl": self.ttl_ms,  # null means unlimited: the specification wants the field present
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if self.poll_interval_ms is not None:
            task["pollInterval"] = self.poll_interval_ms
        return task

    def detailed(self) -> dict[str, Any]:
        """The 2026-07-28 extension's ``DetailedTask``: ``ttlMs``/``pollIntervalMs``, and inline the
        ``inputRequests`` (input_required), ``result`` (completed) or ``error`` (failed)."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso8601(self.created_at),
            "lastUpdatedAt": iso8601(self.updated_at),
            "ttlMs": self.ttl_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if self.poll_interval_ms is not None:
            task["pollIntervalMs"] = self.poll_interval_ms
        outcome = self.outcome or {}
        if self.status == "input_required" and self.input_requests:
            task["inputRequests"] = dict(self.input_requests)
        elif self.status == "completed" and "result" in outcome:
            task["result"] = outcome["result"]
        elif self.status == "failed" and "error" in outcome:
            task["error"] = outcome["error"]
        return task


class TaskStore(Protocol):
    """Keeps task records, scoped by owner. Each method may be a network round trip (hence async)."""

    async def add(self, record: TaskRecord) -> None:
        """Keep a new record; ``TaskLimitError`` when there is no room."""
        ...

    async def get(self, owner: str, task_id: str) -> TaskRecord | None:
        """The owner's record, or None (unknown, someone else's, or expired)."""
        ...

    async def save(self, record: TaskRecord) -> None:
        """Store a changed record (nothing if it has gone meanwhile: expired or dropped)."""
        ...

    async def owned(self, owner: str) -> list[TaskRecord]:
        """The owner's live records, oldest first."""
        ...

    async def drop_owner(self, owner: str) -> None:
        """Forget every record of `owner` (its session has ended)."""
        ...


class MemoryTaskStore:
    """A `TaskStore` in this process's memory, bounded by count and ttl."""

    def __init__(self, *, max_tasks: int = 1000, clock: Clock = time.time) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.max_tasks = max_tasks
        self.clock = clock
        self._records: dict[tuple[str, str], TaskRecord] = {}  # insertion order: oldest first

    def __len__(self) -> int:
        self._purge()
        return len(self._records)

    def _purge(self) -> None:
        """Drop expired records (cheap enough: the store never holds more than `max_tasks`)."""
        now = self.clock()
        for key in [key for key, record in self._records.items() if record.expired(now)]:
            del self._records[key]

    async def add(self, record: TaskRecord) -> None:
        """Keep `record`, dropping the oldest finished task when full; ``TaskLimitError`` if all run."""
        self._purge()
        if len(self._records) >= self.max_tasks:
            oldest = next((key for key, old in self._records.items() if old.terminal), None)
            if oldest is None:
                raise TaskLimitError(
                    f"too many tasks in progress (this server keeps at most {self.max_tasks})"
                )
            del self._records[oldest]
        self._records[(record.owner, record.task_id)] = record

    async def get(self, owner: str, task_id: str) -> TaskRecord | None:
        """The owner's live record, or None."""
        self._purge()
        return self._records.get((owner, task_id))

    async def save(self, record: TaskRecord) -> None:
        """Replace the stored record (the memory store hands out the object itself, so usually a no-op)."""
        key = (record.owner, record.task_id)
        if key in self._records:
            self._records[key] = record

    async def owned(self, owner: str) -> list[TaskRecord]:
        """The owner's live records, oldest first."""
        self._purge()
        return [record for record in self._records.values() if record.owner == owner]

    async def drop_owner(self, owner: str) -> None:
        """Forget the owner's records."""
        for key in [key for key in self._records if key[0] == owner]:
            del self._records[key]
