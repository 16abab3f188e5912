"""Benchmarks of mcpframe against orjson, msgspec and the official MCP SDK (``mcpframe bench``).

``corpus`` generates deterministic MCP traffic, ``contenders`` adapts each library to it, ``runner``
checks and times them side by side, ``report`` and ``svg`` present the results.
"""

from __future__ import annotations

from mcpframe.bench.corpus import CORPORA, Corpus, big_frame, build
from mcpframe.bench.runner import Results, Settings, run

__all__ = ["CORPORA", "Corpus", "Results", "Settings", "big_frame", "build", "run"]
