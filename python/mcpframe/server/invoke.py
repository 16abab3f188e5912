"""Running user handlers: sync ones on a worker thread, async ones directly, with Context injected."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpframe._threads import call_sync
from mcpframe.session import Request

from .context import CallInfo, Context
from .schema import Signature

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = ["invoke"]

_PLAIN = frozenset({str, dict, list, int, float, bool, type(None), bytes, tuple})
"""Result types that are never awaitable: no need to ask ``inspect.isawaitable``."""


async def invoke(
    fn: Callable[..., Any],
    signature: Signature,
    kwargs: dict[str, Any],
    *,
    request: Request,
    call: CallInfo,
    connection: ServerConnection,
) -> Any:
    """Call a handler with validated `kwargs`, injecting a `Context` where its signature asks for one.

    A sync handler runs on a worker thread (mcpframe's shared pool on asyncio), so it never blocks the
    event loop; when its request is cancelled the thread is abandoned (it can watch `Context.is_cancelled`).
    A sync handler that returns an awaitable has it awaited here.
    """
    if signature.context_param is not None:
        kwargs[signature.context_param] = Context(request, call, connection)
    if signature.is_async:
        return await fn(**kwargs)
    result = await call_sync(fn, (), kwargs)
    if type(result) not in _PLAIN and inspect.isawaitable(result):
        return await result
    return result
