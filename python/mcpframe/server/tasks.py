"""Tools that run as tasks (2025-11-25 experimental tasks, SEP-1686): create, poll, wait, list, cancel.

A tool registered with ``task_support="optional"`` or ``"required"`` may be called with ``params.task``
(``{"ttl": ms}``): ``tools/call`` then answers at once with a ``CreateTaskResult`` and the tool runs in the
background. ``tasks/get`` reports its status, ``tasks/result`` waits for the end and returns exactly what
``tools/call`` would have (with the ``io.modelcontextprotocol/related-task`` ``_meta``), ``tasks/list`` pages
through the session's tasks and ``tasks/cancel`` stops one. Each change of status is announced with
``notifications/tasks/status``. When the tool asks the client something (``ctx.elicit``, ``ctx.sample``) the
task is ``input_required`` until the answer arrives; the request carries the related-task ``_meta`` and goes
out on the connection, so a client answers it whether or not it is waiting in ``tasks/result``.

Scoping rule: a task belongs to the connection (MCP session) that created it. Another session asking for its
id is told the task does not exist, exactly as for an unknown id, and never sees it in ``tasks/list``. When
the session ends its running tasks are cancelled (nobody could fetch their results). Task ids are 128 random
bits from ``secrets``.

2026-07-28 carries tasks as an extension (``io.modelcontextprotocol/tasks``, its draft text in the
extension's repository): the server decides, a client that declares the extension may get ``resultType:
"task"`` back, ``tasks/get`` inlines the result, error or ``inputRequests``, the client answers those with
``tasks/update``, and there is neither ``tasks/result`` nor ``tasks/list``. Stateless requests have no
session to scope by: there the task id, unguessable, is the bearer of access (as the extension allows).
The ``tasks/*`` request handlers and the routing of ``tools/call`` are in ``tasks_methods.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from mcpframe import jsonrpc, protocol
from mcpframe.session import JSONRPCError, Request

from .context import CallInfo
from .registry import Tool, paginate
from .tasks_store import Clock, MemoryTaskStore, TaskLimitError, TaskRecord, TaskStatus, TaskStore

logger = logging.getLogger("mcpframe.server")

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = ["MODERN_OWNER", "TASK_CAPABILITY", "TaskManager", "TaskRequest", "TaskSupport"]

RunTool = Callable[
    ["ServerConnection", Request, CallInfo, Tool, dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]
]
"""How a task runs its tool: ``handlers.run_tool`` (passed in, so this module need not import handlers)."""

TaskSupport = Literal["forbidden", "optional", "required"]
"""A tool's ``execution.taskSupport``: whether it may (optional) or must (required) be called as a task."""

TASK_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
"""The server capability ``tasks`` (declared when some tool supports tasks)."""

MODERN_OWNER = "io.modelcontextprotocol/tasks"
"""The scope of 2026-07-28 tasks: stateless requests have no session; the unguessable id is the key."""


def related(task_id: str) -> dict[str, Any]:
    """The ``_meta`` entry that ties a message to its task."""
    return {protocol.RELATED_TASK_KEY: {"taskId": task_id}}


def _with_meta(params: Any, task_id: str) -> dict[str, Any]:
    out = dict(params) if isinstance(params, dict) else {}
    meta = out.get("_meta")
    out["_meta"] = {**meta, **related(task_id)} if isinstance(meta, dict) else related(task_id)
    return out


TaskWatcher = Callable[[dict[str, Any]], Awaitable[None]]
"""Gets a 2026-07-28 task's ``DetailedTask`` on each change (a `subscriptions/listen` request's sender)."""


async def _tell(watcher: TaskWatcher, record: TaskRecord) -> None:
    try:
        await watcher(record.detailed())
    except Exception:  # the listener has gone: the status is still in the store for tasks/get
        logger.debug("could not send the status of task %s", record.task_id, exc_info=True)


def _not_found(task_id: Any) -> JSONRPCError:
    return JSONRPCError(
        jsonrpc.INVALID_PARAMS,
        f"Failed to retrieve task: Task not found ({task_id!r}: unknown, expired, or not this session's)",
    )


def _failure_text(result: dict[str, Any]) -> str | None:
    """The first text of an ``isError`` result: the failed task's ``statusMessage``."""
    for block in result.get("content") or ():
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            return str(block["text"])
    return None


