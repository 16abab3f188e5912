"""A parse error says where (its ``id`` is null, so the peer cannot tell which line was bad otherwise):
``error.data`` holds the frame's first byte in the stream (``offset``) and, when the stdlib's JSON reader
refuses the frame too, the byte of the frame where (``at``) and why (``detail``). ``message`` is unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.session._support import EAGER_START, Handlers, raw_session

from mcpframe import core, jsonrpc
from mcpframe.session.batch import error_answer

pytestmark = pytest.mark.anyio

GOOD_1 = b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"n":1}}\n'
BAD = b'{"jsonrpc":"2.0","id":2,"method":"echo" x}\n'  # no comma (worded alike by 3.11 to 3.13's json)
GOOD_3 = b'{"jsonrpc":"2.0","id":3,"method":"echo","params":{"n":3}}\n'


async def test_a_bad_line_between_good_ones_gets_its_place_and_the_good_ones_are_answered() -> None:
    async with raw_session(Handlers()) as (_, peer):
        await peer.send(GOOD_1 + BAD + GOOD_3)
        items = [await peer.receive() for _ in range(3)]
    errors = [item for item in items if item.kind == "error"]
    assert len(errors) == 1
    at = BAD.index(b" x}") + 1
    assert errors[0].raw == (  # its id still reads: the request waiting for it ends (jsonrpc.recover_id)
        b'{"jsonrpc":"2.0","id":2,"error":{"code":-32700,"message":"Parse error: invalid JSON",'
        b'"data":{"offset":%d,"at":%d,"detail":"Expecting \',\' delimiter"}}}' % (len(GOOD_1), at)
    )
    answered = [(item.id, item.result) for item in items if item.kind == "result"]
    assert answered == [(1, {"n": 1}), (3, {"n": 3})]  # the good ones, in order
    if EAGER_START:  # handlers start in arrival order: the error comes between their answers
        assert [item.id for item in items] == [1, 2, 3]


def _first_error(data: bytes, code: int) -> Any:
    """The first frame error with ``code`` that the stream ``data`` yields (``{}`` before it is a -32600)."""
    errors = [
        item for item in core.Decoder().feed(data) if isinstance(item, core.FrameError) and item.code == code
    ]
    assert errors
    return errors[0]


WHERE = [
    # a two-byte character before the error: `at` counts bytes, not characters
    pytest.param(
        b'{"a":"\xc3\xa9" x}\n', {"offset": 0, "at": 10, "detail": "Expecting ',' delimiter"}, id="utf8"
    ),
    pytest.param(b"{}\n[1,\n", {"offset": 3, "at": 3, "detail": "Expecting value"}, id="cut-short"),
    pytest.param(
        b'{}\n{"a":"\xff"}\n',
        {"offset": 3, "at": 6, "detail": "invalid UTF-8: invalid start byte"},
        id="invalid-utf8",
    ),
    # the stdlib reads a lone surrogate escape and NaN, the core does not: each is found by its own scan
    pytest.param(
        b'{}\n{"a":"\\ud800"}\n',
        {"offset": 3, "at": 6, "detail": "lone surrogate \\ud800 (not a character)"},
        id="lone-surrogate",
    ),
    pytest.param(b'{"a":NaN}\n', {"offset": 0, "at": 5, "detail": "NaN is not valid JSON"}, id="nan"),
]


@pytest.mark.parametrize(("data", "where"), WHERE)
def test_the_data_of_a_parse_error(data: bytes, where: dict[str, Any]) -> None:
    error = _first_error(data, jsonrpc.PARSE_ERROR)
    answer = core.decode(error_answer(error), max_frame=1 << 16)[0]
    assert answer.error == {"code": error.code, "message": error.message, "data": where}
    assert answer.id is None


def test_other_frame_errors_are_answered_as_before() -> None:
    error = _first_error(b'{"jsonrpc":"1.0","id":5,"method":"echo"}\n', jsonrpc.INVALID_REQUEST)
    data = {"offset": error.offset}  # an invalid request's answer says where its frame starts too
    assert error_answer(error) == core.encode_error(error.id, error.code, error.message, data)
