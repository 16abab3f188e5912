"""A 2025-03-26 batch through the stdio proxy: its one array line of answers stays within the frame limit.

The array is one frame and the client refuses a frame over its limit (the whole answer lost): an answer
that would take the array past the proxy's `max_frame` is replaced by a `-32603` "Batch too large" error
carrying the request's id (in the client's own spelling), and the other answers still arrive.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import pytest

from mcpframe.proxy.forward import Forwarder, UpstreamLink

from .test_forward import Client, Harness, MemoryUpstream
from .test_forward_batches import handshake, rpc

pytestmark = pytest.mark.anyio

_LIMIT = 4096


@pytest.fixture
async def small() -> AsyncIterator[Harness]:
    links: list[MemoryUpstream] = []

    async def connect() -> UpstreamLink:
        links.append(MemoryUpstream())
        return links[-1]

    forwarder = Forwarder(connect, max_frame=_LIMIT, warn=lambda _: None)
    async with anyio.create_task_group() as group:
        group.start_soon(forwarder.serve)
        with anyio.fail_after(5):
            while not links:
                await anyio.sleep(0)
        yield Harness(forwarder, links, [])
        group.cancel_scope.cancel()


async def test_answers_past_the_frame_limit_become_errors_and_the_array_fits(small: Harness) -> None:
    a = Client(small.forwarder)
    await handshake(small, a, "2025-03-26")
    elements = [json.dumps(rpc(i, "echo")).encode() for i in (1, 2, 3)]
    elements.append(b'{"jsonrpc": "2.0", "id": "\\u0041", "method": "echo"}')  # an id spelled unusually
    await a.session.feed(b"[" + b",".join(elements) + b"]\n")
    sent = [await small.upstream.frame() for _ in range(4)]
    pad = "x" * 1500  # each answer fits a frame; three of them do not fit one array
    await small.upstream.write(*({"jsonrpc": "2.0", "id": f["id"], "result": {"pad": pad}} for f in sent))
    line = await a.line()
    assert len(line) + 1 <= _LIMIT  # the client's decoder takes it
    answers = json.loads(line)
    assert [x["id"] for x in answers] == [1, 2, 3, "A"]  # every request answered, in the order answered
    assert [x["result"]["pad"] for x in answers[:2]] == [pad, pad]
    for error in answers[2:]:
        assert error["error"]["code"] == -32603
        assert error["error"]["message"].startswith(f"Batch too large: its answers exceed {_LIMIT} bytes")
    assert b'"id": "\\u0041"' in line or b'"id":"\\u0041"' in line  # the client's own id bytes
    assert a.idle()


async def test_a_batch_within_the_limit_is_untouched(small: Harness) -> None:
    a = Client(small.forwarder)
    await handshake(small, a, "2025-03-26")
    await a.session.feed(json.dumps([rpc(1, "echo"), rpc(2, "echo")]).encode() + b"\n")
    sent = [await small.upstream.frame() for _ in range(2)]
    pad = "y" * 1000
    await small.upstream.write(*({"jsonrpc": "2.0", "id": f["id"], "result": {"pad": pad}} for f in sent))
    answers = json.loads(await a.line())
    assert [(x["id"], len(x["result"]["pad"])) for x in answers] == [(1, 1000), (2, 1000)]
