"""Framing (contract: "Framing"): terminators, blank frames, the BOM, offsets, close(), max_frame."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from mcpframe.errors import DecoderClosedError

from ._support import feed_all, fixed_chunks, split_at, stream

BOM = b"\xef\xbb\xbf"
A = b'{"jsonrpc":"2.0","method":"a"}'
B = b'{"jsonrpc":"2.0","id":2,"method":"b"}'
INVALID_JSON = (-32700, "Parse error: invalid JSON")


def oversize(max_frame: int) -> tuple[int, str]:
    return (-32600, f"Invalid Request: frame exceeds the maximum size of {max_frame} bytes")


def view(item: object) -> tuple[object, ...]:
    """("msg", raw, offset) or ("err", code, message, offset, preview): what framing decides."""
    if hasattr(item, "kind"):
        return ("msg", item.raw, item.offset)  # type: ignore[attr-defined]
    return ("err", item.code, item.message, item.offset, item.preview)  # type: ignore[attr-defined]


def msg(raw: bytes, offset: int) -> tuple[object, ...]:
    return ("msg", raw, offset)


def err(code_msg: tuple[int, str], offset: int, preview: bytes) -> tuple[object, ...]:
    return ("err", *code_msg, offset, preview)


# (stream, expected views), all with the default max_frame; the stream is fed whole, then closed.
FRAMING = [
    pytest.param(A + b"\n" + B + b"\n", [msg(A, 0), msg(B, 31)], id="lf"),
    pytest.param(A + b"\r\n" + B + b"\r\n", [msg(A, 0), msg(B, 32)], id="crlf"),
    pytest.param(
        A + b"\n" + B + b"\r\n" + A + b"\n", [msg(A, 0), msg(B, 31), msg(A, 70)], id="mixed-lf-crlf"
    ),
    pytest.param(b"\r" + A + b"\n", [msg(b"\r" + A, 0)], id="leading-cr-is-content"),
    pytest.param(A + b"\r\r\n", [msg(A + b"\r", 0)], id="cr-before-crlf-is-content"),
    pytest.param(
        A + b"\r" + B + b"\n", [err(INVALID_JSON, 0, (A + b"\r" + B)[:64])], id="lone-cr-not-terminator"
    ),
    pytest.param(b"\n\n" + A + b"\n\n\n" + B + b"\n", [msg(A, 2), msg(B, 35)], id="blank-lines-skipped"),
    pytest.param(b" \t \r\n" + A + b"\n", [msg(A, 5)], id="whitespace-line-skipped"),
    pytest.param(b"\r\n\r\n" + A + b"\n", [msg(A, 4)], id="crlf-blank-lines"),
    pytest.param(b"\r\r\r\n" + A, [msg(A, 4)], id="cr-only-line-skipped"),
    pytest.param(b" \t\r \n  ", [], id="only-whitespace"),
    pytest.param(b"", [], id="empty-stream"),
    pytest.param(b"\x0c\n", [err(INVALID_JSON, 0, b"\x0c")], id="form-feed-is-not-blank"),
    pytest.param(b"\xc2\xa0\n", [err(INVALID_JSON, 0, b"\xc2\xa0")], id="nbsp-is-not-blank"),
    pytest.param(BOM + A + b"\n", [msg(A, 3)], id="bom-at-start-dropped"),
    pytest.param(BOM + b"\n" + A + b"\n", [msg(A, 4)], id="bom-then-blank-line"),
    pytest.param(BOM, [], id="bom-only"),
    pytest.param(BOM + b"  \r\n", [], id="bom-then-whitespace"),
    pytest.param(BOM + BOM + A + b"\n", [err(INVALID_JSON, 3, (BOM + A)[:64])], id="second-bom-is-content"),
    pytest.param(A + b"\n" + BOM + A + b"\n", [msg(A, 0), msg(A, 34)], id="bom-before-a-later-frame-dropped"),
    pytest.param(
        A + b"\n" + BOM + BOM + A + b"\n",
        [msg(A, 0), err(INVALID_JSON, 34, (BOM + A)[:64])],
        id="second-bom-before-a-later-frame-is-content",
    ),
    pytest.param(A + b"\n" + BOM + b" \r\n", [msg(A, 0)], id="bom-then-whitespace-later"),
    pytest.param(A + BOM + b"\n", [err(INVALID_JSON, 0, A + BOM)], id="bom-at-frame-end"),
    pytest.param(b"\n" + BOM + A + b"\n", [msg(A, 4)], id="bom-after-a-blank-line-dropped"),
    pytest.param(
        b" " + BOM + A + b"\n", [err(INVALID_JSON, 0, (b" " + BOM + A)[:64])], id="bom-after-a-space"
    ),
    pytest.param(A, [msg(A, 0)], id="unterminated-final-frame"),
    pytest.param(A + b"\n" + B, [msg(A, 0), msg(B, 31)], id="unterminated-after-frame"),
    pytest.param(BOM + A, [msg(A, 3)], id="unterminated-after-bom"),
    pytest.param(A + b"\n{", [msg(A, 0), err(INVALID_JSON, 31, b"{")], id="unterminated-invalid-reported"),
    pytest.param(A + b"\n   ", [msg(A, 0)], id="unterminated-blank-dropped"),
]


@pytest.mark.parametrize(("data", "expected"), FRAMING)
def test_framing_table(backend: ModuleType, data: bytes, expected: list[tuple[object, ...]]) -> None:
    assert [view(item) for item in stream(backend, data)] == expected


@pytest.mark.parametrize(("data", "expected"), FRAMING)
def test_framing_byte_by_byte(backend: ModuleType, data: bytes, expected: list[tuple[object, ...]]) -> None:
    assert [view(item) for item in feed_all(backend, fixed_chunks(data, 1))] == expected


def test_feed_returns_what_completes_in_that_call(backend: ModuleType) -> None:
    decoder = backend.Decoder()
    assert decoder.feed(A[:10]) == []
    assert decoder.buffered == 10
    first = decoder.feed(A[10:] + b"\n" + B[:5])
    assert [view(item) for item in first] == [msg(A, 0)]
    assert decoder.buffered == 5
    second = decoder.feed(B[5:] + b"\n" + A + b"\n")
    assert [view(item) for item in second] == [msg(B, 31), msg(A, 69)]
    assert decoder.buffered == 0
    assert decoder.close() == []


def test_offset_counts_every_byte_fed(backend: ModuleType) -> None:
    decoder = backend.Decoder()
    assert decoder.offset == 0
    fed = 0
    for chunk in (BOM[:2], BOM[2:] + A[:4], A[4:] + b"\r\n", b"\n", B):
        decoder.feed(chunk)
        fed += len(chunk)
        assert decoder.offset == fed
    assert [view(item) for item in decoder.close()] == [msg(B, 3 + 31 + 1 + 1)]


@pytest.mark.parametrize(
    "data", [b"", A, A + b"\n", b"{"], ids=["empty", "pending-frame", "complete", "broken"]
)
def test_feed_and_close_after_close_raise(backend: ModuleType, data: bytes) -> None:
    decoder = backend.Decoder()
    decoder.feed(data)
    assert decoder.closed is False
    decoder.close()
    assert decoder.closed is True
    with pytest.raises(DecoderClosedError, match=r"^decoder is closed$"):
        decoder.feed(b"\n")
    with pytest.raises(DecoderClosedError, match=r"^decoder is closed$"):
        decoder.feed(b"")
    with pytest.raises(DecoderClosedError, match=r"^decoder is closed$"):
        decoder.close()


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview], ids=["bytes", "bytearray", "memoryview"])
def test_feed_accepts_buffers(backend: ModuleType, kind: type) -> None:
    decoder = backend.Decoder()
    items = decoder.feed(kind(A + b"\n" + B + b"\n"))
    assert [view(item) for item in items] == [msg(A, 0), msg(B, 31)]
    assert all(type(item.raw) is bytes for item in items)


def test_feed_copies_its_input(backend: ModuleType) -> None:
    buf = bytearray(A[:20])
    decoder = backend.Decoder()
    decoder.feed(buf)
    buf[:] = b"x" * 20  # the caller reuses its buffer
    assert [view(item) for item in decoder.feed(A[20:] + b"\n")] == [msg(A, 0)]


@pytest.mark.parametrize("bad", ["text", 1, None, [b"x"]], ids=["str", "int", "none", "list"])
def test_feed_rejects_non_buffers(backend: ModuleType, bad: object) -> None:
    with pytest.raises(TypeError):
        backend.Decoder().feed(bad)


def test_decoder_options(backend: ModuleType) -> None:
    decoder = backend.Decoder()
    assert (decoder.max_frame, decoder.lazy, decoder.batches) == (backend.DEFAULT_MAX_FRAME, False, True)
    decoder = backend.Decoder(max_frame=10, lazy=True, batches=False)
    assert (decoder.max_frame, decoder.lazy, decoder.batches) == (10, True, False)
    assert (decoder.offset, decoder.buffered, decoder.closed) == (0, 0, False)
    with pytest.raises(AttributeError):
        decoder.max_frame = 5


def test_constants(backend: ModuleType) -> None:
    assert (backend.MAX_DEPTH, backend.DEFAULT_MAX_FRAME, backend.PREVIEW_BYTES) == (
        128,
        64 * 1024 * 1024,
        64,
    )


@pytest.mark.parametrize("max_frame", [0, -1], ids=["zero", "negative"])
def test_max_frame_below_one_is_refused(backend: ModuleType, max_frame: int) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message is not part of the contract
        backend.Decoder(max_frame=max_frame)
    with pytest.raises(ValueError):  # noqa: PT011
        backend.decode(A, max_frame=max_frame)


def test_options_are_keyword_only(backend: ModuleType) -> None:
    with pytest.raises(TypeError):
        backend.Decoder(100)


# ---- max_frame ----------------------------------------------------------------------------------

MAX = 100


def frame_of(length: int, *, fill: bytes = b" ") -> bytes:
    """A valid notification of exactly ``length`` bytes (padded with ``fill`` inside the object)."""
    pad = length - len(A)
    assert pad >= 0
    return A[:-1] + fill * pad + b"}"


# (stream, expected views) with max_frame=MAX.
MAX_FRAME = [
    pytest.param(frame_of(MAX) + b"\n", [msg(frame_of(MAX), 0)], id="exactly-max"),
    pytest.param(frame_of(MAX) + b"\r\n", [msg(frame_of(MAX), 0)], id="exactly-max-crlf"),
    pytest.param(frame_of(MAX), [msg(frame_of(MAX), 0)], id="exactly-max-at-close"),
    pytest.param(
        frame_of(MAX + 1) + b"\n", [err(oversize(MAX), 0, frame_of(MAX + 1)[:64])], id="max-plus-one"
    ),
    pytest.param(
        frame_of(MAX) + b"\r\r\n", [err(oversize(MAX), 0, frame_of(MAX)[:64])], id="max-plus-content-cr"
    ),
    pytest.param(
        frame_of(MAX + 1), [err(oversize(MAX), 0, frame_of(MAX + 1)[:64])], id="max-plus-one-at-close"
    ),
    pytest.param(b" " * (MAX + 1) + b"\n", [err(oversize(MAX), 0, b" " * 64)], id="oversize-blank-frame"),
    pytest.param(b" " * MAX + b"\n" + A + b"\n", [msg(A, MAX + 1)], id="max-blank-frame-skipped"),
    pytest.param(
        A + b"\n" + b"x" * 5000 + b"\n" + B + b"\r\n" + A,
        [msg(A, 0), err(oversize(MAX), 31, b"x" * 64), msg(B, 5032), msg(A, 5032 + 39)],
        id="frames-after-oversize-intact",
    ),
    pytest.param(
        b"y" * 300 + b"\r\n" + b"z" * 101 + b"\n" + A,
        [err(oversize(MAX), 0, b"y" * 64), err(oversize(MAX), 302, b"z" * 64), msg(A, 404)],
        id="consecutive-oversize",
    ),
    pytest.param(
        BOM + frame_of(MAX) + b"\n" + A, [msg(frame_of(MAX), 3), msg(A, MAX + 4)], id="bom-not-counted"
    ),
    pytest.param(
        BOM + b"q" * 101 + b"\n" + A, [err(oversize(MAX), 3, b"q" * 64), msg(A, 105)], id="oversize-after-bom"
    ),
    pytest.param(b"\xff" * 101 + b"\n", [err(oversize(MAX), 0, b"\xff" * 64)], id="oversize-wins-over-utf8"),
]


@pytest.mark.parametrize(("data", "expected"), MAX_FRAME)
def test_max_frame_table(backend: ModuleType, data: bytes, expected: list[tuple[object, ...]]) -> None:
    assert [view(item) for item in stream(backend, data, max_frame=MAX)] == expected


@pytest.mark.parametrize(("data", "expected"), MAX_FRAME)
def test_max_frame_every_split_point(
    backend: ModuleType, data: bytes, expected: list[tuple[object, ...]]
) -> None:
    for point in range(len(data) + 1):
        decoder = backend.Decoder(max_frame=MAX)
        out = []
        for chunk in split_at(data, [point]):
            out.extend(decoder.feed(chunk))
            assert decoder.buffered <= MAX + 1
        out.extend(decoder.close())
        assert [view(item) for item in out] == expected, f"split at {point}"


@pytest.mark.parametrize(("data", "expected"), MAX_FRAME)
def test_max_frame_byte_by_byte_bounded(
    backend: ModuleType, data: bytes, expected: list[tuple[object, ...]]
) -> None:
    decoder = backend.Decoder(max_frame=MAX)
    out = []
    for chunk in fixed_chunks(data, 1):
        out.extend(decoder.feed(chunk))
        assert decoder.buffered <= MAX + 1
    out.extend(decoder.close())
    assert [view(item) for item in out] == expected


def test_oversize_reported_as_soon_as_seen(backend: ModuleType) -> None:
    decoder = backend.Decoder(max_frame=MAX)
    assert decoder.feed(b"x" * MAX) == []
    assert decoder.buffered == MAX
    (error,) = decoder.feed(b"x")
    assert view(error) == err(oversize(MAX), 0, b"x" * 64)
    assert (error.id, error.batch, error.notification) == (None, None, False)
    assert decoder.feed(b"x" * 100_000) == []
    assert decoder.buffered <= MAX + 1
    assert decoder.close() == []  # not reported twice


def test_oversize_in_one_big_chunk_reported_once(backend: ModuleType) -> None:
    decoder = backend.Decoder(max_frame=MAX)
    (error,) = decoder.feed(b"x" * 10_000)
    assert view(error) == err(oversize(MAX), 0, b"x" * 64)
    assert decoder.buffered <= MAX + 1
    assert [view(item) for item in decoder.feed(b"x\n" + A + b"\n")] == [msg(A, 10_002)]
    assert decoder.close() == []


def test_cr_at_max_plus_one_waits_for_next_byte(backend: ModuleType) -> None:
    decoder = backend.Decoder(max_frame=MAX)
    assert decoder.feed(frame_of(MAX) + b"\r") == []  # the CR may be half of a CRLF
    assert [view(item) for item in decoder.feed(b"\n")] == [msg(frame_of(MAX), 0)]


def test_cr_ending_the_stream_is_a_terminator(backend: ModuleType) -> None:
    # close() decodes an unterminated final frame "as if terminated": a trailing CR then belongs to the
    # CRLF terminator, as it would if the LF arrived.
    assert [view(item) for item in stream(backend, A + b"\r")] == [msg(A, 0)]
    (error,) = stream(backend, b"x" * MAX + b"\r", max_frame=MAX)
    assert view(error) == err(INVALID_JSON, 0, b"x" * 64)


def test_small_max_frame_preview_is_what_was_kept(backend: ModuleType) -> None:
    # With max_frame + 1 < PREVIEW_BYTES the error is due before PREVIEW_BYTES bytes exist.
    (error,) = stream(backend, b"abcdefghij" * 10 + b"\n", max_frame=5)
    assert view(error) == err(oversize(5), 0, b"abcdef")


def test_max_frame_one(backend: ModuleType) -> None:
    out = stream(backend, b"1\n22\n \n  \n{}", max_frame=1)
    assert [(item.code, item.message, item.offset) for item in out] == [
        (-32600, "Invalid Request: expected a JSON object", 0),
        (*oversize(1), 2),
        (*oversize(1), 7),
        (*oversize(1), 10),
    ]


# ---- decode(): one body, one frame ------------------------------------------------------------

PRETTY = b'{\n  "jsonrpc": "2.0",\r\n  "id": 1,\n  "method": "x",\n  "params": {"a": [1,\n 2]}\n}'


def test_decode_pretty_printed_body(backend: ModuleType) -> None:
    (message,) = backend.decode(PRETTY)
    assert (message.kind, message.id, message.method, message.params) == ("request", 1, "x", {"a": [1, 2]})
    assert (message.raw, message.offset, message.batch) == (PRETTY, 0, None)


@pytest.mark.parametrize("body", [b"", b" ", b"\n", b"\r\n\t \n", BOM, BOM + b"\n "], ids=repr)
def test_decode_blank_body_is_a_parse_error(backend: ModuleType, body: bytes) -> None:
    # A POST body is one message: empty is not "no message" (a blank line of a stream is skipped).
    frame = body.removeprefix(BOM)
    offset = len(body) - len(frame)
    (error,) = backend.decode(body)
    assert (error.code, error.message, error.id) == (-32700, "Parse error: empty body", None)
    assert (error.offset, error.preview, error.raw, error.batch, error.notification) == (
        offset,
        frame,
        frame,
        None,
        False,
    )
    assert json.loads(error.to_response()) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: empty body"},
    }


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_blank_body_over_max_frame_is_oversize(backend: ModuleType, lazy: bool) -> None:
    (error,) = backend.decode(b" " * 11, max_frame=10, lazy=lazy)
    assert ((error.code, error.message), error.raw) == (oversize(10), None)


def test_decode_drops_leading_bom(backend: ModuleType) -> None:
    (message,) = backend.decode(BOM + PRETTY)
    assert (message.kind, message.raw) == ("request", PRETTY)


def test_decode_offsets_count_the_bom(backend: ModuleType) -> None:
    # As with Decoder: the BOM is dropped but still counted, so the frame starts at offset 3.
    (message,) = backend.decode(BOM + B)
    assert (message.raw, message.offset) == (B, 3)


def test_decode_body_keeps_its_newlines(backend: ModuleType) -> None:
    # The whole body is the frame: a trailing newline is content (JSON whitespace), not a terminator.
    body = PRETTY + b"\r\n"
    (message,) = backend.decode(body)
    assert (message.kind, message.raw, message.offset) == ("request", body, 0)


def test_decode_two_lines_is_one_invalid_frame(backend: ModuleType) -> None:
    (error,) = backend.decode(A + b"\n" + B)
    assert (error.code, error.message, error.offset, error.preview) == (
        *INVALID_JSON,
        0,
        (A + b"\n" + B)[:64],
    )


def test_decode_max_frame_is_the_whole_body(backend: ModuleType) -> None:
    assert [m.kind for m in backend.decode(PRETTY, max_frame=len(PRETTY))] == ["request"]
    (error,) = backend.decode(PRETTY, max_frame=len(PRETTY) - 1)
    assert (error.code, error.message) == oversize(len(PRETTY) - 1)
    assert (error.offset, error.preview, error.id) == (0, PRETTY[:64], None)


def test_decode_options(backend: ModuleType) -> None:
    (message,) = backend.decode(B, lazy=True)
    assert message.lazy is True
    (error,) = backend.decode(b"[" + B + b"]", batches=False)
    assert error.message == "Invalid Request: batches are not supported"


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview], ids=["bytes", "bytearray", "memoryview"])
def test_decode_accepts_buffers(backend: ModuleType, kind: type) -> None:
    (message,) = backend.decode(kind(B))
    assert (message.raw, message.id) == (B, 2)
