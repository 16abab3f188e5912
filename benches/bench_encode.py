"""Encoding the corpus messages: mcpframe encoders vs ``orjson.dumps(msg) + b"\\n"``."""

from __future__ import annotations

from typing import Any

import pytest

from mcpframe.bench.contenders import encoders
from mcpframe.bench.corpus import CORPORA, CorpusName, build

ENCODERS = {c.key: c for c in encoders()}


@pytest.mark.parametrize("key", list(ENCODERS))
@pytest.mark.parametrize("name", CORPORA)
def test_encode(check_then_time: Any, name: CorpusName, key: str) -> None:
    check_then_time(ENCODERS[key], build(name), f"encode-{name}")
