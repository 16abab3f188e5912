"""What the lean server's fast path (`http/fast.py`'s `fast_post`) made of each POST, for the tests that
check which POSTs it took: each test file sorts the results its own way (`kind`), or takes their type
names (`taken`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from mcpframe.http import fast as fast_module

T = TypeVar("T")


def record_fast_posts(monkeypatch: pytest.MonkeyPatch, kind: Callable[[Any], T]) -> list[T]:
    """Wrap `fast_post` (undone with `monkeypatch`): each POST it is asked about appends `kind(result)`,
    `result` being what it returned (`None` when it declined), to the list returned."""
    seen: list[T] = []
    real = fast_module.fast_post

    def recorded(posts: Any, headers: dict[str, str], data: bytes) -> Any:
        got = real(posts, headers, data)
        seen.append(kind(got))
        return got

    monkeypatch.setattr(fast_module, "fast_post", recorded)
    return seen


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type name of each fast-path result (`_Abandoned`: the parked JSON answer of a `Pending`
    exchange; `NoneType`: declined)."""
    return record_fast_posts(monkeypatch, lambda got: type(got).__name__)