@dataclasses.dataclass(slots=True)
class _Job:
    """A task running in this process: its record, its connection, and how to stop or await it."""

    record: TaskRecord
    conn: ServerConnection
    done: anyio.Event = dataclasses.field(default_factory=anyio.Event)
    scope: anyio.CancelScope | None = None
    runner: asyncio.Task[None] | None = None
    # 2026-07-28: what the task asked the client, waiting for tasks/update (key -> [answered, answer])
    waiting: dict[str, tuple[anyio.Event, list[Any]]] = dataclasses.field(default_factory=dict)
    asked: int = 0
    # 2025-11-25: the tasks/result requests waiting on this task (a request to the client can ride one)
    carriers: list[Request] = dataclasses.field(default_factory=list)
    carrier_came: anyio.Event = dataclasses.field(default_factory=anyio.Event)


class TaskRequest:
    """What a task's ``Context`` speaks through once its ``tools/call`` has been answered.

    The original request is done (its answer was the CreateTaskResult), so progress and notifications go
    out on the connection's session, tagged with the related-task ``_meta``. A request to the client rides
    a waiting ``tasks/result`` when there is one (the specification's suggestion): over Streamable HTTP that
    is the stream whose answers come back to the server. Where the connection has one session for everything
    (stdio, memory) it goes out at once; otherwise it waits for the client's ``tasks/result``.
    """

    def __init__(self, manager: TaskManager, job: _Job, request: Request) -> None:
        self._manager = manager
        self._job = job
        self.id = request.id
        self.method = request.method
        self.params = request.params
        self.meta = request.meta
        self.progress_token = request.progress_token
        self.session = job.conn.session or request.session
        self._direct = self.session is request.session  # one session carries everything (stdio, memory)

    @property
    def cancelled(self) -> bool:
        """True once the task was cancelled (``tasks/cancel``) or its session ended."""
        return self._job.record.status == "cancelled"

    @property
    def done(self) -> bool:
        """Whether the task has reached a terminal status."""
        return self._job.record.terminal

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """``notifications/progress`` for the call's token: it stays valid for the task's lifetime.

        A 2026-07-28 task has no stream left to carry it (its call was answered): nothing is sent.
        """
        if self.progress_token is None or self.done or self._job.record.modern:
            return
        params: dict[str, Any] = {protocol.PROGRESS_TOKEN: self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.session.notify(
            protocol.NOTIFICATIONS_PROGRESS, _with_meta(params, self._job.record.task_id)
        )

    async def send_notification(self, method: str, params: Any = None) -> None:
        """A notification tagged with the task (nothing once it has ended, nor for a 2026-07-28 task)."""
        if not self.done and not self._job.record.modern:
            await self.session.notify(method, _with_meta(params, self._job.record.task_id))

    async def send_request(self, method: str, params: Any = None, **options: Any) -> Any:
        """Ask the client (elicitation, sampling, roots): the task is ``input_required`` meanwhile."""
        job = self._job
        if job.record.modern:
            return await self._manager.ask(job, method, params)
        await self._manager.set_status(job, "input_required", f"Waiting for the client to answer {method}")
        tagged = _with_meta(params, job.record.task_id)
        try:
            while True:
                carrier = next((waiting for waiting in job.carriers if not waiting.done), None)
                if carrier is not None:
                    return await carrier.send_request(method, tagged, **options)
                if self._direct:
                    return await self.session.request(method, tagged, **options)
                job.carrier_came = anyio.Event()
                await job.carrier_came.wait()  # the client calls tasks/result on input_required
        finally:
            if not job.record.terminal:
                await self._manager.set_status(job, "working", None)


class TaskManager:
    """A server's tasks: creates them for task-augmented ``tools/call`` and answers the ``tasks/*`` methods.

    ``Server.tasks`` holds one; replace it (before serving) to choose the store, the ttl bounds, the poll
    interval suggested to clients, or a clock. A requested ttl is capped at ``max_ttl_ms``; none requested
    gets ``default_ttl_ms`` (``None``: unlimited). A task still running when its ttl elapses is cancelled.
    """

    def __init__(
        self,
        store: TaskStore | None = None,
        *,
        default_ttl_ms: int | None = 300_000,
        max_ttl_ms: int | None = 3_600_000,
        poll_interval_ms: int | None = 1_000,
        clock: Clock = time.time,
    ) -> None:
        self.store: TaskStore = store if store is not None else MemoryTaskStore(clock=clock)
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.clock = clock
        self._jobs: dict[str, _Job] = {}
        self._owners: weakref.WeakKeyDictionary[ServerConnection, str] = weakref.WeakKeyDictionary()
        # 2026-07-28: who listens for a task's status (`subscriptions/listen` with `taskIds`)
        self._watchers: dict[str, list[TaskWatcher]] = {}

    # ------------------------------------------------------------------ sessions

    def owner_of(self, conn: ServerConnection, call: CallInfo | None = None) -> str:
        """The scope of `conn`'s tasks: the one its host names (`conn.task_owner`: the HTTP session id),
        else a random key per connection (override to key by an auth subject).

        2026-07-28 requests (``call.modern``) share ``MODERN_OWNER``: the id alone grants access.
        """
        if call is not None and call.modern:
            return MODERN_OWNER
        if conn.task_owner is not None:
            return conn.task_owner
        owner = self._owners.get(conn)
        if owner is None:
            owner = self._owners[conn] = secrets.token_hex(16)
        return owner

    def busy(self, conn: ServerConnection) -> bool:
        """Whether `conn` has a task running (which ending its session would cancel)."""
        return any(job.conn is conn for job in self._jobs.values())

    def forget(self, conn: ServerConnection) -> None:
        """The session ended: cancel its running tasks (their records expire with their ttl)."""
        for job in [job for job in self._jobs.values() if job.conn is conn and not job.record.modern]:
            job.record.status, job.record.status_message = "cancelled", "The session ended."
            if job.scope is not None:
                job.scope.cancel()

    # ------------------------------------------------------------------ 2026-07-28 status listeners

    async def known(self, task_ids: list[str]) -> list[str]:
        """Which of these are live 2026-07-28 tasks (the ids a `subscriptions/listen` may watch)."""
        return [task_id for task_id in task_ids if await self.store.get(MODERN_OWNER, task_id) is not None]

    async def watch(self, task_id: str, watcher: TaskWatcher) -> Callable[[], None]:
        """Call `watcher` with the task's ``DetailedTask`` now and on every change; returns the unwatch."""
        watchers = self._watchers.setdefault(task_id, [])
        watchers.append(watcher)

        def unwatch() -> None:
            watchers.remove(watcher)
            if not watchers and self._watchers.get(task_id) is watchers:
                del self._watchers[task_id]

        record = await self.store.get(MODERN_OWNER, task_id)
        if record is not None:  # its state now: a change between the client's last poll and the listen
            await _tell(watcher, record)
        return unwatch

    # ------------------------------------------------------------------ creating

    def _ttl(self, task: dict[str, Any]) -> int | None:
        wanted = task.get("ttl")
        if wanted is None:
            return self.default_ttl_ms
        if not isinstance(wanted, int | float) or isinstance(wanted, bool) or wanted < 0:
            raise JSONRPCError(
                jsonrpc.INVALID_PARAMS, 'Invalid params: "task.ttl" must be milliseconds (>= 0)'
            )
        return int(wanted) if self.max_ttl_ms is None else min(int(wanted), self.max_ttl_ms)

    async def start(
        self,
        conn: ServerConnection,
        request: Request,
        call: CallInfo,
        tool: Tool,
        params: dict[str, Any],
        *,
        run: RunTool,
    ) -> dict[str, Any]:
        """Create the task, start ``run`` (the tool call) in the background, return the CreateTaskResult."""
        task = params.get("task", {}) if call.modern else params.get("task")
        if not isinstance(task, dict):
            raise JSONRPCError(
                jsonrpc.INVALID_PARAMS, 'Invalid params: "task" must be an object ({"ttl": ms})'
            )
        now = self.clock()
        ttl, poll, owner = self._ttl(task), self.poll_interval_ms, self.owner_of(conn, call)
        record = TaskRecord(
            secrets.token_urlsafe(16), owner, "working", now, now, ttl, poll, modern=call.modern
        )
        if call.modern:  # its Context asks through TaskRequest.send_request (tasks/update), not MRTR
            call = dataclasses.replace(call, modern=False)
        try:
            await self.store.add(record)
        except TaskLimitError as exc:
            raise JSONRPCError(jsonrpc.INTERNAL_ERROR, f"Cannot create task: {exc}") from None
        job = self._jobs[record.task_id] = _Job(record, conn)
        running = run(conn, cast(Request, TaskRequest(self, job, request)), call, tool, params)
        job.runner = asyncio.get_running_loop().create_task(self._run(job, running))
        if record.modern:
            return {"resultType": "task", **record.detailed()}
        return {"task": record.wire()}

    async def _run(self, job: _Job, running: Coroutine[Any, Any, dict[str, Any]]) -> None:
        record = job.record
        try:
            with anyio.CancelScope() as scope:
                job.scope = scope
                if record.ttl_ms is not None:
                    scope.deadline = anyio.current_time() + record.ttl_ms / 1000
                if record.terminal:  # cancelled before it started
                    scope.cancel()
                await self._settle(job, running)
            running.close()  # never awaited when cancelled before it started (no warning then)
            if not record.terminal:  # the ttl ran out first
                await self.finish(job, "cancelled", None, "The task's ttl elapsed before it finished.")
        finally:
            self._jobs.pop(record.task_id, None)
            job.done.set()

    async def _settle(self, job: _Job, running: Coroutine[Any, Any, dict[str, Any]]) -> None:
        """Await the tool and record its outcome: a result (``isError`` makes the task failed) or an error."""
        task_id = job.record.task_id
        try:
            result: dict[str, Any] = await running
        except JSONRPCError as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            await self.finish(job, "failed", {"error": error}, exc.message)
            return
        except Exception as exc:  # run_tool turns tool exceptions into results; this is mcpframe's own bug
            job.conn.server.logger.exception("task %s failed", task_id)
            error = {"code": jsonrpc.INTERNAL_ERROR, "message": f"Internal error: {exc}"}
            await self.finish(job, "failed", {"error": error}, error["message"])
            return
        result["_meta"] = {**result.get("_meta", {}), **related(task_id)}
        if result.get("isError") and not job.record.modern:  # 2026-07-28: failed is for JSON-RPC errors only
            await self.finish(job, "failed", {"result": result}, _failure_text(result))
        else:
            await self.finish(job, "completed", {"result": result}, None)

    # ------------------------------------------------------------------ status

    async def set_status(self, job: _Job, status: TaskStatus, message: str | None) -> None:
        """Move a running task between ``working`` and ``input_required``, and announce it."""
        record = job.record
        if record.terminal or (record.status == status and record.status_message == message):
            return
        record.status, record.status_message, record.updated_at = status, message, self.clock()
        await self.store.save(record)
        await self._announce(job)

    async def finish(
        self, job: _Job, status: TaskStatus, outcome: dict[str, Any] | None, message: str | None
    ) -> None:
        """Make the task terminal (once: a cancelled task stays cancelled whatever the tool did next)."""
        record = job.record
        if record.terminal:
            return
        stored = await self.store.get(record.owner, record.task_id)
        if stored is not None and stored is not record and stored.terminal:
            # a shared store: another instance cancelled it meanwhile, and that stands
            record.status, record.outcome, record.status_message = stored.status, None, stored.status_message
            return
        record.status, record.outcome, record.status_message = status, outcome, message
        record.updated_at = self.clock()
        await self.store.save(record)
        await self._announce(job)

    async def _announce(self, job: _Job) -> None:
        """``notifications/tasks/status`` with the whole Task (the specification makes it optional); in
        2026-07-28, ``notifications/tasks`` to the ``subscriptions/listen`` requests that watch the task."""
        if job.record.modern:
            for watcher in list(self._watchers.get(job.record.task_id, ())):
                await _tell(watcher, job.record)
            return
        session = job.conn.session
        if session is None:
            return
        try:
            await session.notify(protocol.NOTIFICATIONS_TASKS_STATUS, job.record.wire())
        except Exception:  # the client has gone: the status is still in the store
            job.conn.server.logger.debug("could not announce task %s", job.record.task_id, exc_info=True)

    # ------------------------------------------------------------------ tasks/* methods

    async def find(
        self, conn: ServerConnection, params: dict[str, Any], call: CallInfo | None = None
    ) -> TaskRecord:
        """The session's task named by ``params.taskId``; -32602 when there is none."""
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise JSONRPCError(jsonrpc.INVALID_PARAMS, 'Invalid params: "taskId" must be a string')
        record = await self.store.get(self.owner_of(conn, call), task_id)
        if record is None:
            raise _not_found(task_id)
        return record

    async def result(
        self, conn: ServerConnection, params: dict[str, Any], request: Request | None = None
    ) -> dict[str, Any]:
        """Wait for the task to end, then what ``tools/call`` would have answered (or its error).

        Meanwhile the task's requests to the client may travel on `request` (see ``TaskRequest``).
        """
        record = await self.find(conn, params)
        while not record.terminal:
            job = self._jobs.get(record.task_id)
            if job is not None:
                await self._wait_carrying(job, request)
            else:  # running in another process that shares the store: poll it
                await anyio.sleep((record.poll_interval_ms or 1000) / 1000)
            record = await self.find(conn, params)
        outcome = record.outcome or {}
        if "result" in outcome:
            return dict(outcome["result"])
        error = outcome.get("error")
        if isinstance(error, dict):
            raise JSONRPCError(int(error["code"]), str(error["message"]), error.get("data"))
        raise JSONRPCError(
            jsonrpc.INTERNAL_ERROR, f"Task {record.task_id} was cancelled", {**related(record.task_id)}
        )

    @staticmethod
    async def _wait_carrying(job: _Job, request: Request | None) -> None:
        """Wait for the job to end, offering `request` to carry its requests to the client meanwhile."""
        if request is None:
            await job.done.wait()
            return
        job.carriers.append(request)
        job.carrier_came.set()
        try:
            await job.done.wait()
        finally:
            job.carriers.remove(request)

    async def cancel(
        self, conn: ServerConnection, params: dict[str, Any], call: CallInfo | None = None
    ) -> dict[str, Any]:
        """Cancel a running task: it is ``cancelled`` before the answer goes out; its tool is stopped.

        2026-07-28 answers an empty acknowledgement, also for a task that had already ended.
        """
        record = await self.find(conn, params, call)
        if record.terminal and record.modern:
            return {}
        if record.terminal:
            raise JSONRPCError(
                jsonrpc.INVALID_PARAMS, f"Cannot cancel task: already in terminal status {record.status!r}"
            )
        job = self._jobs.get(record.task_id)
        if job is None:  # running elsewhere: mark it, that process's runner sees the status
            record.status, record.status_message, record.updated_at = "cancelled", None, self.clock()
            await self.store.save(record)
        else:
            await self.finish(job, "cancelled", None, "The task was cancelled by request.")
            if job.scope is not None:
                job.scope.cancel()
        return {} if record.modern else record.wire()

    async def page(self, conn: ServerConnection, params: dict[str, Any]) -> dict[str, Any]:
        """One page of the session's tasks, oldest first."""
        records = await self.store.owned(self.owner_of(conn))
        page, next_cursor = paginate(records, params.get("cursor"), conn.server.page_size)
        result: dict[str, Any] = {"tasks": [record.wire() for record in page]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    # ------------------------------------------------------------------ 2026-07-28 input

    async def ask(self, job: _Job, method: str, params: Any) -> Any:
        """A 2026-07-28 task asks the client: the request is in ``inputRequests`` until ``tasks/update``."""
        key = f"{method.split('/', maxsplit=1)[0]}-{job.asked}"  # never reused within the task
        job.asked += 1
        request: dict[str, Any] = {"method": method}
        if params is not None:
            request["params"] = params
        answered, answer = anyio.Event(), list[Any]()
        job.waiting[key] = (answered, answer)
        record = job.record
        record.input_requests = {**(record.input_requests or {}), key: request}
        await self.set_status(job, "input_required", f"Waiting for the client to answer {method}")
        try:
            await answered.wait()
        finally:
            job.waiting.pop(key, None)
            remaining = {k: v for k, v in (record.input_requests or {}).items() if k != key}
            record.input_requests = remaining or None
            if not remaining and not record.terminal:
                await self.set_status(job, "working", None)
        return answer[0]

    async def update(self, conn: ServerConnection, params: dict[str, Any], call: CallInfo) -> dict[str, Any]:
        """``tasks/update``: hand the client's ``inputResponses`` to the task; unknown keys are ignored."""
        record = await self.find(conn, params, call)
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise JSONRPCError(jsonrpc.INVALID_PARAMS, 'Invalid params: "inputResponses" must be an object')
        job = self._jobs.get(record.task_id)
        for key, response in responses.items():
            pending = job.waiting.get(key) if job is not None else None
            if pending is not None and not pending[0].is_set():
                pending[1].append(response)
                pending[0].set()
        return {}
