"""`mcpframe proxy -- command` drops a UTF-8 byte order mark right before any line, as a stdio server does
(tests/session/test_bom_lines.py), and forwards the message without it: the child (tests/proxy/peer.py,
plain `json.loads`, which refuses a BOM) answers it."""

from __future__ import annotations

import json

import pytest
from tests.proxy.conftest import RawClient

pytestmark = pytest.mark.anyio

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("pump", ["thread", "loop"])
async def test_a_bom_before_a_later_line_is_not_forwarded(pump: str) -> None:
    client = await RawClient.start("--pump", pump)
    try:
        await client.handshake()
        echo = {"jsonrpc": "2.0", "id": 7, "method": "echo", "params": {"x": 1}}
        await client.send(BOM + json.dumps(echo).encode() + b"\n")
        answer = await client.recv()
        assert answer["id"] == 7
        assert answer["result"]["params"] == {"x": 1}
    finally:
        assert await client.aclose() == 0


async def test_a_second_bom_is_refused_as_a_stdio_server_refuses_it() -> None:
    client = await RawClient.start()
    try:
        await client.handshake()
        echo = {"jsonrpc": "2.0", "id": 8, "method": "echo", "params": {}}
        await client.send(BOM + BOM + json.dumps(echo).encode() + b"\n")
        answer = await client.recv()
        assert answer["error"]["code"] == -32700
        assert answer["error"]["data"]["detail"] == (
            "a UTF-8 byte order mark (EF BB BF) is allowed only right before a message, not in it"
        )
        assert await client.call(9, "echo", {"n": 1}) == {
            "jsonrpc": "2.0",
            "id": 9,
            "result": {"params": {"n": 1}, "initializations": 1},
        }
    finally:
        assert await client.aclose() == 0
