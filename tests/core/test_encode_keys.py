"""Dict keys in encoded objects: every kind of key, in every member position, with more distinct keys
than the native encoder caches, and keys freed and replaced between calls (the native cache of encoded
keys must never hand out a stale text)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from mcpframe.errors import EncodeError


class Str(str):
    pass


def reference(value: Any) -> bytes:
    """The contract's line for ``value``: compact JSON, UTF-8 unescaped, plus LF."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


KEYS = [
    "",
    "a",
    "id",
    "jsonrpc",
    "x" * 28,  # the longest key the native cache keeps
    "y" * 29,  # one more: written by the general path
    'quote"d',
    "back\\slash",
    "new\nline",
    "unit\x1fsep",
    "café",
    "東京",
    "🚀",
    Str("sub"),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_key_in_every_position(backend: ModuleType, key: str) -> None:
    # First member (no comma before it), a later one, and alone; twice, so the second call meets
    # whatever the first one cached.
    for _ in range(2):
        for value in ({key: 1, "b": 2}, {"b": 2, key: 1}, {key: [key, {key: None}]}):
            assert backend.encode(value) == reference(value)


def test_more_keys_than_cache_slots(backend: ModuleType) -> None:
    keys = [f"key{i}" for i in range(3000)]
    value = dict.fromkeys(keys, 0)
    for order in (keys, keys[::-1], keys[::7], keys):
        part = {k: value[k] for k in order}
        assert backend.encode(part) == reference(part)


def test_keys_freed_and_replaced(backend: ModuleType) -> None:
    # Keys built at run time (not interned) and dropped after each call: new keys may take the
    # addresses of freed ones, and must still be written as themselves.
    for round_ in range(200):
        value = {"".join(("k", str(round_), "_", str(i))): i for i in range(8)}
        assert backend.encode(value) == reference(value)
        del value


def test_non_str_key_still_refused_after_cached_keys(backend: ModuleType) -> None:
    assert backend.encode({"a": 1}) == b'{"a":1}\n'
    with pytest.raises(EncodeError, match="Dict key must be str"):
        backend.encode({"a": 1, 2: 3})
