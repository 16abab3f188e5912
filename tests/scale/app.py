"""The scale-out tests' server: `examples/everything.py` plus three tools that reach across instances."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import anyio

from mcpframe.server import Context

_EVERYTHING = Path(__file__).resolve().parents[2] / "examples" / "everything.py"
_spec = importlib.util.spec_from_file_location("scale_everything", _EVERYTHING)
assert _spec is not None
assert _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
sys.modules["scale_everything"] = _module
_spec.loader.exec_module(_module)
server = _module.server

__all__ = ["server"]


@server.tool
def touch_watched() -> str:
    """Tell the subscribers of test://watched-resource that it changed (on whichever instance runs this)."""
    server.notify_resource_updated("test://watched-resource")
    return "touched"


@server.tool
async def wait_for_cancel(ctx: Context) -> str:
    """Reports progress once, then waits until cancelled (the cancel may reach another instance)."""
    await ctx.report_progress(1, None, "waiting")
    await anyio.sleep_forever()
    return "never"


@server.tool
async def tick(count: int, ctx: Context, ms: int = 20) -> str:
    """Sends `count` info log messages, one every `ms` milliseconds, on the POST's stream."""
    for n in range(count):
        await ctx.info(f"tick {n}")
        await anyio.sleep(ms / 1000)
    return f"{count} ticks"


@server.tool(task_support="optional")
async def slow_square(x: int, ms: int = 200) -> str:
    """x squared after `ms` milliseconds (as a task: its status and result read from any instance)."""
    await anyio.sleep(ms / 1000)
    return f"{x * x}"
