"""Decoding the corpora: mcpframe (native eager/lazy, python) vs orjson, msgspec Raw and the mcp SDK.

``test_decode`` times the contenders on the built-in corpora (whole buffers for the per-line ones);
``test_decode_strict`` runs issue 14's strict method (``mcpframe.bench.strict``: the same 64 KiB chunks
for every contender, framing on every side, each chunk's results dropped) on the generated corpus:
3,000 messages in a normal test run, all 200,000 (46.7 MB) with ``MCPFRAME_BENCH_LONG=1``.
pytest-benchmark leaves the cyclic GC on unless run with ``--benchmark-disable-gc`` (``mcpframe bench``
turns it off for every contender).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mcpframe.bench import generated, strict
from mcpframe.bench.contenders import decoders
from mcpframe.bench.corpus import CORPORA, CorpusName, build

DECODERS = {c.key: c for c in decoders()}
_LONG = os.environ.get("MCPFRAME_BENCH_LONG", "").strip().lower() not in {"", "0", "false", "no", "off"}


@pytest.mark.parametrize("key", list(DECODERS))
@pytest.mark.parametrize("name", CORPORA)
def test_decode(check_then_time: Any, name: CorpusName, key: str) -> None:
    check_then_time(DECODERS[key], build(name), f"decode-{name}")


@pytest.fixture(scope="module")
def generated_source(tmp_path_factory: pytest.TempPathFactory) -> strict.Source:
    count = generated.DEFAULT_COUNT if _LONG else 3000
    folder: Path | None = None if _LONG else tmp_path_factory.mktemp("gen")  # the long one stays cached
    made = generated.load(count=count, folder=folder)
    return strict.from_file("generated", made.path)


@pytest.mark.parametrize("key", strict.KEYS)
def test_decode_strict(benchmark: Any, generated_source: strict.Source, key: str) -> None:
    feeder = strict.feeders().get(key)
    if feeder is None:
        pytest.skip(f"{key}: its backend does not import here")
    assert strict.check(feeder, generated_source) is None
    benchmark.group = "decode-strict-generated"
    benchmark.extra_info.update(messages=generated_source.messages, bytes=generated_source.nbytes)
    assert benchmark(strict.run_once, feeder, generated_source.chunks) == generated_source.messages
