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

The same entry points also raise the collector's thresholds (``SERVER_THRESHOLDS``): with CPython's
default (700, 10, 10) an object that lives a few milliseconds (a request in flight: its task, futures,
frames, the decoded message) is usually alive at a generation-1 collection and gets promoted to the
oldest generation, and once promotions reach a quarter of the objects that were already there, a full
collection walks all of them. A server holding 1,000 HTTP sessions (~70 KiB of objects each) with 200
requests in flight on a 20 ms tool ran a full collection every ~0.3 s, each 90-350 ms long: p99 latency
~430 ms and CPU per call ~2x (benches/bench_http_wire.py --slow; measured with gc.callbacks). At
(10_000, 20, 10) a generation-1 collection comes every ~200,000 allocations, so request-scoped objects
die young, full collections all but stop (13 -> 1 over the same run) and p99 fell to ~60-80 ms. The
cost: cyclic garbage waits longer to be collected (a young generation of 10,000 objects instead of 700).
``MCPFRAME_GC_THRESHOLDS`` overrides them: ``default`` (or ``0``/``off``) keeps CPython's, ``a,b,c`` sets
those three.

Only entry points that own the process call this (``Server.run()``, ``mcpframe serve``,
``mcpframe.compat.serve``), never the ``async`` ones meant for embedding in someone else's process.
Set ``MCPFRAME_GC_FREEZE=0`` (or ``false``, ``no``, ``off``; any case) to leave the collector alone;
unset, empty or any other value keeps the freeze on.
"""

from __future__ import annotations

import gc
import os
from typing import Final

__all__ = [
    "ENV_VAR",
    "SERVER_THRESHOLDS",
    "THRESHOLDS_VAR",
    "freeze_enabled",
    "freeze_startup_heap",
    "server_thresholds",
]

ENV_VAR: Final = "MCPFRAME_GC_FREEZE"
THRESHOLDS_VAR: Final = "MCPFRAME_GC_THRESHOLDS"
SERVER_THRESHOLDS: Final = (10_000, 20, 10)
_OFF: Final = frozenset({"0", "false", "no", "off"})

_done = False
_tuned = False


def freeze_enabled() -> bool:
    """Whether the environment allows the freeze (``MCPFRAME_GC_FREEZE`` is not ``0``/``false``/...)."""
    return os.environ.get(ENV_VAR, "").strip().lower() not in _OFF


def server_thresholds() -> tuple[int, int, int] | None:
    """The collector thresholds a serving process uses: ``SERVER_THRESHOLDS``, or what
    ``MCPFRAME_GC_THRESHOLDS`` says (``None``: leave CPython's); ``ValueError`` for a malformed value."""
    raw = os.environ.get(THRESHOLDS_VAR, "").strip().lower()
    if not raw:
        return SERVER_THRESHOLDS
    if raw in _OFF or raw == "default":
        return None
    try:
        parts = [int(part) for part in raw.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 3 or min(parts) < 0:
        raise ValueError(f"{THRESHOLDS_VAR} must be 'default' or three counts 'a,b,c', got {raw!r}")
    return parts[0], parts[1], parts[2]


def freeze_startup_heap() -> bool:
    """Collect, then freeze all live objects out of the cyclic GC, once per process; True if this call did.

    The first call also sets the collector's thresholds (`server_thresholds`), freeze or not.
    """
    global _done, _tuned  # noqa: PLW0603 - once per process is the point
    if not _tuned:
        _tuned = True
        thresholds = server_thresholds()
        if thresholds is not None:
            gc.set_threshold(*thresholds)
    if _done or not freeze_enabled():
        return False
    _done = True
    gc.collect()
    gc.freeze()
    return True
