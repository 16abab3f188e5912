"""A flood of rejected frames is logged rate-limited (``session/rejections.py``): the first ``BURST`` in
full, the rest counted into summary lines, so a parent that never reads the server's stderr cannot block
it. Every rejected frame is still answered."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from tests.session._support import Handlers, RawPeer, raw_session

from mcpframe import core, jsonrpc
from mcpframe.session import Request, Session
from mcpframe.session.rejections import BURST, INTERVAL, RejectionLog
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio

SUMMARY = re.compile(r"(\d+) more rejected frames suppressed")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def records() -> Iterator[_Records]:
    handler = _Records()
    logger = logging.getLogger("mcpframe.session")
    level = logger.level
    logger.setLevel(logging.WARNING)  # whatever another test set on "mcpframe"
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _counts(messages: list[str]) -> tuple[int, int]:
    """Rejections logged in full, and rejections counted by the summary lines."""
    full = sum(m.startswith(("rejected frame", "refused a batch")) for m in messages)
    counted = sum(int(match[1]) for m in messages if (match := SUMMARY.match(m)))
    return full, counted


@pytest.mark.parametrize("bad", [b"not json\n", b'{"jsonrpc":"2.0","id":1,"method":"x" ?}\n'])
async def test_many_bad_lines_are_all_answered_and_logged_bounded(bad: bytes, records: _Records) -> None:
    count = 500
    with anyio.fail_after(30):
        async with raw_session(Handlers()) as (_, peer):
            await peer.send(bad * count + core.encode_request("last", "echo", {"n": 1}))
            answer, before = await peer.until("last")
    assert answer.result == {"n": 1}
    assert len(before) == count  # every bad line got its answer
    assert all(item.kind == "error" and item.error["code"] == jsonrpc.PARSE_ERROR for item in before)
    full, counted = _counts(records.messages)
    assert full == BURST  # the test runs well within INTERVAL: no full line after the burst
    assert full + counted == count  # the rest are counted (the count logged as the session closed)
    assert len(records.messages) <= BURST + 3


async def test_refused_batches_count_too(records: _Records) -> None:
    count = 100
    with anyio.fail_after(30):
        async with raw_session(Handlers()) as (session, peer):
            session.batches = False
            await peer.send(b"[1]\n" * count + core.encode_request("last", "echo", {"n": 1}))
            _, before = await peer.until("last")
    assert len(before) == count
    assert all(item.error["code"] == jsonrpc.INVALID_REQUEST for item in before)
    full, counted = _counts(records.messages)
    assert (full, full + counted) == (BURST, count)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Error:
    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.message = "Parse error: invalid JSON"
        self.code = jsonrpc.PARSE_ERROR
        self.preview = b"oops"
        self.id = None  # a parse error: the core read no id


def test_one_summary_per_interval_and_full_lines_again_after_a_quiet_interval(records: _Records) -> None:
    clock = _Clock()
    log = RejectionLog(clock=clock)
    for offset in range(BURST + 5):  # a burst, then 5 counted
        log.frame(_Error(offset))
    assert _counts(records.messages) == (BURST, 0)
    clock.now += INTERVAL - 1
    log.frame(_Error(100))  # within the interval since the counting began: counted, nothing logged
    assert len(records.messages) == BURST
    clock.now += 1
    log.frame(_Error(101))  # the interval has passed: one summary of the 7
    assert records.messages[-1].startswith("7 more rejected frames suppressed in the last 60 s")
    assert "the last at stream byte 101" in records.messages[-1]
    clock.now += INTERVAL  # quiet: nothing came for an interval
    log.frame(_Error(102))
    assert records.messages[-1].startswith("rejected frame at stream byte 102")
    log.flush()  # nothing counted since: no line
    assert _counts(records.messages) == (BURST + 1, 7)


def test_flush_logs_what_was_counted_once(records: _Records) -> None:
    log = RejectionLog(clock=_Clock())
    for offset in range(BURST + 3):
        log.frame(_Error(offset))
    log.flush()
    log.flush()
    assert _counts(records.messages) == (BURST, 3)


BUSY_LINES = ("refused request", "dropped notification")


async def test_a_flood_of_busy_refusals_and_dropped_notifications_is_bounded(records: _Records) -> None:
    """Requests refused "Server busy" and notifications dropped in batches answered as busy, while the
    session waits on the peer's answer with its backlog at the cap: each is still answered (or dropped) as
    before, but the log holds the first ``BURST`` lines and counts the rest."""
    left, right = memory_pair()
    peer = RawPeer(left)

    async def handler(request: Request) -> Any:
        return await request.session.request("peer/question")

    count = 150
    busy_batch = [
        {"jsonrpc": "2.0", "id": "b", "method": "ask"},
        {"jsonrpc": "2.0", "method": "notifications/flood"},
    ]
    flood = b"".join(
        core.encode_request(f"r{n}", "ask") + json.dumps(busy_batch).encode() + b"\n" for n in range(count)
    )
    with anyio.fail_after(30):
        async with Session(right, request_handler=handler, max_in_flight=1):
            await peer.send(core.encode_request(1, "ask") + core.encode_request(2, "ask"))
            question = await peer.receive()  # request 1 waits on us; request 2 fills the backlog
            await peer.send(flood + core.encode_request("last", "ask"))
            _, before = await peer.until("last")
            await peer.send(core.encode_result(question.id, "one"))
    refused = [m for m in before if m.kind == "error"]
    assert len(refused) == 2 * count  # each request, and each batch's request: "Server busy"
    assert all(m.error["code"] == jsonrpc.INTERNAL_ERROR for m in refused)
    full = sum(m.startswith(BUSY_LINES) for m in records.messages)
    counted = sum(int(match[1]) for m in records.messages if (match := SUMMARY.match(m)))
    assert full == BURST
    # the requests refused (alone, and in the busy batches) and notifications dropped, and "last"
    assert full + counted == 3 * count + 1
    assert len(records.messages) <= BURST + 3
