"""Move the start-up heap out of the cyclic garbage collector's sight once a server starts serving.

Why: a busy server keeps many objects alive across event-loop iterations (a thousand pipelined requests in
flight, their tasks and futures). CPython promotes such survivors, and every so often the promotions trigger
a full (generation 2) collection, which walks every container object in the process: the modules, classes,
functions, schemas and validators loaded at start-up (pydantic and the official SDK bring tens of
thousands). Measured on a 2-core VM, those walks were a third of the server's CPU. ``gc.freeze()`` moves
every object that exists at that moment into a permanent generation the collector never visits, so full
collections only walk what was allocated since.

What is frozen: everything alive when serving starts (imports, the app and its registrations, an SDK app's
lifespan state, the event loop), after one ``gc.collect()`` has freed the garbage already there.
The trade-off: a frozen object is still freed by reference counting, but if it later becomes part of an
unreachable reference cycle, that cycle is never collected (it stays in memory until the process ends).
Start-up objects rarely die that way; objects allocated after the freeze are collected as usual.

Only entry points that own the process call this (``Server.run()``, ``mcpframe serve``,
``mcpframe.compat.serve``), never the ``async`` ones meant for embedding in someone else's process.
Set ``MCPFRAME_GC_FREEZE=0`` (or ``false``, ``no``, ``off``; any case) to leave the collector alone;
unset, empty or any other value keeps the freeze on.
"""

from __future__ import annotations

import gc
import os
from typing import Final

__all__ = ["ENV_VAR", "freeze_enabled", "freeze_startup_heap"]

ENV_VAR: Final = "MCPFRAME_GC_FREEZE"
_OFF: Final = frozenset({"0", "false", "no", "off"})

_done = False


def freeze_enabled() -> bool:
    """Whether the environment allows the freeze (``MCPFRAME_GC_FREEZE`` is not ``0``/``false``/...)."""
    return os.environ.get(ENV_VAR, "").strip().lower() not in _OFF


def freeze_startup_heap() -> bool:
    """Collect, then freeze all live objects out of the cyclic GC, once per process; True if this call did."""
    global _done  # noqa: PLW0603 - once per process is the point
    if _done or not freeze_enabled():
        return False
    _done = True
    gc.collect()
    gc.freeze()
    return True
