"""A stdio session takes a UTF-8 byte order mark right before any line, not only the first (RFC 8259 §8.1
lets a parser ignore one; some Windows tools write one before each message), and answers one anywhere else
with a -32700 that says so in plain words and where (docs/core-contract.md, "Framing")."""

from __future__ import annotations

import pytest
from tests.session._support import Handlers, raw_session

pytestmark = pytest.mark.anyio

BOM = b"\xef\xbb\xbf"
PLAIN = "a UTF-8 byte order mark (EF BB BF) is allowed only right before a message, not in it"


def _echo(rid: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"n":%d}}\n' % (rid, rid)


async def test_a_bom_before_a_later_line_is_dropped_and_one_more_is_refused_with_where() -> None:
    async with raw_session(Handlers()) as (_, peer):
        await peer.send(_echo(1) + BOM + _echo(2) + BOM + BOM + _echo(3))
        items = [await peer.receive() for _ in range(3)]
    assert sorted((item.id, item.result) for item in items if item.kind == "result") == [
        (1, {"n": 1}),
        (2, {"n": 2}),
    ]
    [error] = [item for item in items if item.kind == "error"]
    assert error.id is None  # (`jsonrpc.recover_id` reads ids of frames that start as an object only)
    offset = len(_echo(1)) + 3 + len(_echo(2)) + 3  # the line's first byte after the BOM dropped
    assert error.error == {
        "code": -32700,
        "message": "Parse error: invalid JSON",
        "data": {"offset": offset, "at": 0, "detail": PLAIN},
    }
