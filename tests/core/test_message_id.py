"""``Message.id`` on both backends: the native ``Message`` builds its id object on first access (most
messages of a lazy stream are forwarded or dropped without their id being read), so these check that
the id is the same value and type whatever the frame's place (a whole chunk, a frame rebuilt from
several chunks, a batch element), that it is one object however often it is read, and that it stays
readable once the input chunk and the decoder are gone."""

from __future__ import annotations

import gc
from types import ModuleType

import pytest

IDS: list[tuple[bytes, object]] = [
    (b"7", 7),
    (b"-3", -3),
    (b"0", 0),
    (b"1234567890123", 1234567890123),
    (b"9223372036854775807", 2**63 - 1),
    (b"9223372036854775808", 2**63),
    (b"-9223372036854775809", -(2**63) - 1),
    (b"123456789012345678901234567890123456789012", 123456789012345678901234567890123456789012),
    (b'"req-1"', "req-1"),
    (b'""', ""),
    (b'"M\xc3\xbcnchen \xf0\x9f\x9a\x80"', "M\u00fcnchen \U0001f680"),
    (b'"a\\"b\\u00fc\\n"', 'a"b\u00fc\n'),
]

SHAPES = ["request", "result", "error"]


def frame(shape: str, raw_id: bytes) -> bytes:
    if shape == "request":
        return b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"a":1}}' % raw_id
    if shape == "result":
        return b'{"jsonrpc":"2.0","result":{"ok":true},"id":%s}' % raw_id
    return b'{"id":%s,"jsonrpc":"2.0","error":{"code":-32601,"message":"no"}}' % raw_id


def check(message: object, raw_id: bytes, expected: object) -> None:
    got = message.id  # type: ignore[attr-defined]
    assert type(got) is type(expected)
    assert got == expected
    assert message.id is got  # type: ignore[attr-defined]
    assert message.raw_id == raw_id  # type: ignore[attr-defined]
    assert f"id={expected!r}," in repr(message)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("raw_id", "expected"), IDS)
def test_id_of_whole_frame(
    backend: ModuleType, lazy: bool, shape: str, raw_id: bytes, expected: object
) -> None:
    data = frame(shape, raw_id) + b"\n"
    (message,) = backend.Decoder(lazy=lazy).feed(data)
    check(message, raw_id, expected)
    (body,) = backend.decode(frame(shape, raw_id), lazy=lazy)
    check(body, raw_id, expected)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize(("raw_id", "expected"), IDS)
def test_id_of_frame_split_over_chunks(
    backend: ModuleType, lazy: bool, raw_id: bytes, expected: object
) -> None:
    data = frame("request", raw_id) + b"\n"
    decoder = backend.Decoder(lazy=lazy)
    cut = data.index(raw_id) + 1  # inside the id
    assert decoder.feed(data[:cut]) == []
    (message,) = decoder.feed(data[cut:])
    check(message, raw_id, expected)


@pytest.mark.parametrize("lazy", [False, True])
def test_ids_of_batch_elements(backend: ModuleType, lazy: bool) -> None:
    elements = [frame(SHAPES[k % 3], raw_id) for k, (raw_id, _) in enumerate(IDS)]
    data = b"[" + b" , ".join(elements) + b"]\n"
    messages = backend.Decoder(lazy=lazy).feed(data)
    assert [m.batch for m in messages] == list(range(len(IDS)))
    for message, (raw_id, expected) in zip(messages, IDS, strict=True):
        check(message, raw_id, expected)


@pytest.mark.parametrize("lazy", [False, True])
def test_absent_ids(backend: ModuleType, lazy: bool) -> None:
    data = (
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'
    )
    notification, error = backend.Decoder(lazy=lazy).feed(data)
    assert (notification.kind, error.kind) == ("notification", "error")
    for message in (notification, error):
        assert message.id is None
        assert "id=None," in repr(message)
        with pytest.raises(ValueError, match="message has no id"):
            message.with_id(1)
    assert notification.raw_id is None
    assert error.raw_id == b"null"


@pytest.mark.parametrize("lazy", [False, True])
def test_id_read_after_input_and_decoder_are_gone(backend: ModuleType, lazy: bool) -> None:
    """The first read of an id may come long after decoding: the message keeps what it needs."""
    data = b"".join(frame("result", raw_id) + b"\n" for raw_id, _ in IDS)
    decoder = backend.Decoder(lazy=lazy)
    messages = decoder.feed(bytearray(data)) + decoder.feed(data[:10])
    del decoder, data
    gc.collect()
    assert [m.id for m in messages] == [expected for _, expected in IDS]
    assert [m.with_id("x") for m in messages] == [frame("result", b'"x"')] * len(IDS)


def test_equal_messages_whether_or_not_id_was_read(backend: ModuleType) -> None:
    data = frame("request", b'"req-9"') + b"\n"
    first, second = (backend.Decoder(lazy=True).feed(data)[0] for _ in range(2))
    assert first.id == "req-9"
    assert first == second
    assert second.id == "req-9"
