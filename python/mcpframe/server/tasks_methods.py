"""The ``tasks/*`` request handlers, and whether a ``tools/call`` runs as a task (the state: tasks.py).

Both eras are served by the same handlers: 2025-11-25 (SEP-1686: ``tasks/get``, ``tasks/result``,
``tasks/list``, ``tasks/cancel``, the client opts in per call with ``params.task``) and 2026-07-28's tasks
extension (``tasks/get`` with the outcome inline, ``tasks/update``, ``tasks/cancel``; the server decides
when the client declares the extension). A method of the other era answers -32601 and says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpframe import jsonrpc, protocol
from mcpframe.session import JSONRPCError, Request

from .context import CallInfo
from .eras import MISSING_REQUIRED_CLIENT_CAPABILITY
from .registry import Tool

if TYPE_CHECKING:
    from .connection import ServerConnection
    from .handlers import Handler
    from .tasks import TaskManager

__all__ = ["TASK_HANDLERS", "client_takes_tasks", "route"]

_LEGACY_ONLY = frozenset({protocol.TASKS_RESULT, protocol.TASKS_LIST})
_MODERN_ONLY = frozenset({protocol.TASKS_UPDATE})


def client_takes_tasks(call: CallInfo) -> bool:
    """Whether a 2026-07-28 request's client declared the tasks extension (may be answered with a task)."""
    extensions = call.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(protocol.TASKS_EXTENSION), dict)


def _missing_extension(tool: Tool) -> JSONRPCError:
    data: dict[str, Any] = {"requiredCapabilities": {"extensions": {protocol.TASKS_EXTENSION: {}}}}
    return JSONRPCError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: tool {tool.name!r} runs only as a task "
        f"(declare the {protocol.TASKS_EXTENSION} extension)",
        data,
    )


def route(conn: ServerConnection, call: CallInfo, tool: Tool, params: dict[str, Any]) -> bool:
    """Whether this ``tools/call`` runs as a task; an error when the tool and the call disagree.

    2025-11-25: the client asks with ``params.task``; a ``required`` tool without it, or a ``forbidden``
    one with it, is -32601 (the specification's tool-level rules). A server without the ``tasks``
    capability ignores ``params.task``, as the specification asks. 2026-07-28: the server decides: a tool
    that supports tasks runs as one whenever the client declared the extension; a ``required`` tool for a
    client that did not is -32021 (missing required client capability) naming the extension.
    """
    if "tasks" not in conn.server.capabilities():
        return False
    if call.modern:
        if tool.task_support == "forbidden":
            return False
        if client_takes_tasks(call):
            return True
        if tool.task_support == "required":
            raise _missing_extension(tool)
        return False
    wanted = params.get("task") is not None
    if wanted and tool.task_support == "forbidden":
        raise JSONRPCError(
            jsonrpc.METHOD_NOT_FOUND,
            f"Method not found: tool {tool.name!r} cannot run as a task (execution.taskSupport: forbidden)",
        )
    if not wanted and tool.task_support == "required":
        raise JSONRPCError(
            jsonrpc.METHOD_NOT_FOUND,
            f"Method not found: tool {tool.name!r} must run as a task (taskSupport: required): "
            'call it with params.task, e.g. {"ttl": 60000}',
        )
    return wanted


def _check(conn: ServerConnection, call: CallInfo, method: str) -> TaskManager:
    if call.modern and method in _LEGACY_ONLY:
        why = f"not part of {protocol.V2026_07_28}'s tasks extension"
    elif not call.modern and method in _MODERN_ONLY:
        why = f"part of {protocol.V2026_07_28}'s tasks extension only"
    elif "tasks" not in conn.server.capabilities():
        why = "this server has no tool that runs as a task"
    else:
        return conn.server.tasks
    raise JSONRPCError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method} ({why})")


async def tasks_get(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    """``tasks/get``: the Task as it stands (2026-07-28: with its result, error or inputRequests)."""
    record = await _check(conn, call, protocol.TASKS_GET).find(conn, params, call)
    return record.detailed() if call.modern else record.wire()


async def tasks_result(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    """``tasks/result`` (2025-11-25): blocks until the task is terminal, then the tool's result or error."""
    return await _check(conn, call, protocol.TASKS_RESULT).result(conn, params, request)


async def tasks_list(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    """``tasks/list`` (2025-11-25): the session's tasks, a page at a time (the server's ``page_size``)."""
    return await _check(conn, call, protocol.TASKS_LIST).page(conn, params)


async def tasks_cancel(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    """``tasks/cancel``: the Task, now ``cancelled`` (2026-07-28: an empty acknowledgement)."""
    return await _check(conn, call, protocol.TASKS_CANCEL).cancel(conn, params, call)


async def tasks_update(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    """``tasks/update`` (2026-07-28): the client's ``inputResponses`` to a task's ``inputRequests``."""
    return await _check(conn, call, protocol.TASKS_UPDATE).update(conn, params, call)


TASK_HANDLERS: dict[str, Handler] = {
    protocol.TASKS_GET: tasks_get,
    protocol.TASKS_RESULT: tasks_result,
    protocol.TASKS_LIST: tasks_list,
    protocol.TASKS_CANCEL: tasks_cancel,
    protocol.TASKS_UPDATE: tasks_update,
}
"""The ``tasks/*`` methods, added to every ``Server``'s method table."""
