"""A batch's array stays within the frame limit even when the handlers already running when it filled
answer long: an answer that would take the array past the limit is replaced by the `-32603` "Batch too
large" error with its id (as the stdio proxy's `Batch` does), so the peer, whose decoder refuses a longer
frame, still gets every other answer and knows which request to send again."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpframe import core, jsonrpc
from mcpframe.session import Request, Session
from mcpframe.session.batch import Batch, too_large, too_large_answer
from mcpframe.transports import memory_pair

from ._support import RawPeer

pytestmark = pytest.mark.anyio

SIZE = 17_000_000  # four of them pass the 64 MiB limit, three do not


async def test_answers_of_running_handlers_that_overflow_the_array_are_replaced() -> None:
    limit = core.DEFAULT_MAX_FRAME
    gate = anyio.Event()
    started: list[Any] = []

    async def handler(request: Request) -> Any:
        started.append(request.id)
        await gate.wait()
        return "x" * SIZE

    left, right = memory_pair()
    peer = RawPeer(left)  # its decoder refuses a frame over the limit: the array must fit
    session = Session(right, request_handler=handler, max_in_flight=4)
    batch = b"[" + b",".join(core.encode_request(i, "big").rstrip(b"\n") for i in range(4)) + b"]\n"
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await peer.send(batch)
            while len(started) < 4:  # all four run before any answer is held
                await anyio.sleep(0)
            gate.set()
            answers = [await peer.receive() for _ in range(4)]
            await session.aclose()
    assert all(answer.batch is not None for answer in answers)  # one array, decoded within the limit
    results = sorted(answer.id for answer in answers if answer.kind == "result")
    [refused] = [answer for answer in answers if answer.kind == "error"]
    assert len(results) == 3
    assert sorted([*results, refused.id]) == [0, 1, 2, 3]
    assert refused.error == {"code": jsonrpc.INTERNAL_ERROR, "message": too_large(limit)}


def test_the_replacement_keeps_the_id_as_written() -> None:
    answer = b'{"jsonrpc":"2.0","id":"a\\u0062","result":"' + b"long" * 250 + b'"}\n'
    error = too_large_answer(answer, 10)
    assert error.endswith(b"\n")
    assert b'"id":"a\\u0062"' in error
    written: list[bytes] = []
    limit = len(answer) + len(too_large_answer(answer, 1000)) + 1  # `[` answer `,` its error `]`
    batch = Batch(written.append, limit=limit)
    batch.expect()
    batch.expect()
    batch.answer(answer)  # fits, with room kept for the other's error
    batch.answer(answer)  # would not
    batch.seal()
    [line] = written
    assert line == b"[" + answer.rstrip(b"\n") + b"," + too_large_answer(answer, limit)[:-1] + b"]\n"
    assert len(line) - 1 == limit
