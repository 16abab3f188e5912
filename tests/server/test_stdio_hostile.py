"""One hostile line over stdio never kills anything: a real server child and a real client.

Integer literals beyond ``core.MAX_INT_DIGITS`` (4,300 digits) in ``id``, ``params`` or ``result``: the server
answers each with its error (a response gets none) and goes on serving; the client fails only the call whose
answer was unreadable, at once, and goes on too.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from tests.server.test_stdio_flow import child

from mcpframe import core
from mcpframe.client import Client
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio

LONG_INTEGER = "Invalid Request: integer literal longer than 4300 digits"


def frame(text: str) -> bytes:
    return text.encode() + b"\n"


@pytest.mark.parametrize("digits", [4301, 100_000])
async def test_a_server_answers_each_long_integer_and_goes_on(digits: int) -> None:
    n = "9" * digits

    def call(rid: str, value: str) -> bytes:
        params = f'{{"name":"echo","arguments":{{"n":{value}}}}}'
        return frame(f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call","params":{params}}}')

    with anyio.fail_after(60):
        async with child("2025-06-18") as peer:
            await peer.send(
                call(n, "1")  # the id itself: unreadable, answered with id null
                + call("7", n)  # in params: answered with its id
                + call("8", "-" + n)
                + frame(f'{{"jsonrpc":"2.0","id":99,"result":{{"x":{n}}}}}')  # a response: never answered
                + frame(f'{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"p":{n}}}}}')
                + core.encode_request(9, "tools/call", {"name": "echo", "arguments": {"n": 5}})
            )
            seen: list[Any] = []
            while not seen or getattr(seen[-1], "id", None) != 9:
                seen.append(await peer.receive())
    errors = [(item.id, item.error["code"], item.error["message"]) for item in seen[:-1]]
    assert errors == [(None, -32600, LONG_INTEGER), (7, -32600, LONG_INTEGER), (8, -32600, LONG_INTEGER)]
    assert seen[-1].result["content"] == [{"type": "text", "text": "5"}]


RAW_SERVER = r"""
import sys, json
big = "7" * int(sys.argv[1])
for line in sys.stdin:
    msg = json.loads(line)
    rid, method = msg.get("id"), msg.get("method")
    if rid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw", "version": "0"}}
        out = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "tools/call" and msg["params"]["name"] == "big":
        out = '{"jsonrpc":"2.0","id":%s,"result":{"content":[],"n":%s}}' % (json.dumps(rid), big)
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "fine"}]}
        out = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})
    else:
        out = json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("digits", [4301, 100_000])
async def test_a_client_fails_only_the_call_whose_answer_is_unreadable(digits: int) -> None:
    with anyio.fail_after(30):
        async with Client.stdio(sys.executable, ["-c", RAW_SERVER, str(digits)], timeout=20) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.call_tool("big", {})
            assert (info.value.code, info.value.message) == (
                -32600,
                f"the peer's answer is invalid: {LONG_INTEGER}",
            )
            result = await client.call_tool("other", {})
    assert result["content"][0]["text"] == "fine"
