"""Small helpers of the Session's request path: the response frames of a handler's outcome, task creation."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from mcpframe import core, jsonrpc
from mcpframe._api import Id
from mcpframe.errors import EncodeError
from mcpframe.session.errors import JSONRPCError

if TYPE_CHECKING:
    from mcpframe.session.request import Request

__all__ = ["Spawner", "error_frame", "failure_frame", "result_frame", "task_spawner"]

logger = logging.getLogger("mcpframe.session")

Spawner = Callable[[Coroutine[Any, Any, None]], "asyncio.Task[None]"]


def error_frame(rid: Id, exc: JSONRPCError) -> bytes:
    """The error response carrying ``exc``."""
    frame: bytes
    if exc.data is None:
        frame = core.encode_error(rid, exc.code, exc.message)
    else:
        frame = core.encode_error(rid, exc.code, exc.message, exc.data)
    return frame


def failure_frame(request: Request, exc: Exception) -> bytes:
    """The error response for a handler that raised ``exc`` (call it in the ``except`` block)."""
    if isinstance(exc, JSONRPCError):
        try:
            return error_frame(request.id, exc)
        except Exception as bad:  # its ``data`` cannot be encoded: the error goes out without it
            logger.error("error data of %r (id %r) cannot be encoded: %s", request.method, request.id, bad)
            return error_frame(request.id, JSONRPCError(exc.code, exc.message))
    logger.exception("handler for %r (id %r) failed", request.method, request.id)
    return error_frame(
        request.id, JSONRPCError(jsonrpc.INTERNAL_ERROR, f"Internal error ({type(exc).__name__})")
    )


def result_frame(request: Request, result: Any) -> bytes:
    """The response carrying ``result``, or an error response naming why it cannot be encoded."""
    rid = request.id
    try:
        frame: bytes = core.encode_result(rid, result)
    except (EncodeError, TypeError, ValueError, OverflowError) as exc:
        logger.error("result of %r (id %r) cannot be encoded: %s", request.method, rid, exc)
        message = f"Internal error: the result is not JSON serializable: {exc}"
        return error_frame(rid, JSONRPCError(jsonrpc.INTERNAL_ERROR, message))
    return frame


def task_spawner(loop: asyncio.AbstractEventLoop) -> Spawner:
    """``loop.create_task``, or the cheaper direct ``asyncio.Task`` when that is exactly what it would do."""
    if type(loop).create_task is not asyncio.BaseEventLoop.create_task or loop.get_task_factory() is not None:
        return loop.create_task
    task_type = asyncio.Task

    def spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return task_type(coro, loop=loop)

    return spawn
