"""`mcpframe tap`'s exit table: exact p50/p99 from the recorded latencies, then a marked estimate."""

from __future__ import annotations

import math

import pytest

from mcpframe.cli import tap, tap_record


def _exact(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def test_the_table_gives_exact_percentiles() -> None:
    stats = tap_record.MethodStats(count=7)
    values = [0.0004, 12.5, 3.25, 1.0, 7.75, 0.5, 100.125]
    for value in values:
        stats.add_latency(value)
    assert stats.exact(0.5) == _exact(values, 0.5) == 3.25
    assert stats.exact(0.99) == 100.125  # the bucket's upper edge was 1% above it
    table = tap.render_table({"tools/call": stats})
    assert table.splitlines()[1].split() == ["tools/call", "7", "3.250", "100.125"]
    assert "~" not in table


def test_past_the_bound_the_histogram_is_used_and_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap_record, "EXACT_LATENCIES", 10)
    stats = tap_record.MethodStats(count=30)
    values = [1.0 + i for i in range(30)]
    for value in values:
        stats.add_latency(value)
    assert stats.kept is None  # memory stays bounded: the latencies are no longer kept
    assert stats.exact(0.5) is None
    estimate = stats.latency(0.5)
    assert estimate is not None
    assert _exact(values, 0.5) <= estimate <= _exact(values, 0.5) * 1.0101
    lines = tap.render_table({"ping": tap_record.MethodStats(count=1), "tools/call": stats}).splitlines()
    assert lines[1].split() == ["ping", "1", "-", "-"]
    assert lines[2].split()[2].startswith("~")
    assert lines[-1].startswith("~: more than")
