"""FastMCP's synchronous tools, resources and prompts on the engine's worker pool while it serves.

FastMCP does not call a sync function through the SDK's ``Tool``: every sync tool, tool transform,
resource, resource template, prompt, dependency-injected function and completion handler goes through its
own ``fastmcp.utilities.async_utils.call_sync_fn_in_threadpool``, which is ``anyio.to_thread.run_sync``
underneath. Each FastMCP module that calls it imported it by name, so swapping it in one place changes
nothing; ``pool_fastmcp`` replaces it in every loaded ``fastmcp`` module that holds it (the defining one
included, so modules imported while serving pick the stand-in up too) with a stand-in that hands the call
to the engine's ``WorkerPool`` (``mcpframe._threads``): the same job for about a tenth of the CPU time
per call in a burst of a thousand (some 10 microseconds against 100).

What stays as FastMCP does it: the function runs on a worker thread with a copy of the caller's context
variables (FastMCP's ``Context``, ``get_context()``, its dependency state), its exception reaches the
caller, and ``anyio.from_thread.run``/``run_sync`` work inside it. What differs is cancellation: a
cancelled call (a client's ``notifications/cancelled``, a FastMCP tool ``timeout``) returns at once and
its thread finishes the function with the result dropped, where FastMCP's own waits for the thread.

Limits: the swap is process-wide and lasts only while an engine serves a FastMCP app (engines that
overlap share one swap, on the first one's pool; the last to stop puts FastMCP's function back, only
where the stand-in still sits). Off asyncio (trio) the stand-in calls FastMCP's own function. A module
outside ``fastmcp`` that imported the function while serving keeps the stand-in, which still works.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import sniffio

from mcpframe._threads import WorkerPool
from mcpframe._unstable import mcp_sdk as unstable
from mcpframe._unstable.asyncio_tasks import running_loop as _running_loop

__all__ = ["KNOWN_HOLDERS", "NAME", "is_fastmcp", "pool_fastmcp", "stand_in"]

NAME = "call_sync_fn_in_threadpool"
"""The FastMCP function swapped, by its name in every module that holds it."""

KNOWN_HOLDERS = (
    "fastmcp.utilities.async_utils",
    "fastmcp.tools.function_tool",
    "fastmcp.tools.tool_transform",
    "fastmcp.resources.function_resource",
    "fastmcp.resources.template",
    "fastmcp.prompts.function_prompt",
    "fastmcp.server.dependencies",
    "fastmcp.server.mixins.mcp_operations",
)
"""The modules known (fastmcp 4.1) to hold the function; the swap finds them by scanning, this is a check."""

_ORIGINAL_ATTRIBUTE = "__mcpframe_original__"


def _noop() -> None:
    return None


def stand_in(original: Callable[..., Any], pool: WorkerPool) -> Callable[..., Any]:
    """An async function like FastMCP's ``original`` that runs the call on ``pool`` (asyncio only)."""
    asyncio_loop: list[object] = [None]  # the last running loop known to be asyncio's

    @functools.wraps(original)
    async def call_sync_fn_in_threadpool(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = _running_loop()
        if loop is not asyncio_loop[0]:
            if loop is None or sniffio.current_async_library() != "asyncio":
                return await original(fn, *args, **kwargs)
            asyncio_loop[0] = loop
        return await pool.submit(fn, *args, **kwargs)

    setattr(call_sync_fn_in_threadpool, _ORIGINAL_ATTRIBUTE, original)
    return call_sync_fn_in_threadpool


def _fastmcp_modules() -> Iterator[ModuleType]:
    for name, module in list(sys.modules.items()):
        if (name == "fastmcp" or name.startswith("fastmcp.")) and isinstance(module, ModuleType):
            yield module


def _replace(old: Callable[..., Any], new: Callable[..., Any]) -> list[str]:
    """Point every loaded ``fastmcp`` module's ``NAME`` that is ``old`` at ``new``; the modules' names."""
    replaced = []
    for module in _fastmcp_modules():
        if module.__dict__.get(NAME) is old:
            setattr(module, NAME, new)
            replaced.append(module.__name__)
    return replaced


class _Swap:
    """The process's one swap: FastMCP's function, the stand-in, and how many engines hold it."""

    def __init__(self, original: Callable[..., Any], pool: WorkerPool) -> None:
        self.original = original
        self.stand_in = stand_in(original, pool)
        self.holders = 0


_LOCK = threading.Lock()
_ACTIVE: list[_Swap] = []  # empty, or the swap in force


def is_fastmcp(app: object) -> bool:
    """Whether ``app`` is a FastMCP server (without importing ``fastmcp`` when nothing else has)."""
    server = sys.modules.get("fastmcp.server.server")  # loaded whenever a FastMCP app exists
    cls = getattr(server, "FastMCP", None)
    return isinstance(cls, type) and isinstance(app, cls)


def _original() -> Callable[..., Any] | None:
    """FastMCP's own function (seen through a stand-in left behind), or None without a usable fastmcp."""
    try:
        from fastmcp.utilities import async_utils  # noqa: PLC0415 - only for FastMCP apps
    except ImportError:
        return None
    current = getattr(async_utils, NAME, None)
    original = getattr(current, _ORIGINAL_ATTRIBUTE, current)
    return original if callable(original) else None


def _acquire(original: Callable[..., Any], pool: WorkerPool) -> _Swap:
    with _LOCK:
        if not _ACTIVE:
            _ACTIVE.append(_Swap(original, pool))
        swap = _ACTIVE[0]
        swap.holders += 1
        _replace(swap.original, swap.stand_in)  # again for modules loaded since the swap began
        return swap


def _release(swap: _Swap) -> None:
    """One engine less (call it holding ``_LOCK``); the last puts FastMCP's function back."""
    swap.holders -= 1
    if swap.holders == 0:
        _ACTIVE.clear()
        _replace(swap.stand_in, swap.original)


def pool_fastmcp(app: Any, pool: WorkerPool | None) -> Callable[[], None]:
    """Run FastMCP's sync calls on ``pool`` while ``app`` (a FastMCP app) is served; returns the undo.

    Anything else (an ``MCPServer``, no ``fastmcp``, no pool, a ``fastmcp`` release other than the one whose
    modules were read: ``mcpframe._unstable.mcp_sdk``) is left alone and the undo does nothing.
    The undo may be called more than once; only its first call counts.
    """
    if pool is None or not unstable.FASTMCP_CHOICE.private or not is_fastmcp(app):
        return _noop
    original = _original()
    if original is None:
        return _noop
    swap = _acquire(original, pool)
    released = False

    def undo() -> None:
        nonlocal released
        with _LOCK:
            if not released:
                released = True
                _release(swap)

    return undo
