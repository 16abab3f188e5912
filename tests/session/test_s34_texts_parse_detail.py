"""A parse error's ``detail`` reads on its own: the stdlib's reasons that end in " at" or " starting at"
(the position follows in its own message) lose that tail, the position being in ``at``. A ``NaN`` or
``Infinity`` literal, which the stdlib reads and the core refuses, says where and why too."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.session._support import Handlers, raw_session

from mcpframe import core, jsonrpc
from mcpframe.session.batch import error_answer

pytestmark = pytest.mark.anyio


def _data(frame: bytes) -> Any:
    """The ``data`` of the -32700 answer to ``frame``, sent alone on a line."""
    items = core.Decoder().feed(frame + b"\n")
    errors = [item for item in items if isinstance(item, core.FrameError)]
    assert [error.code for error in errors] == [jsonrpc.PARSE_ERROR]
    return core.decode(error_answer(errors[0]), max_frame=1 << 16)[0].error["data"]


CASES = [
    pytest.param(b'{"a":"p\x01"}', 7, "Invalid control character", id="control-char"),
    pytest.param(b'{"a":"abc', 5, "Unterminated string", id="unterminated"),
    pytest.param(b'{"a":NaN}', 5, "NaN is not valid JSON", id="nan"),
    pytest.param(b'{"a":[1, Infinity]}', 9, "Infinity is not valid JSON", id="infinity"),
    pytest.param(b'{"a":-Infinity}', 5, "-Infinity is not valid JSON", id="minus-infinity"),
    # a string holding the word (a key or a value) is not the literal
    pytest.param(b'{"NaN\\"NaN":"Infinity","b":NaN}', 27, "NaN is not valid JSON", id="in-strings"),
    # the first fault wins, whichever kind it is
    pytest.param(b'{"a":NaN x}', 5, "NaN is not valid JSON", id="nan-first"),
    pytest.param(b'{"a":1 x,"b":NaN}', 7, "Expecting ',' delimiter", id="grammar-first"),
]


@pytest.mark.parametrize(("frame", "at", "detail"), CASES)
def test_the_detail_reads_on_its_own_and_at_says_where(frame: bytes, at: int, detail: str) -> None:
    assert _data(frame) == {"offset": 0, "at": at, "detail": detail}


def test_no_detail_ends_in_a_dangling_at() -> None:
    frames = [b'"\x1f"', b'["x', b'{"a":"\\q"}', b'"\\u12"', b"[1,]", b"{,}", b"[1 2]", b"{} x"]
    for frame in frames:
        detail = _data(frame)["detail"]
        assert not detail.endswith((" at", " starting at")), (frame, detail)


async def test_a_request_with_nan_is_answered_with_its_id_and_where() -> None:
    line = b'{"jsonrpc":"2.0","id":"n","method":"echo","params":{"x":NaN}}\n'
    with anyio.fail_after(10):
        async with raw_session(Handlers()) as (_, peer):
            await peer.send(line + core.encode_request("after", "echo", {"n": 1}))
            error = await peer.receive()
            after = await peer.receive()
    assert error.id == "n"
    assert error.error["code"] == jsonrpc.PARSE_ERROR
    assert error.error["data"] == {"offset": 0, "at": line.index(b"NaN"), "detail": "NaN is not valid JSON"}
    assert (after.id, after.result) == ("after", {"n": 1})
