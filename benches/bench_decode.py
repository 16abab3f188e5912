"""Decoding the corpora: mcpframe (native eager/lazy, python) vs orjson, msgspec Raw and the mcp SDK."""

from __future__ import annotations

from typing import Any

import pytest

from mcpframe.bench.contenders import decoders
from mcpframe.bench.corpus import CORPORA, CorpusName, build

DECODERS = {c.key: c for c in decoders()}


@pytest.mark.parametrize("key", list(DECODERS))
@pytest.mark.parametrize("name", CORPORA)
def test_decode(check_then_time: Any, name: CorpusName, key: str) -> None:
    check_then_time(DECODERS[key], build(name), f"decode-{name}")
