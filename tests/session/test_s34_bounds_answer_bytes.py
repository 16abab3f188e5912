"""Large answers to a slow reader: the Session bounds the answer bytes it holds, not only the handlers.

``max_in_flight`` counts handlers; with large answers that is not a memory bound (1,024 handlers answering
1 MB each would queue 1 GB for a client that reads slowly). ``max_answer_bytes`` counts what the running
handlers may be about to answer, each as much as the largest recent frame: past it no further handler
starts and reading stops, so the client is slowed down, never refused. The tests measure the Session's
own accounting (``outbox_bytes`` at every write, handlers running at once), never memory or time.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.session._support import RawPeer

from mcpframe import core
from mcpframe.session import Request, Session, SessionOptions
from mcpframe.transports import MemoryTransport, memory_pair

pytestmark = pytest.mark.anyio

_ANSWER = 32 * 1024  # bytes of padding in each answer
_HIGH = 64 * 1024  # the outbox's high-water mark
_BUDGET = 256 * 1024  # max_answer_bytes


class Slow:
    """The Session's end of a pair whose peer reads nothing until the test says so: one chunk in the
    pipe at most, and the Session's outbox recorded at every write."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.session: Session | None = None
        self.outbox_peak = 0
        self.paused = anyio.Event()

    def _note(self) -> None:
        assert self.session is not None
        self.outbox_peak = max(self.outbox_peak, self.session.outbox_bytes)

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def send(self, data: bytes) -> None:
        self._note()
        await self.inner.send(data)

    def pause_reading(self) -> None:
        self.paused.set()
        self.inner.pause_reading()

    def resume_reading(self) -> None:
        self.inner.resume_reading()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _serve_large_answers(count: int, **options: Any) -> tuple[int, int, list[Any], list[Any]]:
    """Pipeline ``count`` requests whose handlers all wait, then answer ``_ANSWER`` bytes each, to a
    client that reads only once the server stopped reading. Returns (most handlers running at once,
    the outbox's peak, the answers' ids, their results)."""
    left, right = memory_pair(max_buffer=1)
    transport = Slow(right)
    running = most = 0
    release = anyio.Event()
    settled = anyio.Event()  # the server stopped reading, or every handler started
    pad = "x" * _ANSWER

    async def handler(req: Request) -> Any:
        nonlocal running, most
        if req.method == "first":
            return {"pad": pad}
        running += 1
        most = max(most, running)
        if running == count:
            settled.set()
        try:
            await release.wait()
            return {"n": req.id, "pad": pad}
        finally:
            running -= 1

    session = Session(transport, request_handler=handler, options=SessionOptions(**options))
    transport.session = session
    peer = RawPeer(left)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        with anyio.fail_after(60):
            # one answer first: the session learns how large its answers are
            await peer.send(core.encode_request(0, "first", None))
            assert (await peer.receive()).id == 0

            async def write_all() -> None:
                for rid in range(1, count + 1):
                    await peer.send(core.encode_request(rid, "work", None))

            tg.start_soon(write_all)

            async def on_pause() -> None:
                await transport.paused.wait()
                settled.set()

            tg.start_soon(on_pause)
            await settled.wait()
            release.set()
            answers = [await peer.receive() for _ in range(count)]
        await session.aclose()
        tg.cancel_scope.cancel()  # on_pause, when the server never stopped reading
    return most, transport.outbox_peak, [a.id for a in answers], [a.result for a in answers]


async def test_a_slow_reader_of_large_answers_slows_the_server_and_gets_every_answer_in_order() -> None:
    count = 100
    most, peak, ids, results = await _serve_large_answers(
        count, outbox_high_water=_HIGH, max_answer_bytes=_BUDGET
    )
    assert ids == list(range(1, count + 1))  # nothing refused, nothing lost, in order
    assert [result["n"] for result in results] == ids
    assert all(len(result["pad"]) == _ANSWER for result in results)
    frame = len(core.encode_result(count, {"n": count, "pad": "x" * _ANSWER}))
    assert most <= -(-_BUDGET // frame)  # handlers running at once: the budget over one answer, not 100
    assert peak <= _BUDGET + _HIGH + frame  # bytes held: bounded by the budget, not 100 answers


async def test_with_a_large_budget_the_same_load_runs_every_handler_at_once() -> None:
    # the control: the bound above is the budget's doing (with room for all, all run and all queue)
    count = 100
    most, peak, ids, _ = await _serve_large_answers(count, outbox_high_water=_HIGH, max_answer_bytes=1 << 40)
    assert ids == list(range(1, count + 1))
    assert most == count
    assert peak > count // 2 * _ANSWER


async def test_one_handler_always_starts_however_large_the_answers() -> None:
    # an answer larger than the whole budget: the session goes on one handler at a time, never stuck
    most, _, ids, _ = await _serve_large_answers(5, outbox_high_water=_HIGH, max_answer_bytes=1024)
    assert ids == [1, 2, 3, 4, 5]
    assert most == 1


def test_max_answer_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_answer_bytes must be at least 1 byte, got 0"):
        SessionOptions(max_answer_bytes=0)
