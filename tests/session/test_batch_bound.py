"""A batch's answer is held whole until its last element is answered: it is bounded by the frame limit.

Each element of a batch may be a short request with a long answer (a tool returning megabytes). Before
the bound, a 64 MiB batch of such calls was all run and all its answers kept: 1,500 calls of a tool
returning 1 MB took a stdio server to 5.7 GB. Now, once the answers held pass the frame limit
(``max_frame``, never below ``DEFAULT_MAX_FRAME``), the elements not yet started are answered ``-32603``
"Batch too large" instead of run.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcpframe import core, jsonrpc
from mcpframe.session import Request, Session
from mcpframe.transports import memory_pair

from ._support import RawPeer

pytestmark = pytest.mark.anyio

IN_FLIGHT = 4
ELEMENTS = 100


def batch_of(count: int, method: str) -> bytes:
    return b"[" + b",".join(core.encode_request(i, method).rstrip(b"\n") for i in range(count)) + b"]\n"


async def serve_batch(handler: Any, method: str, *, max_frame: int) -> tuple[list[Any], Any]:
    """One batch of ``ELEMENTS`` requests, then a ping: their answers (the elements, the ping)."""
    left, right = memory_pair()
    peer = RawPeer(left)
    peer.decoder = core.Decoder(max_frame=4 * core.DEFAULT_MAX_FRAME)  # the answer may pass the limit
    session = Session(right, request_handler=handler, max_frame=max_frame, max_in_flight=IN_FLIGHT)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await peer.send(batch_of(ELEMENTS, method))
            await peer.request("after", "ping")
            answers = [await peer.receive() for _ in range(ELEMENTS)]
            after = await peer.receive()
            await session.aclose()
    assert sorted(a.id for a in answers) == list(range(ELEMENTS))
    assert all(a.batch is not None for a in answers)  # one array
    return answers, after


async def test_a_batch_stops_running_its_elements_once_its_answer_passes_the_frame_limit() -> None:
    limit, size = core.DEFAULT_MAX_FRAME, 1_000_000
    ran: list[Any] = []

    async def handler(request: Request) -> Any:
        ran.append(request.id)
        await anyio.lowlevel.checkpoint()
        return "x" * size if request.method == "big" else {}

    answers, after = await serve_batch(handler, "big", max_frame=limit)
    results = [a.id for a in answers if a.kind == "result"]
    refused = [a for a in answers if a.kind == "error"]
    # one answered "too large" never ran, or ran while the array filled and its answer did not fit
    assert set(results) <= {r for r in ran if r != "after"}
    assert len(ran) - 1 <= len(results) + IN_FLIGHT
    assert sum(len(a.raw) + 1 for a in answers) + 1 <= limit  # the array (`[`, commas, `]`) fits the limit
    # run until the answers held passed the limit, plus at most the handlers already running then
    assert limit // size <= len(results) <= limit // size + 1 + IN_FLIGHT
    assert {a.error["code"] for a in refused} == {jsonrpc.INTERNAL_ERROR}
    assert refused[0].error["message"] == (
        f"Batch too large: its answers exceed {limit} bytes; send this request in a smaller batch"
    )
    assert (after.id, after.result) == ("after", {})  # the session goes on


async def test_the_bound_is_never_below_the_default_frame_limit() -> None:
    """An HTTP lane's ``max_frame`` is its request body's limit: a batch's answers may be longer."""

    async def handler(request: Request) -> Any:
        await anyio.lowlevel.checkpoint()
        return "x" * 10_000

    answers, after = await serve_batch(handler, "small", max_frame=64 * 1024)  # answers: ~1 MB
    assert [a.kind for a in answers] == ["result"] * ELEMENTS
    assert after.id == "after"
