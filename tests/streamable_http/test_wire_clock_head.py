"""`wire_parts.Clock.head`: a 200's head is taken as made within the second, and made anew once the second
changed (its `Date` follows the clock); another status is formatted with the same `Date`."""

from __future__ import annotations

import pytest

from mcpframe.http import wire_parts
from mcpframe.http.wire_parts import Clock


def test_a_200_head_follows_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_700_000_000.25]
    monkeypatch.setattr(wire_parts.time, "time", lambda: now[0])
    for name, value in (("second", -1), ("value", b""), ("ok", b"")):  # all restored after the test
        monkeypatch.setattr(Clock, name, value)
    first = Clock.head(200)
    assert first.startswith(b"HTTP/1.1 200 OK\r\ndate: Tue, 14 Nov 2023 22:13:20 GMT\r\n")
    assert Clock.head(200) is first  # the same second: made once
    assert Clock.head(404).startswith(b"HTTP/1.1 404 Not Found\r\ndate: Tue, 14 Nov 2023 22:13:20 GMT\r\n")
    now[0] += 1
    assert b"date: Tue, 14 Nov 2023 22:13:21 GMT" in Clock.head(200)
