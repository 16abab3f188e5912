"""A batch's array holds at most ``limit`` bytes even where answers are replaced by the ``-32603`` "Batch
too large" error: an answer is kept whole only if room is left for the error of every request still
awaited, so the errors that stand for the later answers fit too (they were appended unchecked, taking the
array past the limit by up to one error per element)."""

from __future__ import annotations

import json
from typing import Any

from mcpframe import core, jsonrpc
from mcpframe.session.batch import Batch, too_large

IDS: list[Any] = [1, "two", 333, "a-longer-string-id"]


def _answer(rid: Any, size: int) -> bytes:
    return core.encode_result(rid, {"text": "x" * size})


def _error_size(rid: Any, limit: int) -> int:
    return len(core.encode_error(rid, jsonrpc.INTERNAL_ERROR, too_large(limit)))


def _run(limit: int, sizes: list[int]) -> bytes:
    """The array a batch of `IDS` (all started first) writes when answered in order with `sizes`."""
    written: list[bytes] = []
    batch = Batch(written.append, limit)
    for rid in IDS:
        batch.expect(rid)
    batch.seal()
    for rid, size in zip(IDS, sizes, strict=True):
        batch.answer(_answer(rid, size))
    assert len(written) == 1
    return written[0]


def test_a_batch_whose_every_answer_is_replaced_fits_a_limit_at_the_boundary() -> None:
    limit = 1000
    exact = sum(_error_size(rid, limit) for rid in IDS) + 1  # the errors' array (`[`, commas, `]`)
    for bound in (exact, exact + 1, exact + 50):
        array = _run(bound, [bound] * len(IDS))  # each answer alone passes the limit
        assert len(array.rstrip(b"\n")) <= bound
        got = json.loads(array)
        assert [a["id"] for a in got] == IDS
        assert all(a["error"]["code"] == jsonrpc.INTERNAL_ERROR for a in got)


def test_an_answer_that_would_leave_no_room_for_the_later_errors_is_replaced() -> None:
    """The first answer fits alone but not with the errors of the three later (oversized) answers: the
    old check kept it and the array passed the limit by about three errors."""
    limit = 2000
    first = limit - 200
    array = _run(limit, [first, limit, limit, limit])
    assert len(array.rstrip(b"\n")) <= limit
    got = json.loads(array)
    assert [a["id"] for a in got] == IDS
    assert all("error" in a for a in got)


def test_answers_that_fit_with_the_room_kept_are_kept_whole() -> None:
    limit = 4000
    array = _run(limit, [100, 100, 100, 100])
    assert len(array.rstrip(b"\n")) <= limit
    assert all("result" in a for a in json.loads(array))
