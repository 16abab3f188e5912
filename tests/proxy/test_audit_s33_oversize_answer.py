"""An answer from the upstream server over the frame limit ends its client's request with an error.

The Forwarder drops an upstream frame it cannot take (with a note on stderr); for an oversize answer it
used to do only that, and the client's request waited until the upstream exited (forever, for a server
that goes on). When the dropped frame's first bytes show the answer's id (`{"jsonrpc": "2.0", "id": N,
...`, the way most servers write), the request it answers gets a `-32603` error naming the limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.proxy.test_forward import Client, Harness, serving

from mcpframe.proxy.unreadable import answer_id

pytestmark = pytest.mark.anyio

LIMIT = 4096


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    async with serving(max_frame=LIMIT) as harness:
        yield harness


@pytest.mark.parametrize("spaced", [False, True], ids=["compact", "json.dumps"])
async def test_an_oversize_answer_fails_its_request(harness: Harness, spaced: bool) -> None:
    a = Client(harness.forwarder)
    await a.request("big", "tools/call", {"name": "big"})
    await a.request("small", "ping")
    big, small = await harness.upstream.frame(), await harness.upstream.frame()
    head = b'{"jsonrpc": "2.0", "id": %d, "result": ' if spaced else b'{"jsonrpc":"2.0","id":%d,"result":'
    oversize = head % big["id"] + b'{"text": "' + b"x" * (2 * LIMIT) + b'"}}\n'
    await harness.upstream.write(oversize, {"jsonrpc": "2.0", "id": small["id"], "result": {}})
    first, second = await a.frame(), await a.frame()
    assert first["id"] == "big"
    assert first["error"]["code"] == -32603
    assert str(LIMIT) in first["error"]["message"]
    assert second == {"jsonrpc": "2.0", "id": "small", "result": {}}
    assert any("malformed" in w or "exceeds" in w for w in harness.warnings)


@pytest.mark.parametrize(
    ("preview", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":{"x":"aaaa', 7),
        (b'{"jsonrpc": "2.0", "id": -3, "error": {"code": 1', -3),
        (b'{"id":"a-1","jsonrpc":"2.0","result":{', "a-1"),
        (b'{"jsonrpc":"2.0","id":7,"method":"x","params":{', None),  # a request: never an answer
        (b'{"result":{"x":1},"jsonrpc":"2.0","id":7}', None),  # the id after the result: not read
        (b'{"jsonrpc":"2.0","id":"a\\"b","result":{', None),  # an escape: not guessed
        (b'{"jsonrpc":"2.0","id":' + b"1" * 30 + b',"result":{', None),  # past 18 digits
        (b"not json", None),
    ],
)
def test_answer_id_reads_only_a_plain_head(preview: bytes, expected: object) -> None:
    assert answer_id(preview) == expected
