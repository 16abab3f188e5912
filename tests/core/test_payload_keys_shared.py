"""Payload values built one message at a time (lazy payloads on first access, error values) share one
cache of key strings in the native backend: the values are the same as the python backend's, whatever
the order of access, and a value built while another is being built (a collection started by the outer
build's allocations runs a callback that reads another message's payload) is right too."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

PAYLOADS: list[Any] = [
    {"name": "tools/x", "arguments": {"path": "/a", "n": 1, "deep": {"path": "/b", "name": "n"}}},
    {"cursor": "c", "name": "é", "arguments": {"name": [1, {"name": 2}]}},
    {f"k{i}": {f"k{i + 1}": i} for i in range(90)},  # more keys than the cache's slots
    {"name": "x" * 60, "x" * 60: "long key"},  # a key too long to be cached
    [{"a\u00e9": 1}, {"a\u00e9": 2}],  # escaped in the request's line, UTF-8 in the error's
]


def lines() -> Iterator[bytes]:
    for k, payload in enumerate(PAYLOADS):
        yield json.dumps({"jsonrpc": "2.0", "id": k, "method": "m", "params": payload}).encode()
        error = {"code": -1, "message": "e", "data": payload}
        yield json.dumps({"jsonrpc": "2.0", "id": k, "error": error}, ensure_ascii=False).encode()


DATA = b"\n".join(lines()) + b"\n"


def values(messages: list[Any]) -> list[Any]:
    return [m.params if m.kind == "request" else m.error for m in messages]


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_values_in_any_order_of_access(backend: ModuleType, order: str) -> None:
    messages = backend.Decoder(lazy=True).feed(DATA)
    step = 1 if order == "forward" else -1
    got = values(messages[::step])[::step]
    want = [p for payload in PAYLOADS for p in (payload, {"code": -1, "message": "e", "data": payload})]
    assert got == want
    assert values(backend.Decoder(lazy=False).feed(DATA)) == want


def test_a_value_built_during_another_build(backend: ModuleType) -> None:
    outer = backend.Decoder(lazy=True).feed(DATA)
    inner = backend.Decoder(lazy=True).feed(DATA)
    want = values(backend.Decoder(lazy=False).feed(DATA))
    seen: list[Any] = []
    pending = list(range(0, len(inner), 2))  # the requests: their params are not built yet

    def read_another(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and pending:
            seen.append((pending[0], inner[pending.pop(0)].params))

    old, was_enabled = gc.get_threshold(), gc.isenabled()
    gc.callbacks.append(read_another)
    gc.enable()
    try:
        gc.set_threshold(1)  # a collection at nearly every container allocated by the builds
        got = values(outer)
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(read_another)
        if not was_enabled:
            gc.disable()
    assert got == want
    assert seen, "no collection ran during the builds"
    assert all(value == want[k] for k, value in seen)
