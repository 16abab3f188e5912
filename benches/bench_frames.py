"""One big frame fed in 64 KiB chunks at 1, 8 and 32 MiB: the time per byte should stay flat.

Grouped per contender, so the three sizes sit side by side: flat means the mean grows 8x, then 4x.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpframe.bench.contenders import decoders
from mcpframe.bench.corpus import Corpus, big_frame

MIB = 1024 * 1024
STREAMING = {c.key: c for c in decoders() if c.streaming}
SIZES = [1 * MIB, 8 * MIB, pytest.param(32 * MIB, marks=pytest.mark.slow)]


@pytest.mark.parametrize("key", list(STREAMING))
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s // MIB}MiB")
def test_frame(check_then_time: Any, size: int, key: str) -> None:
    frame = big_frame(size)
    message = orjson.loads(frame)
    corpus = Corpus(f"frame-{size // MIB}MiB", frame, (message,), (("result", message["id"]),))
    check_then_time(STREAMING[key], corpus, f"frame-{key}")
