"""`mcpframe proxy`: a client's request ids come back in the bytes the client wrote them in.

The stdio proxy (`mcpframe proxy -- command`) and both HTTP bridges of `--listen` are covered here: the
stateless one (2026-07-28 requests, one shared child, ids remapped) and the session one (a child per
session, ids passed on as they are: the child answers in its own spelling, the proxy puts the client's
back, on its fast path and its full one).

An id's identity is its JSON value (`"A"` and `"\\u0041"` are one id, as are `0` and `-0`), but a client
matching answers by the bytes of its ids must see those bytes again: the proxy splices back what the
client wrote, not a re-encoding of the value it read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import (
    BOTH,
    JSON_ONLY,
    in_process_proxy,
    modern_call,
    modern_headers,
    open_session,
    tools_child,
)

from .conftest import PEER, RawClient

pytestmark = pytest.mark.anyio

# Written ids whose re-encoding differs from what the client wrote.
ODD_IDS = [b"-0", b'"\\u0041"', b'"a\\/b"', b'"\\u00e9\\n"', b'"\\ud83d\\ude00"', b"-0"]


@pytest.fixture(params=["thread", "loop"])
def pump(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The stdio tests run with both of the stdio proxy's pumps (`--pump`)."""
    monkeypatch.setattr(RawClient, "pump_flags", ("--pump", request.param))
    return str(request.param)


def _id_bytes(line: bytes) -> bytes:
    """The bytes of the top-level `id` value of an answer (written first, by the peer or the proxy)."""
    answer = json.loads(line)
    start = line.index(b'"id":') + len(b'"id":')
    start += line[start : start + 1] == b" "
    for end in range(start + 1, len(line) + 1):
        try:
            if json.loads(line[start:end]) == answer["id"] and line[end : end + 1] in {b",", b"}"}:
                return line[start:end]
        except ValueError:
            continue
    raise AssertionError(line)


async def _initialized() -> RawClient:
    """A stdio proxy in front of the peer, with a session initialized through it."""
    client = await RawClient.start()
    await client.handshake()
    return client


async def _refused_as_in_use(client: RawClient, first: bytes, second: bytes) -> None:
    """With a slow request of id `first` in flight, one of the JSON-equal id `second` is refused (-32600:
    already in use), with `second`'s bytes as its id."""
    await client.send(b'{"jsonrpc":"2.0","id":%s,"method":"slow"}\n' % first)
    await client.send(b'{"jsonrpc":"2.0","id":%s,"method":"echo"}\n' % second)
    line = await client.line()
    assert json.loads(line)["error"]["code"] == -32600
    assert _id_bytes(line) == second


@pytest.mark.usefixtures("pump")
async def test_odd_ids_come_back_as_written_alone_and_pipelined() -> None:
    client = await _initialized()
    for raw in ODD_IDS:  # one at a time: the plain path
        await client.send(b'{"jsonrpc":"2.0","id":%s,"method":"echo","params":{"n":1}}\n' % raw)
        assert _id_bytes(await client.line()) == raw
    distinct = ODD_IDS[:-1]  # -0 twice would be one id twice
    await client.send(
        b"".join(b'{"jsonrpc":"2.0","id":%s,"method":"echo","params":{"n":2}}\n' % raw for raw in distinct)
    )
    seen = sorted([_id_bytes(await client.line()) for _ in distinct])
    assert seen == sorted(distinct)
    assert await client.aclose() == 0


@pytest.mark.usefixtures("pump")
async def test_odd_ids_come_back_as_written_with_a_progress_token() -> None:
    client = await _initialized()
    await client.send(
        b'{"jsonrpc":"2.0","id":"\\u0041","method":"progress","params":{"_meta":{"progressToken":"\\u0074"}}}\n'
    )
    for _ in range(2):
        line = await client.line()
        assert b'"progressToken": "\\u0074"' in line
    line = await client.line()
    assert _id_bytes(line) == b'"\\u0041"'
    await client.send(
        b'{"jsonrpc":"2.0","id":-0,"method":"progress","params":{"_meta":{"progressToken":-0}}}\n'
    )
    for _ in range(2):
        assert b'"progressToken": -0' in await client.line()
    assert _id_bytes(await client.line()) == b"-0"
    assert await client.aclose() == 0


