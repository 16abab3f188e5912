"""Fixtures of the benchmark suites: the corpora, and a helper that checks before it times.

Every benchmark is also a test: it checks its contender's output against the corpus first, then times
it. A normal test run (``--benchmark-disable``) executes each once; ``make bench`` times them, grouped
so that the contenders of one corpus and operation sit side by side.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("mcpframe") is None:
    # Not installed (no `maturin develop` yet): benchmark the source tree.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from mcpframe.bench.contenders import Contender
from mcpframe.bench.corpus import Corpus

CHUNK = 64 * 1024


CheckThenTime = Callable[[Contender, Corpus, str], None]


@pytest.fixture
def check_then_time(benchmark: Any) -> CheckThenTime:
    """Skip an unavailable contender; otherwise assert its output is right, then benchmark it."""

    def go(contender: Contender, corpus: Corpus, group: str) -> None:
        if contender.unavailable is not None:
            pytest.skip(f"{contender.label} unavailable: {contender.unavailable}")
        run = contender.prepare(corpus, CHUNK)
        problem = contender.check(corpus, run())
        assert problem is None, f"{contender.label} on {corpus.name}: {problem}"
        benchmark.group = group
        benchmark.extra_info.update(contender=contender.label, messages=corpus.count, bytes=corpus.nbytes)
        benchmark(run)

    return go
