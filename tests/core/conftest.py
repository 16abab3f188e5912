"""Fixtures shared by the core tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture
def low_str_digits() -> Iterator[None]:
    """``sys.set_int_max_str_digits(640)`` (the smallest CPython allows) for the test, then restored."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)
