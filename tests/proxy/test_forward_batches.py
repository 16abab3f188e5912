"""Batches through the forwarder follow the rule of the server the proxy fronts (`protocol.batches_allowed`):
one `-32600` "batches are not supported" unless `initialize` negotiated 2025-03-26, and there one array line
of answers (JSON-RPC 2.0), not a line per element.

Found by an audit: the proxy forwarded every batch as single messages whatever the revision, and answered it
one line per element (a 20,000-element batch: 20,000 lines), where `mcpframe serve` answers one line.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from . import test_forward
from .test_forward import Client, Harness

harness = test_forward.harness  # the fixture: a forwarder over an upstream played by the test

pytestmark = pytest.mark.anyio


def rpc(id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def handshake(harness: Harness, client: Client, version: str) -> None:
    await client.request(0, "initialize", {"protocolVersion": version, "capabilities": {}})
    init = await harness.upstream.frame()
    await harness.upstream.write({"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": version}})
    assert (await client.frame())["result"]["protocolVersion"] == version
    await client.notify("notifications/initialized", {})
    assert (await harness.upstream.frame())["method"] == "notifications/initialized"


async def send_batch(client: Client, batch: list[Any]) -> None:
    await client.session.feed(json.dumps(batch).encode() + b"\n")


BATCH = [rpc(10, "ping"), 1, {"jsonrpc": "2.0", "method": "notifications/x"}, "x"]


@pytest.mark.parametrize("version", [None, "2025-06-18", "2025-11-25"])
async def test_a_batch_is_refused_once_outside_2025_03_26(harness: Harness, version: str | None) -> None:
    a = Client(harness.forwarder)
    if version is not None:
        await handshake(harness, a, version)
    await send_batch(a, BATCH)
    refused = await a.frame()
    assert refused == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid Request: batches are not supported"},
    }
    await a.request(11, "ping")
    assert (await harness.upstream.frame())["method"] == "ping"  # nothing of the batch went upstream
    assert a.idle()  # one answer for the batch, not one per element


async def test_a_batch_on_2025_03_26_is_answered_with_one_array_line(harness: Harness) -> None:
    a = Client(harness.forwarder)
    await handshake(harness, a, "2025-03-26")
    await send_batch(a, [*BATCH, rpc("s", "echo")])
    ping, note, echo = [await harness.upstream.frame() for _ in range(3)]
    assert (ping["method"], note["method"], echo["method"]) == ("ping", "notifications/x", "echo")
    await harness.upstream.write({"jsonrpc": "2.0", "id": echo["id"], "result": {"e": 1}})
    assert a.idle()  # held until the batch's last answer
    await harness.upstream.write({"jsonrpc": "2.0", "id": ping["id"], "result": {}})
    answers = json.loads(await a.line())
    assert sorted(json.dumps(x["id"]) for x in answers) == sorted(["10", '"s"', "null", "null"])
    by_id = {x["id"]: x for x in answers if x["id"] is not None}
    assert by_id[10]["result"] == {}
    assert by_id["s"]["result"] == {"e": 1}
    assert [x["error"]["code"] for x in answers if x["id"] is None] == [-32600, -32600]
    assert a.idle()


async def test_a_batch_of_many_requests_is_one_line(harness: Harness) -> None:
    a = Client(harness.forwarder)
    await handshake(harness, a, "2025-03-26")
    count = 2000
    await send_batch(a, [rpc(i, "echo", {"i": i}) for i in range(count)])
    frames = [await harness.upstream.frame() for _ in range(count)]
    await harness.upstream.write(
        *({"jsonrpc": "2.0", "id": f["id"], "result": f["params"]} for f in reversed(frames))
    )
    answers = json.loads(await a.line())
    assert sorted((x["id"], x["result"]["i"]) for x in answers) == [(i, i) for i in range(count)]
    assert a.idle()


async def test_a_cancelled_element_gets_no_answer_in_the_array(harness: Harness) -> None:
    a = Client(harness.forwarder)
    await handshake(harness, a, "2025-03-26")
    await send_batch(a, [rpc(1, "slow"), rpc(2, "echo")])
    slow, echo = await harness.upstream.frame(), await harness.upstream.frame()
    await harness.upstream.write({"jsonrpc": "2.0", "id": echo["id"], "result": {}})
    assert a.idle()
    await a.notify("notifications/cancelled", {"requestId": 1})
    assert (await a.line()) == b'[{"jsonrpc": "2.0", "id": 2, "result": {}}]'
    cancel = await harness.upstream.frame()
    assert cancel["params"]["requestId"] == slow["id"]


async def test_the_upstream_dying_answers_the_batch_in_one_array(harness: Harness) -> None:
    a = Client(harness.forwarder)
    await handshake(harness, a, "2025-03-26")
    await send_batch(a, [rpc(1, "slow"), rpc(2, "slow")])
    await harness.upstream.frame()
    await harness.upstream.frame()
    harness.upstream.die(3)
    answers = json.loads(await a.line())
    assert sorted(x["id"] for x in answers) == [1, 2]
    assert all("status 3" in x["error"]["message"] for x in answers)
