"""Refusals said the same way wherever they come from:

- `[]` while batches are off (a 2025-06-18 or later session) is refused as any batch is, "batches are not
  supported" (what the proxy's decoder without batches says), logged as a refused batch; with batches on
  it is still "empty batch";
- the `-32600` of a frame with an integer literal past the core's digit limit says where that frame
  starts (`data.offset`), as a parse error's does, on stdio, in an HTTP body and in a batch element;
- a request of a batch answered "Server busy" is logged through the session's rejection log, as a single
  request refused "Server busy" is."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.session._support import Handlers, RawPeer, raw_session
from tests.session.test_rejection_flood import _Records, records
from tests.streamable_http._server_support import asgi_client, initialize, session_headers

from mcpframe import core, jsonrpc
from mcpframe.session import Request, Session
from mcpframe.session.batch import BATCH_REFUSAL, EMPTY_BATCH, LONG_INTEGER
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio

LONG = "9" * (core.MAX_INT_DIGITS + 1)

__all__ = ["records"]  # the fixture, used by name


@pytest.mark.parametrize("frame", [b"[]", b" [ ] "])
async def test_an_empty_batch_while_batches_are_off_is_refused_as_a_batch(
    frame: bytes, records: _Records
) -> None:
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (session, peer):
            session.batches = False
            await peer.send(b"\n" + frame + b"\n" + core.encode_request("last", "echo", {"n": 1}))
            answer, before = await peer.until("last")
    assert answer.result == {"n": 1}
    assert [(m.id, m.error) for m in before] == [
        (None, {"code": jsonrpc.INVALID_REQUEST, "message": BATCH_REFUSAL})
    ]
    assert records.messages == [f"refused a batch at stream byte 1: {BATCH_REFUSAL}"]


async def test_an_empty_batch_while_batches_are_on_is_still_an_empty_batch() -> None:
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (session, peer):
            session.batches = True
            await peer.send(b"[]\n" + core.encode_request("last", "echo", {"n": 1}))
            _, before = await peer.until("last")
    assert [m.error["message"] for m in before] == [EMPTY_BATCH]


def _long_request(rid: int) -> bytes:
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"echo","params":{{"n":{LONG}}}}}\n'.encode()


async def test_an_over_long_integer_says_where_its_frame_starts_on_stdio() -> None:
    first = core.encode_request(1, "echo", {"n": 1})
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (session, peer):
            session.batches = True
            batch = b'[{"jsonrpc":"2.0","id":3,"method":"echo"},' + _long_request(4).rstrip() + b"]\n"
            await peer.send(first + _long_request(2) + batch + core.encode_request("last", "echo", {"n": 1}))
            _, before = await peer.until("last")
    by_id: dict[Any, Any] = {}
    for message in before:
        for item in message if isinstance(message, list) else [message]:
            by_id[item.id] = item
    assert by_id[2].error == {
        "code": jsonrpc.INVALID_REQUEST,
        "message": LONG_INTEGER,
        "data": {"offset": len(first)},
    }
    element = len(first) + len(_long_request(2)) + batch.index(b'{"jsonrpc":"2.0","id":4')
    assert by_id[4].error["data"] == {"offset": element}
    assert by_id[3].kind == "result"  # the rest of the batch is answered


async def test_an_over_long_integer_in_an_http_body_says_where_it_starts() -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client))
        refused = await client.post("/mcp", content=_long_request(5), headers=headers)
    assert refused.status_code == 400
    assert refused.json() == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": jsonrpc.INVALID_REQUEST, "message": LONG_INTEGER, "data": {"offset": 0}},
    }


async def test_a_request_of_a_batch_answered_busy_is_logged(records: _Records) -> None:
    left, right = memory_pair()
    peer = RawPeer(left)

    async def handler(request: Request) -> Any:
        return await request.session.request("peer/question")

    batch = [{"jsonrpc": "2.0", "id": 3, "method": "ask"}, {"jsonrpc": "2.0", "id": 4, "method": "ask"}]
    async with Session(right, request_handler=handler, max_in_flight=1):
        with anyio.fail_after(10):
            await peer.send(core.encode_request(1, "ask") + core.encode_request(2, "ask"))
            question = await peer.receive()  # request 1 waits on us; request 2 waits in the backlog
            await peer.send(batch)
            busy = [await peer.receive(), await peer.receive()]
            assert [(m.id, m.error["code"]) for m in busy] == [(3, -32603), (4, -32603)]
            await peer.send(core.encode_result(question.id, "one"))
            await peer.until(1)
    logged = [m for m in records.messages if m.startswith("refused request")]
    assert [m.split(":")[0] for m in logged] == [
        "refused request 'ask' (id 3) of a batch",
        "refused request 'ask' (id 4) of a batch",
    ]
    assert all("Server busy" in m for m in logged)
