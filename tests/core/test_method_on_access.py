"""``Message.method`` is read from the frame when first asked for (native: the name is looked up in a
shared table then, not while decoding): the same value on every read and in ``repr``, kept after the
chunk's other messages are gone, for plain and escaped names, eager and lazy, on both backends."""

from __future__ import annotations

import gc
from types import ModuleType

import pytest

LINES = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}',
    b'{"jsonrpc":"2.0","method":"notifications\\/progress","params":{"progress":1}}',
    b'{"jsonrpc":"2.0","id":"q","method":"caf\xc3\xa9/\\u00e9","params":[]}',
    b'{"jsonrpc":"2.0","id":2,"result":{}}',
    b'{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}',
]
METHODS = ["tools/call", "notifications/progress", "caf\u00e9/\u00e9", None, None]


@pytest.mark.parametrize("lazy", [False, True])
def test_the_method_of_each_message_on_every_read(backend: ModuleType, lazy: bool) -> None:
    got = backend.Decoder(lazy=lazy).feed(b"\n".join(LINES) + b"\n")
    first = [m.method for m in got]
    assert first == METHODS
    # a second read gives the very object of the first
    assert all(m.method is seen for m, seen in zip(got, first, strict=True))
    assert all(f"method={method!r}" in repr(m) for m, method in zip(got, first, strict=True))


@pytest.mark.parametrize("lazy", [False, True])
def test_the_method_read_after_the_rest_of_the_chunk_is_gone(backend: ModuleType, lazy: bool) -> None:
    chunk = bytearray(b"\n".join(LINES) + b"\n")
    got = backend.Decoder(lazy=lazy).feed(chunk)
    kept = [got[1], got[2]]
    del got
    chunk[:] = b"x" * len(chunk)  # the caller's buffer changes: the messages read their own bytes
    gc.collect()
    assert [m.method for m in kept] == METHODS[1:3]


def test_messages_of_separate_decoders_and_streams_agree(backend: ModuleType) -> None:
    # the native table is shared by every decoder: names met first by one stream, read from another
    one = backend.Decoder(lazy=True).feed(LINES[0] + b"\n")
    other = backend.Decoder(lazy=False).feed(LINES[0] + b"\n" + LINES[1] + b"\n")
    (body,) = backend.decode(LINES[1], lazy=True)
    assert [one[0].method, other[0].method, other[1].method, body.method] == [
        "tools/call",
        "tools/call",
        "notifications/progress",
        "notifications/progress",
    ]
