"""Calling a tool as a task (2025-11-25 experimental tasks, SEP-1686) and waiting for it.

``await client.call_tool(name, args, task=True)`` (or ``ttl=ms``) sends ``params.task``; the server answers
at once with a task, and the call returns a `TaskHandle`:

```python
handle = await client.call_tool("research", {"topic": "tides"}, task=True)
result = await handle.result()        # polls tasks/get at the server's pollInterval, then tasks/result
await handle.cancel()                 # tasks/cancel (a task already finished cannot be cancelled: -32602)
```

A server that runs the call directly (it has no ``tasks`` capability, or decides so) answers with the
result itself; the handle then holds it and ``result()`` returns it without a round trip.
``notifications/tasks/status`` wake a waiting handle early and reach ``client.tasks.on_status``; the
specification makes them optional, so waiting never relies on them.

2026-07-28 (the tasks extension, which the client declares in every request): the server decides, so a plain
``call_tool`` may be answered ``resultType: "task"``; the call then polls it to the end by itself and returns
the result, as the extension suggests for callers that expect one. ``tasks/get`` carries the outcome inline,
and a task's ``inputRequests`` (elicitation, sampling) are answered by the client's handlers and sent back
with ``tasks/update``. There is no ``tasks/result`` or ``tasks/list`` in that era.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from mcpframe import jsonrpc, protocol
from mcpframe.session import JSONRPCError, RequestTimeout

if TYPE_CHECKING:
    from .methods import Requester

__all__ = ["TERMINAL_STATUSES", "Fulfil", "TaskHandle", "TaskStatusCallback", "TaskTracker"]

TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
"""A task in one of these has finished: ``tasks/result`` answers at once."""

TaskStatusCallback = Callable[[dict[str, Any]], Any]
"""Called with the Task of each ``notifications/tasks/status`` (``taskId``, ``status``, ...); may be async."""

Fulfil = Callable[[Any], Awaitable[dict[str, Any]]]
"""Answers ``inputRequests`` with the client's handlers (``Inbound.fulfil``), keyed like them."""

_DEFAULT_POLL = 1.0  # seconds, when the server suggests no pollInterval


_STATUS_NOTIFICATIONS = frozenset({protocol.NOTIFICATIONS_TASKS_STATUS, protocol.NOTIFICATIONS_TASKS})


