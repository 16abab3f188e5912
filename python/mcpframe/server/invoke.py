"""Running user handlers: sync ones in a worker thread, async ones directly, with Context injected."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from mcpframe.session import Request

from .context import CallInfo, Context
from .schema import Signature

__all__ = ["invoke"]


async def invoke(
    fn: Callable[..., Any],
    signature: Signature,
    kwargs: dict[str, Any],
    *,
    request: Request,
    call: CallInfo,
    connection: Any,
) -> Any:
    """Call a handler with validated `kwargs`, injecting a `Context` where its signature asks for one.

    A sync handler runs in a worker thread, so it never blocks the event loop; when its request is
    cancelled the thread is abandoned (it can watch `Context.is_cancelled`).
    """
    if signature.context_param is not None:
        kwargs[signature.context_param] = Context(request, call, connection)
    if signature.is_async:
        return await fn(**kwargs)
    result = await anyio.to_thread.run_sync(functools.partial(fn, **kwargs), abandon_on_cancel=True)
    if inspect.isawaitable(result):
        return await result
    return result
