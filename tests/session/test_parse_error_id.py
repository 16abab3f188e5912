"""A request whose line fails to parse is answered with its own id when the broken line still shows it
(``jsonrpc.recover_id``): the request waiting for that id ends at once instead of at its timeout. The id is
echoed exactly as sent (integers of any length up to 640 digits, strings), only from a top-level ``"id"``
of an object with a top-level ``"method"`` (never from a broken response). Nesting past the core's limit
and a lone surrogate escape say where (``at``) and why (``detail``), as the other parse errors do.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.session._support import Handlers, raw_session

from mcpframe import core, jsonrpc

pytestmark = pytest.mark.anyio

HUGE = 10**400
IDS = [0, -1, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, HUGE, -HUGE, "", 'a"b\\c', "é☃", "x" * 10_000]


def _ping(rid: int | str, method: bytes) -> bytes:
    """A ping line whose method is ``method`` (raw bytes, maybe broken), with ``rid`` encoded as JSON."""
    request = core.encode_request(rid, "METHOD")
    return request.replace(b'"METHOD"', b'"' + method + b'"')


BROKEN = [  # the method's bytes, why the line fails, and where in the method
    pytest.param(b"p\xffng", "invalid UTF-8: invalid start byte", 1, id="invalid-utf8"),
    pytest.param(b"\\ud800", "lone surrogate \\ud800 (not a character)", 0, id="lone-surrogate"),
    pytest.param(b"\\udc00\\ud800", "lone surrogate \\udc00 (not a character)", 0, id="low-first"),
    pytest.param(b"\\ud800\\ud800\\udc00", "lone surrogate \\ud800 (not a character)", 0, id="high-high-low"),
    pytest.param(b'p" x "', "Expecting ',' delimiter", 3, id="not-json"),
    pytest.param(b"p\x01", "Invalid control character", 1, id="control-char"),
]


@pytest.mark.parametrize("rid", IDS, ids=lambda rid: repr(rid)[:20])
@pytest.mark.parametrize(("method", "detail", "where"), BROKEN)
async def test_a_broken_request_is_answered_with_its_id_and_the_line_after_it_too(
    rid: int | str, method: bytes, detail: str, where: int
) -> None:
    line = _ping(rid, method)
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (_, peer):
            await peer.send(line + core.encode_request("after", "echo", {"n": 1}))
            error = await peer.receive()
            after = await peer.receive()
    assert error.kind == "error"
    assert error.id == rid
    assert type(error.id) is type(rid)
    assert error.error["code"] == jsonrpc.PARSE_ERROR
    assert error.error["data"]["detail"] == detail
    assert error.error["data"]["offset"] == 0
    assert error.error["data"]["at"] == line.index(b'"' + method) + 1 + where
    assert (after.id, after.result) == ("after", {"n": 1})


async def test_deep_params_say_where_and_keep_the_id() -> None:
    line = b'{"jsonrpc":"2.0","id":11,"method":"echo","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    with anyio.fail_after(30):
        async with raw_session(Handlers()) as (_, peer):
            await peer.send(line + core.encode_request(12, "echo", {"n": 2}))
            error = await peer.receive()
            after = await peer.receive()
    assert error.id == 11
    assert error.error["message"] == "Parse error: nesting deeper than 128 levels"
    assert error.error["data"] == {
        "offset": 0,
        "at": line.index(b"[") + 127,
        "detail": "nesting deeper than 128 levels",
    }
    assert (after.id, after.result) == (12, {"n": 2})


NOT_RECOVERED = [
    pytest.param(b'{"jsonrpc":"2.0","id":1.5,"method":"p\xff"}', id="float-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":true,"method":"p\xff"}', id="bool-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}', id="id-not-utf8"),
    pytest.param(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', id="id-lone-surrogate"),
    pytest.param(b'{"jsonrpc":"2.0","params":{"id":5},"method":"p\xff"}', id="nested-id"),
    pytest.param(b'[{"jsonrpc":"2.0","id":5,"method":"p\xff"}]', id="batch"),
    pytest.param(b'{"jsonrpc":"2.0","id":' + b"1" * 641 + b',"method":"p\xff"}', id="641-digits"),
]


@pytest.mark.parametrize("line", NOT_RECOVERED)
def test_an_id_that_does_not_read_exactly_stays_null(line: bytes) -> None:
    assert jsonrpc.recover_id(line) is None


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":7,"result":"\xff"}',
        b'{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"\\ud800"}}',
        b'{"jsonrpc":"2.0","id":7,"result":' + b"[" * 200 + b"]" * 200 + b"}",
    ],
    ids=["invalid-utf8", "lone-surrogate", "deep"],
)
async def test_a_broken_response_is_never_answered_with_its_id(line: bytes) -> None:
    assert jsonrpc.recover_id(line) is None
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (_, peer):
            await peer.send(line + b"\n" + core.encode_request("after", "echo", {"n": 1}))
            first: Any = await peer.receive()
    assert first.id in ("after", None)  # the response got no answer, or an id-less one
    if first.id is None:
        assert first.error["code"] == jsonrpc.PARSE_ERROR


def test_the_last_top_level_id_wins_as_in_valid_json() -> None:
    assert jsonrpc.recover_id(b'{"id":"x","method":"m","id":9 x}') == 9
    assert jsonrpc.recover_id(b'{"id":9,"method":"m","id":1.5 x}') is None
    assert jsonrpc.recover_id(b' \t{"method":"m","id":"a\\"b" x}') == 'a"b'
    assert jsonrpc.recover_id(b'{"jsonrpc":"2.0","id":5,"method":"p"') == 5  # cut short after the id


def test_the_nesting_limit_here_is_the_cores() -> None:
    assert jsonrpc.parse_error_data(b"[" * core.MAX_DEPTH, 0) == {
        "offset": 0,
        "at": core.MAX_DEPTH,
        "detail": "Expecting value",
    }
    deep = jsonrpc.parse_error_data(b"[" * (core.MAX_DEPTH + 1), 0)
    assert deep["at"] == core.MAX_DEPTH


SURROGATES = [  # a frame the stdlib reads, and where its first lone surrogate escape starts (None: none)
    pytest.param(b'{"a":"\\ud83d\\ude00"}', None, id="a-pair"),
    pytest.param(b'{"a":"\\uD83D\\uDE00\\udc00"}', 18, id="pair-then-low"),
    pytest.param(b'{"a":"\\\\ud800"}', None, id="escaped-backslash"),
    pytest.param(b'{"a":"\\\\\\ud800"}', 8, id="escaped-backslash-then-escape"),
    pytest.param(b'{"a":"\\ud83d\\\\ude00"}', 6, id="high-then-text"),
    pytest.param(b'{"a":"' + b"x" * (1 << 16) + b'\\ud800"}', None, id="past-64KiB"),
]


@pytest.mark.parametrize(("raw", "at"), SURROGATES)
def test_a_lone_surrogate_is_found_by_its_escape(raw: bytes, at: int | None) -> None:
    data = jsonrpc.parse_error_data(raw, 0)
    assert data.get("at") == at
    if at is not None:
        assert data["detail"] == f"lone surrogate {raw[at : at + 6].decode()} (not a character)"