class TaskHandle:
    """A tool call running as a task on the server: its last known state, and how to wait or cancel."""

    def __init__(
        self,
        requester: Requester,
        task: dict[str, Any] | None,
        *,
        result: dict[str, Any] | None = None,
        modern: bool = False,
        fulfil: Fulfil | None = None,
    ) -> None:
        self._requester = requester
        self.task: dict[str, Any] = dict(task or {})
        """The Task as last seen (CreateTaskResult, ``tasks/get`` or a status notification)."""
        self.task.pop("resultType", None)
        self.task.pop("_meta", None)
        self.modern = modern
        """Whether it is a 2026-07-28 task (the tasks extension) rather than a 2025-11-25 one."""
        self._fulfil = fulfil
        self._answered: set[str] = set()  # inputRequests keys already sent back (2026-07-28)
        self._result = result
        self._changed = anyio.Event()

    @property
    def task_id(self) -> str | None:
        """The server's id for the task (``None`` when the server answered the call directly)."""
        task_id = self.task.get("taskId")
        return task_id if isinstance(task_id, str) else None

    @property
    def status(self) -> str:
        """``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled``."""
        if self._result is not None and self.task_id is None:  # the server ran the call directly
            return "failed" if self._result.get("isError") else "completed"
        return str(self.task.get("status", "working"))

    @property
    def poll_interval(self) -> float:
        """Seconds between polls: the server's ``pollInterval``, else one second."""
        interval = self.task.get("pollIntervalMs" if self.modern else "pollInterval")
        if isinstance(interval, int | float) and not isinstance(interval, bool) and interval > 0:
            return float(interval) / 1000
        return _DEFAULT_POLL

    def update(self, task: dict[str, Any]) -> None:
        """Take a newer Task state (from a status notification) and wake a waiting ``result()``."""
        self.task = dict(task)
        self._changed.set()

    async def refresh(self, *, timeout: float | None = None) -> dict[str, Any]:
        """``tasks/get``: the task's current state (also kept in ``task``)."""
        if self.task_id is None:
            return self.task
        found = await self._requester.request(protocol.TASKS_GET, {"taskId": self.task_id}, timeout=timeout)
        if isinstance(found, dict):
            self.task = {key: value for key, value in found.items() if key not in ("resultType", "_meta")}
        return self.task

    async def wait(self) -> dict[str, Any]:
        """Poll until the task is terminal or needs input (``input_required``); the Task then."""
        while self.task_id is not None and self.status not in TERMINAL_STATUSES:
            if self.status == "input_required" and not self.modern:
                break  # the specification: go to tasks/result now (the server's requests come meanwhile)
            if self.status == "input_required":
                await self._answer_inputs()
            self._changed = anyio.Event()
            with anyio.move_on_after(self.poll_interval):
                await self._changed.wait()
            await self.refresh()
        return self.task

    async def result(self, *, timeout: float | None = None) -> dict[str, Any]:
        """The tool's CallToolResult once the task ends; a JSON-RPC error of the call raises as it would.

        Polls ``tasks/get`` at the server's interval, then asks ``tasks/result`` (which the server holds
        until the task is terminal). ``timeout`` bounds each ``tasks/result`` (default: the client's): one
        sent on ``input_required`` that outlasts it goes back to polling, so a long task never times out.
        """
        if self._result is not None:
            return self._result
        while True:
            await self.wait()
            if self.modern:
                self._result = self._outcome()
                return self._result
            try:
                result = await self._requester.request(
                    protocol.TASKS_RESULT, {"taskId": self.task_id}, timeout=timeout
                )
            except RequestTimeout:
                if self.status in TERMINAL_STATUSES:
                    raise
                await self.refresh()
                continue
            self._result = result if isinstance(result, dict) else {}
            return self._result

    async def cancel(self) -> dict[str, Any]:
        """``tasks/cancel``: the Task, now ``cancelled`` (-32602 from the server if it had already ended)."""
        if self.task_id is None:
            raise RuntimeError("the server ran this call directly: there is no task to cancel")
        cancelled = await self._requester.request(protocol.TASKS_CANCEL, {"taskId": self.task_id})
        if self.modern:  # an acknowledgement only: look at the task again
            return await self.refresh()
        if isinstance(cancelled, dict):
            self.update(cancelled)
        return self.task

    async def _answer_inputs(self) -> None:
        """2026-07-28: answer new ``inputRequests`` with the client's handlers, in ``tasks/update``."""
        wanted = self.task.get("inputRequests")
        if not isinstance(wanted, dict):
            return
        fresh = {key: request for key, request in wanted.items() if key not in self._answered}
        if not fresh:
            return
        if self._fulfil is None:
            raise RuntimeError("this task needs input, and the handle has no way to answer it")
        responses = await self._fulfil(fresh)
        self._answered.update(fresh)
        params = {"taskId": self.task_id, "inputResponses": responses}
        await self._requester.request(protocol.TASKS_UPDATE, params)

    def _outcome(self) -> dict[str, Any]:
        """2026-07-28: the terminal Task's inline result; its error (or a cancellation) raises."""
        if self.status == "completed" and isinstance(self.task.get("result"), dict):
            return dict(self.task["result"])
        error = self.task.get("error")
        if self.status == "failed" and isinstance(error, dict):
            raise JSONRPCError(
                int(error.get("code", jsonrpc.INTERNAL_ERROR)), str(error.get("message")), error.get("data")
            )
        raise JSONRPCError(jsonrpc.INTERNAL_ERROR, f"Task {self.task_id} ended {self.status} with no result")


class TaskTracker:
    """Routes ``notifications/tasks/status`` to the handles waiting on those tasks and to ``on_status``."""

    def __init__(self) -> None:
        self.on_status: TaskStatusCallback | None = None
        """Called with every Task a status notification carries (set it: ``client.tasks.on_status = fn``)."""
        self.fulfil: Fulfil | None = None
        """How a 2026-07-28 task's ``inputRequests`` are answered (the client sets its handlers here)."""
        self._handles: weakref.WeakValueDictionary[str, TaskHandle] = weakref.WeakValueDictionary()

    def track(self, handle: TaskHandle) -> TaskHandle:
        """Let status notifications reach `handle` (held weakly: a dropped handle is forgotten)."""
        if handle.task_id is not None:
            self._handles[handle.task_id] = handle
        return handle

    async def observe(self, method: str, params: Any) -> None:
        """Look at one server notification; act on a task status (2025-11-25's `notifications/tasks/status`,
        or 2026-07-28's `notifications/tasks` on a `listen(task_ids=...)`)."""
        if method not in _STATUS_NOTIFICATIONS or not isinstance(params, dict):
            return
        handle = self._handles.get(str(params.get("taskId")))
        if handle is not None:
            handle.update(params)
        if self.on_status is not None:
            outcome = self.on_status(params)
            if inspect.isawaitable(outcome):
                await outcome
