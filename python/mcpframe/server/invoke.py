"""Running user handlers: sync ones on a worker thread, async ones directly, with Context injected.

A tool that raises is logged here (``log_tool_failure``): at ERROR with its traceback on the logger
``mcpframe.server``, which prints to stderr by itself unless the application configured logging (then its
handlers alone do it; nothing is printed twice). stdout is never written to: on stdio it carries the protocol.
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpframe._threads import call_sync
from mcpframe.session import Request

from .context import CallInfo, Context
from .schema import Signature

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = ["PLAIN_RESULTS", "invoke", "log_tool_failure"]

_FORMAT = "%(levelname)s %(name)s: %(message)s"


class _DefaultHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr for ``mcpframe.server``, standing down while the application has handlers of its own.

    Checked at each record, not once: ``mcpframe serve`` configures the root logger after the user's
    module made its ``Server``, and an application may configure logging at any time.
    """

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        if _configured_elsewhere(logging.getLogger(record.name)):
            return
        self.stream = sys.stderr  # the current one (a test's capture, a redirected stderr)
        super().emit(record)


def _configured_elsewhere(logger: logging.Logger) -> bool:
    """Whether a handler other than ours will see records of `logger` (its own or an ancestor's)."""
    current: logging.Logger | None = logger
    while current is not None:
        if any(not isinstance(handler, _DefaultHandler) for handler in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def _ensure_default_handler(logger: logging.Logger) -> None:
    """Give mcpframe's own server logger its stderr handler, once (an application's logger is its own)."""
    if logger.name == "mcpframe.server" and not any(isinstance(h, _DefaultHandler) for h in logger.handlers):
        logger.addHandler(_DefaultHandler())


def log_tool_failure(logger: logging.Logger, tool: str, exc: BaseException) -> None:
    """Log a tool's exception at ERROR with its traceback (the client gets it as an error result)."""
    _ensure_default_handler(logger)
    logger.error("tool %r failed: %s: %s", tool, type(exc).__name__, exc, exc_info=exc)


PLAIN_RESULTS = frozenset({str, dict, list, int, float, bool, type(None), bytes, tuple})
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
    """Call a handler with validated `kwargs` (left unchanged), injecting a `Context` where its signature
    asks for one.

    A sync handler runs on a worker thread (mcpframe's shared pool on asyncio), so it never blocks the
    event loop; when its request is cancelled the thread is abandoned (it can watch `Context.is_cancelled`).
    A sync handler that returns an awaitable has it awaited here.
    """
    if signature.context_param is not None:  # a new dict: `kwargs` may be the request's own arguments
        kwargs = {**kwargs, signature.context_param: Context(request, call, connection)}
    if signature.is_async:
        return await fn(**kwargs)
    result = await call_sync(fn, (), kwargs)
    if type(result) not in PLAIN_RESULTS and inspect.isawaitable(result):
        return await result
    return result
