"""``encode`` of containers of every length around the walker's look-ahead (it asks for the values a
few members ahead of the one it writes, and clamps that to the container's last member), with deleted
dict entries at every position, the last one included: the same bytes as ``json.dumps``."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

# Beyond the look-ahead (four members) and its clamp on both sides.
LENGTHS = range(10)


def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _values(length: int) -> list[Any]:
    """Members of mixed kinds, so that each is a different object with its own header."""
    kinds = [lambda i: f"t{i}é", lambda i: i * 1000, lambda i: i + 0.5, lambda i: [i], lambda i: {"n": i}]
    return [kinds[i % len(kinds)](i) for i in range(length)]


@pytest.mark.parametrize("length", LENGTHS)
def test_lists_of_each_length(backend: ModuleType, length: int) -> None:
    items = _values(length)
    assert backend.encode(items) == _line(items)
    assert backend.encode({"a": items, "b": [items, []]}) == _line({"a": items, "b": [items, []]})


@pytest.mark.parametrize("length", LENGTHS)
def test_dicts_of_each_length(backend: ModuleType, length: int) -> None:
    members = {f"k{i}": value for i, value in enumerate(_values(length))}
    assert backend.encode(members) == _line(members)
    assert backend.encode([members, {}, members]) == _line([members, {}, members])


@pytest.mark.parametrize("length", range(1, 10))
def test_dicts_with_each_entry_deleted(backend: ModuleType, length: int) -> None:
    for gone in range(length):
        members = {f"k{i}": value for i, value in enumerate(_values(length))}
        del members[f"k{gone}"]
        assert backend.encode(members) == _line(members)
        # The deleted entry last but one and last: the look-ahead's clamp lands on it.
        tail = dict(members)
        for key in list(tail)[-2:]:
            del tail[key]
        assert backend.encode([tail, members]) == _line([tail, members])
