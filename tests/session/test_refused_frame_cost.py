"""What a big refused frame costs after the core refused it: the stdlib's JSON reader, which says where
the frame fails (``jsonrpc.parse_error_data``) and whether it is a response (``jsonrpc.response_shaped``),
reads its first 64 KiB only, not the whole frame (seconds of CPU for 60 MB, on the event loop). An error
within that head is reported as before; one past it, or one the cut may have caused, gets the offset alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpframe import core, jsonrpc
from mcpframe.session.batch import error_answer

HEAD = 1 << 16
PAD = b"[" + b",".join(b'{"k":%d}' % i for i in range(200_000)) + b"]"  # about 2 MB of valid JSON


class _Reader:
    """Stands in for the stdlib's ``json`` module in ``mcpframe.jsonrpc``: records what it is given."""

    JSONDecodeError = json.JSONDecodeError

    def __init__(self) -> None:
        self.lengths: list[int] = []

    def loads(self, text: str | bytes, **options: Any) -> Any:
        self.lengths.append(len(text))
        return json.loads(text, **options)


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> _Reader:
    recorder = _Reader()
    monkeypatch.setattr(jsonrpc, "json", recorder)
    return recorder


def _refused(frame: bytes) -> Any:
    items = core.Decoder(max_frame=1 << 24).feed(b"{}\n" + frame + b"\n")
    errors = [item for item in items if isinstance(item, core.FrameError) and item.offset == 3]
    assert len(errors) == 1
    return errors[0]


def _answer(error: Any) -> Any:
    return core.decode(error_answer(error), max_frame=HEAD)[0]


CASES = [
    # refused for NaN, which the stdlib reads: the offset alone, the id recovered
    pytest.param(
        b'{"jsonrpc":"2.0","id":4,"method":"x","params":{"p":%s,"n":NaN}}', 4, {}, id="nan-past-head"
    ),
    # a grammar error within the head, the frame going on for megabytes: reported where it is
    pytest.param(
        b'{"jsonrpc":"2.0","id":5,"method":"x" ?, "params":{"p":%s}}',
        5,
        {"at": 37, "detail": "Expecting ',' delimiter"},
        id="error-in-head",
    ),
    # a grammar error past the head: the offset alone (not where the cut is)
    pytest.param(b'{"jsonrpc":"2.0","id":6,"method":"x","params":{"p":%s ?}}', 6, {}, id="error-past-head"),
    # a string across the cut: the stdlib would blame its start, which is fine: the offset alone
    pytest.param(
        b'{"jsonrpc":"2.0","id":7,"method":"x","params":{"s":"%s", "n":NaN}}', 7, {}, id="string-cut"
    ),
]


@pytest.mark.parametrize(("template", "rid", "where"), CASES)
def test_a_big_refused_frame_is_read_for_its_head_only(
    template: bytes, rid: int, where: dict[str, Any], reader: _Reader
) -> None:
    pad = b"x" * len(PAD) if b'"s":"%s"' in template else PAD
    error = _refused(template % pad)
    assert error.code == jsonrpc.PARSE_ERROR
    assert not jsonrpc.response_shaped(error.raw)
    answer = _answer(error)
    assert answer.id == rid
    assert answer.error == {"code": error.code, "message": error.message, "data": {"offset": 3, **where}}
    assert reader.lengths  # the stdlib read it, but never more than the head
    assert max(reader.lengths) <= HEAD


def test_a_big_refused_response_is_still_told_from_a_request(reader: _Reader) -> None:
    response = _refused(b'{"jsonrpc":"2.0","id":8,"result":{"p":%s,"n":NaN}}' % PAD)
    request = _refused(b'{"jsonrpc":"2.0","id":8,"method":"x","result":{"p":%s,"n":NaN}}' % PAD)
    assert jsonrpc.response_shaped(response.raw)
    assert not jsonrpc.response_shaped(request.raw)
    assert reader.lengths == []  # the keys of its head tell: the stdlib did not read it at all


def test_an_integer_id_cut_by_the_head_is_not_recovered() -> None:
    # the id's digits run to the end of the first 64 KiB: they may go on past it, so it is not guessed
    start = b'{"jsonrpc":"2.0","method":"x","params":"'
    pad = b"x" * (HEAD - len(start) - len(b'","id":12'))
    cut = start + pad + b'","id":12' + b'345,"n":NaN}'
    assert cut[:HEAD].endswith(b'"id":12')
    assert jsonrpc.recover_id(cut) is None
    whole = start + pad[:-10] + b'","id":12345,"n":NaN}'  # the same id, ending within the head
    assert jsonrpc.recover_id(whole) == 12345
