"""Integers beyond 64 bits as ids and as payload values: those of up to 38 digits take the native
builder's 128-bit path, longer ones its big-number path; both must equal Python's `int`."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from ._support import stream

EDGES = [
    2**63,
    -(2**63) - 1,
    2**64,
    10**37,
    10**38 - 1,
    -(10**38 - 1),
    10**38,
    -(10**38),
    2**127,
    -(2**127),
    2**200,
]


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_big_integers_decode_like_python(backend: ModuleType, lazy: bool) -> None:
    lines = [json.dumps({"jsonrpc": "2.0", "id": n, "method": "m", "params": {"n": [n, -n]}}) for n in EDGES]
    messages = stream(backend, ("\n".join(lines) + "\n").encode(), lazy=lazy)
    assert [m.id for m in messages] == EDGES
    assert [m.params["n"] for m in messages] == [[n, -n] for n in EDGES]
