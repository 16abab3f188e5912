"""An unknown name close to several known ones: the suggestion is the first of them in sort order, and a
name's own form beats another name's form one letter short (`handlers._closest`)."""

from __future__ import annotations

import pytest

from mcpframe.server.handlers import _closest


@pytest.mark.parametrize(
    ("name", "known", "close"),
    [
        ("tool_0", ["tool_01", "tool_00"], "tool_00"),  # one letter missed from either: the first in order
        ("tool_0", ["tool_00", "tool_01"], "tool_00"),  # whatever order they were registered in
        ("tool_2", ["tool_1", "tool_0"], "tool_0"),  # one letter changed in either
        ("ab", ["abc", "ab"], "ab"),  # the name itself, though it is also "abc" one letter short
        ("AB", ["abd", "abc", "ab"], "ab"),  # its folded form, the same
    ],
)
def test_a_tie_goes_to_the_first_in_sort_order(name: str, known: list[str], close: str) -> None:
    assert _closest(name, {key: 1 for key in known}) == close
