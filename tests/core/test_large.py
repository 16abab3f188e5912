"""Large frames fed in 64 KiB chunks, as a pipe delivers them (marked ``slow``; part of the full suite)."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from ._support import fixed_chunks

pytestmark = pytest.mark.slow

MIB = 1024 * 1024
CHUNK = 64 * 1024


def big_request(size: int) -> bytes:
    """A request frame of exactly ``size`` bytes whose params hold one long string with escapes."""
    head = b'{"jsonrpc":"2.0","id":1180591620717411303424,"method":"tools/call","params":{"text":"'
    tail = b'","n":[1,2.5,"\xc3\xa9"]}}'
    unit = b"abc\\n\xe2\x82\xac\\u00e9xyz"  # escapes and a 3-byte character
    filler = size - len(head) - len(tail)
    body = unit * (filler // len(unit)) + b"y" * (filler % len(unit))
    return head + body + tail


@pytest.mark.parametrize("size", [1 * MIB, 8 * MIB, 32 * MIB], ids=["1MiB", "8MiB", "32MiB"])
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_large_frame_in_64k_chunks(backend: ModuleType, size: int, lazy: bool) -> None:
    frame = big_request(size)
    assert len(frame) == size
    decoder = backend.Decoder(lazy=lazy)
    out = []
    for chunk in fixed_chunks(frame + b"\r\n" + frame[:100] + b"\n", CHUNK):
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    message, error = out
    assert (message.kind, message.id, message.method, message.offset) == ("request", 2**70, "tools/call", 0)
    assert message.raw == frame
    assert message.raw_params == frame[frame.index(b'{"text"') : -1]
    expected = json.loads(frame)["params"]
    params = message.params
    assert params["n"] == [1, 2.5, "\u00e9"]
    assert params["text"] == expected["text"]
    assert (error.code, error.offset, error.preview) == (-32700, size + 2, frame[:64])


def test_oversize_32mib_frame_is_discarded_in_chunks(backend: ModuleType) -> None:
    frame = big_request(32 * MIB)
    after = b'{"jsonrpc":"2.0","method":"after"}'
    decoder = backend.Decoder(max_frame=MIB)
    out = []
    for chunk in fixed_chunks(frame + b"\n" + after + b"\n", CHUNK):
        out.extend(decoder.feed(chunk))
        assert decoder.buffered <= MIB + 1
    out.extend(decoder.close())
    error, message = out
    assert (error.code, error.message) == (
        -32600,
        f"Invalid Request: frame exceeds the maximum size of {MIB} bytes",
    )
    assert (error.offset, error.preview, error.id) == (0, frame[:64], None)
    assert (message.method, message.offset, message.raw) == ("after", len(frame) + 1, after)


def test_frame_exactly_at_a_large_limit(backend: ModuleType) -> None:
    frame = big_request(8 * MIB)
    decoder = backend.Decoder(max_frame=len(frame))
    out = [item for chunk in fixed_chunks(frame + b"\r\n", CHUNK) for item in decoder.feed(chunk)]
    assert [m.kind for m in out] == ["request"]
    decoder = backend.Decoder(max_frame=len(frame) - 1)
    out = [item for chunk in fixed_chunks(frame + b"\r\n", CHUNK) for item in decoder.feed(chunk)]
    assert [(e.code, e.offset) for e in out] == [(-32600, 0)]


def test_large_batch(backend: ModuleType) -> None:
    element = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"total":2}}'
    frame = b"[" + b",".join([element] * 20_000) + b"]"
    decoder = backend.Decoder()
    out = [item for chunk in fixed_chunks(frame + b"\n", CHUNK) for item in decoder.feed(chunk)]
    assert len(out) == 20_000
    assert [m.batch for m in out[:3]] == [0, 1, 2]
    assert out[-1].offset == len(frame) - 1 - len(element)
    assert all(m.raw == element for m in out)
