"""Fixtures of the benchmark suites: the corpora, and a helper that checks before it times.

Every benchmark is also a test: it checks its contender's output against the corpus first, then times
it. A normal test run (``--benchmark-disable``) executes each once; ``make bench`` times them, grouped
so that the contenders of one corpus and operation sit side by side.
"""

from __future__ import annotations

import importlib.util
import os
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
_FALSY = {"", "0", "false", "no", "off"}


def _native_required() -> bool:
    # Same rule as tests/conftest.py: in CI a missing native extension fails instead of skipping.
    flags = (os.environ.get(name, "").strip().lower() for name in ("CI", "MCPFRAME_REQUIRE_NATIVE"))
    return any(flag not in _FALSY for flag in flags)


CheckThenTime = Callable[[Contender, Corpus, str], None]


@pytest.fixture
def check_then_time(benchmark: Any) -> CheckThenTime:
    """Skip an unavailable contender; otherwise assert its output is right, then benchmark it."""

    def go(contender: Contender, corpus: Corpus, group: str) -> None:
        if contender.unavailable is not None:
            reason = f"{contender.label} unavailable: {contender.unavailable}"
            if contender.key.startswith("native") and _native_required():
                pytest.fail(reason)
            pytest.skip(reason)
        run = contender.prepare(corpus, CHUNK)
        problem = contender.check(corpus, run())
        assert problem is None, f"{contender.label} on {corpus.name}: {problem}"
        benchmark.group = group
        benchmark.extra_info.update(contender=contender.label, messages=corpus.count, bytes=corpus.nbytes)
        benchmark(run)

    return go