@pytest.mark.usefixtures("pump")
async def test_json_equal_ids_are_one_id_in_flight() -> None:
    client = await _initialized()
    await _refused_as_in_use(client, b'"A"', b'"\\u0041"')
    await _refused_as_in_use(client, b"0", b"-0")
    # a cancellation written with the other spelling reaches the request
    await client.send(
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\\u0041"}}\n'
    )
    report = await client.recv()
    assert report["method"] == "test/cancelled"
    assert report["params"]["known"] is True
    assert await client.aclose() == 0


@pytest.mark.usefixtures("pump")
async def test_requests_failed_by_a_dead_upstream_keep_their_id_bytes() -> None:
    client = await _initialized()
    await client.send(b'{"jsonrpc":"2.0","id":"\\u0041","method":"slow"}\n')
    await client.send(b'{"jsonrpc":"2.0","id":-0,"method":"slow"}\n')
    await client.send(b'{"jsonrpc":"2.0","id":9,"method":"crash","params":{"status":3}}\n')
    lines = [await client.line() for _ in range(3)]
    assert sorted(_id_bytes(line) for line in lines) == sorted([b'"\\u0041"', b"-0", b"9"])
    assert all("exited with status 3" in json.loads(line)["error"]["message"] for line in lines)
    assert await client.aclose() == 0


def _data_lines(raw: bytes) -> list[bytes]:
    return [line[6:] for line in raw.split(b"\n") if line.startswith(b"data: ")]


def _modern_body(raw_id: bytes, tool: str, token: bytes | None) -> bytes:
    meta: dict[str, Any] = {"progressToken": "TOKEN"} if token is not None else {}
    body = json.dumps(modern_call(tool, 12345, {}, **meta), separators=(",", ":")).encode()
    body = body.replace(b'"id":12345', b'"id":' + raw_id)
    return body if token is None else body.replace(b'"TOKEN"', token)


@pytest.mark.parametrize("raw_id", [b'"\\u0041"', b"-0", b'"a\\/b"', b"7"])
async def test_the_stateless_bridge_answers_with_the_id_bytes_as_written(
    tmp_path: Path, raw_id: bytes
) -> None:
    async with (
        in_process_proxy(tools_child(tmp_path), pool_size=1) as proxy,
        httpx.AsyncClient(timeout=30) as http,
    ):
        with anyio.fail_after(30):
            body = _modern_body(raw_id, "answer", b'"\\u0074"')
            response = await http.post(proxy.url, content=body, headers=modern_headers("answer"))
            progress, answer = _data_lines(response.content)
            assert b'"progressToken": "\\u0074"' in progress
            assert _id_bytes(answer) == raw_id
            json_only = {**modern_headers("answer"), "accept": "application/json"}
            response = await http.post(
                proxy.url, content=_modern_body(raw_id, "answer", None), headers=json_only
            )
            assert _id_bytes(response.content) == raw_id
            response = await http.post(
                proxy.url,
                content=_modern_body(raw_id, "exit", None),
                headers={**modern_headers("exit"), "accept": "application/json"},
            )
            assert "exited" in response.json()["error"]["message"]
            assert _id_bytes(response.content) == raw_id
        assert not proxy.app.stateless.raw_ids


@pytest.mark.parametrize("raw_id", [b'"\\u0041"', b"-0", b'"a\\/b"'])
async def test_the_session_bridge_answers_with_the_id_bytes_as_written(raw_id: bytes) -> None:
    async with in_process_proxy(PEER, pool_size=1) as proxy, httpx.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            headers = await open_session(http, proxy.url)
            body = b'{"jsonrpc":"2.0","id":%s,"method":"echo","params":{}}' % raw_id
            response = await http.post(proxy.url, content=body, headers={**JSON_ONLY, **headers})
            assert _id_bytes(response.content) == raw_id
            response = await http.post(proxy.url, content=body, headers={**BOTH, **headers})
            [answer] = [line for line in _data_lines(response.content) if line]
            assert _id_bytes(answer) == raw_id
            # the plain spelling of the same id is answered in its own bytes (nothing kept from before)
            plain = json.dumps(json.loads(raw_id)).encode()
            body = b'{"jsonrpc":"2.0","id":%s,"method":"echo","params":{}}' % plain
            response = await http.post(proxy.url, content=body, headers={**JSON_ONLY, **headers})
            assert _id_bytes(response.content) == plain
