"""Benchmarks of mcpframe against orjson, msgspec and the official MCP SDK (``mcpframe bench``).

``corpus`` generates deterministic MCP traffic, ``contenders`` adapts each library to it, ``runner``
checks and times them side by side, ``report`` and ``svg`` present the results. Issue 14's strict
streaming method lives in ``strict`` (the same 64 KiB chunks for every contender, results dropped per
chunk, GC off, interleaved medians), over the built-in corpora and ``generated``'s large cached one;
``callgrind`` counts each contender's instructions in a child under valgrind.
"""

from __future__ import annotations

from mcpframe.bench.corpus import CORPORA, Corpus, big_frame, build
from mcpframe.bench.runner import Results, Settings, run

__all__ = ["CORPORA", "Corpus", "Results", "Settings", "big_frame", "build", "run"]
