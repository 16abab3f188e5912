"""The gateway takes JSON-RPC batches by the rule of `mcpframe serve` (`protocol.batches_allowed`): one
`-32600` "batches are not supported" before `initialize` and outside 2025-03-26, one array of answers there.
It used to take them in every revision."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from tests.session._support import RawPeer

from mcpframe.proxy.gateway import Gateway
from mcpframe.transports import memory_pair

from .test_gateway import EVERYTHING, serve_spec

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


_REFUSED = {"code": -32600, "message": "Invalid Request: batches are not supported"}
_BATCH = [{"jsonrpc": "2.0", "id": 5, "method": "ping"}, {"jsonrpc": "2.0", "id": 6, "method": "ping"}]


async def _batch_answer(version: str | None) -> Any:
    """The gateway's answer to a batch of two pings, sent after an `initialize` for `version` (None: none)."""
    client_end, gateway_end = memory_pair()
    gateway = Gateway([serve_spec("every", EVERYTHING)], report=lambda _: None)
    peer = RawPeer(client_end)
    async with anyio.create_task_group() as tg:
        tg.start_soon(gateway.serve, gateway_end)
        with anyio.fail_after(30):
            if version is not None:
                await peer.request(1, "initialize", {"protocolVersion": version, "capabilities": {}})
                assert (await peer.receive()).result["protocolVersion"] == version
            await client_end.send(json.dumps(_BATCH).encode() + b"\n")
            line = b""
            while not line.endswith(b"\n"):
                line += await client_end.receive()
        await client_end.aclose()
        tg.cancel_scope.cancel()
    return json.loads(line)


@pytest.mark.parametrize("version", [None, "2025-06-18"])
async def test_a_batch_is_refused_before_initialize_and_outside_2025_03_26(version: str | None) -> None:
    assert await _batch_answer(version) == {"jsonrpc": "2.0", "id": None, "error": _REFUSED}


async def test_a_batch_on_2025_03_26_gets_one_array() -> None:
    answers = await _batch_answer("2025-03-26")
    assert sorted(answer["id"] for answer in answers) == [5, 6]
    assert all(answer["result"] == {} for answer in answers)
