"""``FrameError.raw`` (contract: "FrameError"): the exact bytes of the rejected frame or batch element,
as ``Message.raw`` would be (terminator excluded, BOM removed); the whole array for a batch-level error;
``None`` for an oversize frame, whose bytes were never held."""

from __future__ import annotations

from types import ModuleType

import pytest

from ._support import feed_all, fixed_chunks

BOM = b"\xef\xbb\xbf"
OK = b'{"jsonrpc":"2.0","method":"ok"}'
ELEMENT = b'{"jsonrpc":"2.0","id":1}'

# (frame, its errors' raw values); each frame is fed as one line of a stream
KINDS = [
    pytest.param(b'{"jsonrpc":"2.0","method":"m",}', [b'{"jsonrpc":"2.0","method":"m",}'], id="invalid-json"),
    pytest.param(b'{"a":"\xff"}', [b'{"a":"\xff"}'], id="invalid-utf8"),
    pytest.param(b"[" * 129 + b"]" * 129, [b"[" * 129 + b"]" * 129], id="too-deep"),
    pytest.param(b' "text" ', [b' "text" '], id="not-an-object-with-spaces"),
    pytest.param(
        b'\t{"jsonrpc":"1.0","id":1,"method":"m"} ',
        [b'\t{"jsonrpc":"1.0","id":1,"method":"m"} '],
        id="envelope",
    ),
    pytest.param(b" [ ] ", [b" [ ] "], id="empty-batch"),
    pytest.param(b"[ 1 ,\t" + ELEMENT + b" , " + OK + b" ]", [b"1", ELEMENT], id="batch-elements"),
    pytest.param(b"[[" + ELEMENT + b"]]", [b"[" + ELEMENT + b"]"], id="nested-array-element"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":2,"result":[' + b"7" * 4301 + b"]}",
        [b'{"jsonrpc":"2.0","id":2,"result":[' + b"7" * 4301 + b"]}"],
        id="digit-limit",
    ),
]


@pytest.mark.parametrize(("frame", "raws"), KINDS)
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_raw_of_every_kind(backend: ModuleType, lazy: bool, frame: bytes, raws: list[bytes]) -> None:
    pad = b'{"jsonrpc":"2.0","method":"pad","params":["' + b"p" * 70_000 + b'"]}\n'
    for head, size in ((b"", None), (b"", 7), (pad, None)):
        # whole, in small chunks (reassembled frames), and in a large chunk
        data = BOM + head + OK + b"\n" + frame + b"\r\n" + OK
        items = feed_all(backend, fixed_chunks(data, size) if size else [data], lazy=lazy)
        errors = [i for i in items if not hasattr(i, "kind")]
        assert [e.raw for e in errors] == raws
        assert [e.preview for e in errors] == [r[:64] for r in raws]
        start = len(BOM + head + OK) + 1
        assert [e.offset for e in errors] == [start + frame.index(r) for r in raws]
    # the one-shot form: the body is the frame
    errors = [i for i in backend.decode(frame, lazy=lazy) if not hasattr(i, "kind")]
    assert [e.raw for e in errors] == raws


def test_raw_of_a_body_keeps_its_newlines_and_drops_its_bom(backend: ModuleType) -> None:
    body = b'{\n "jsonrpc": "2.0",\n "method": 5\n}\r\n'
    (error,) = backend.decode(BOM + body)
    assert (error.raw, error.offset) == (body, 3)
    (refused,) = backend.decode(b"[" + OK + b"]\n", batches=False)
    assert refused.raw == b"[" + OK + b"]\n"


def test_raw_of_an_oversize_frame_is_none(backend: ModuleType) -> None:
    frame = b'{"jsonrpc":"2.0","method":"' + b"x" * 100 + b'"}'
    for items in (
        feed_all(backend, [frame + b"\n" + OK + b"\n"], max_frame=50),
        feed_all(backend, fixed_chunks(frame + b"\n" + OK + b"\n", 10), max_frame=50),
        feed_all(backend, [frame], max_frame=50),  # reported by close()
        backend.decode(frame, max_frame=50),
    ):
        error = items[0]
        assert (error.code, error.raw, error.preview) == (-32600, None, frame[:51][:64])


def test_constructor_and_equality(backend: ModuleType) -> None:
    plain = backend.FrameError(-32700, "Parse error: invalid JSON")
    assert plain.raw is None
    error = backend.FrameError(-32700, "Parse error: invalid JSON", raw=bytearray(b"{x"), preview=b"{x")
    assert (error.raw, type(error.raw)) == (b"{x", bytes)
    assert error == backend.FrameError(
        -32700, "Parse error: invalid JSON", raw=memoryview(b"{x"), preview=b"{x"
    )
    assert error != backend.FrameError(-32700, "Parse error: invalid JSON", raw=b"{y", preview=b"{x")
    assert error != backend.FrameError(-32700, "Parse error: invalid JSON", preview=b"{x")
    assert repr(error) == "FrameError(code=-32700, message='Parse error: invalid JSON', offset=0)"
    for wrong in ("text", 5, [1]):
        with pytest.raises(TypeError):
            backend.FrameError(-32700, "m", raw=wrong)
    with pytest.raises(AttributeError):
        error.raw = b"other"
