"""UTF-8 across chunk boundaries, on both backends, with chunks large enough for the native decoder's
whole-chunk check (it checks the lines a chunk ends apart from its unterminated tail): a tail cut
inside a character, an invalid tail, an invalid line before valid ones, and bodies (one frame, which
may hold newlines) that end in invalid or cut UTF-8."""

from __future__ import annotations

from types import ModuleType

import pytest

from ._support import located

PARSE_ERROR = -32700


def request(k: int, text: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"m","params":{"t":"%s"}}\n' % (k, text.encode())


LINES = b"".join(request(k, "M\u00fcnchen \U0001f680 \u65e5\u672c " * 3) for k in range(2000))
BAD = b'{"jsonrpc":"2.0","id":-1,"method":"m","params":{"t":"\xff"}}\n'


def expected(data: bytes) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    offset = 0
    for line in data.split(b"\n")[:-1]:
        if line == BAD[:-1]:
            out.append(("error", PARSE_ERROR, "Parse error: invalid UTF-8 at byte 53 of the frame", offset))
        else:
            k = int(line.split(b'"id":')[1].split(b",")[0])
            out.append(("message", k, {"t": "M\u00fcnchen \U0001f680 \u65e5\u672c " * 3}, offset))
        offset += len(line) + 1
    return out


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("size", [65536, 65537, 65539, 100_003])
def test_chunks_cut_inside_characters(backend: ModuleType, lazy: bool, size: int) -> None:
    cut = LINES.index(b"\n", 30000) + 1
    data = LINES[:cut] + BAD + LINES[cut:]
    decoder = backend.Decoder(lazy=lazy)
    items = []
    for at in range(0, len(data), size):
        items += decoder.feed(data[at : at + size])
    items += decoder.close()
    assert located(items) == expected(data)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("tail", [b"\xf0\x9f", b"\xff", b'{"jsonrpc":"2.0","id":1,"method":"m\xc3'])
def test_chunk_ending_in_a_cut_or_invalid_tail(backend: ModuleType, lazy: bool, tail: bytes) -> None:
    head = LINES[:70000]
    head = head[: head.rindex(b"\n") + 1]
    decoder = backend.Decoder(lazy=lazy)
    items = decoder.feed(head + tail)
    assert located(items) == expected(head)
    rest = decoder.feed(b"\x98\x80\n") + decoder.close()
    assert len(rest) == 1
    assert rest[0].offset == len(head)
    if tail == b"\xf0\x9f":  # the character completes: not JSON, but valid UTF-8
        assert rest[0].message == "Parse error: invalid JSON"
    else:
        assert rest[0].message.startswith("Parse error: invalid UTF-8 at byte ")


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("end", [b"\xff", b"\xe6\x97", b""])
def test_bodies_with_newlines(backend: ModuleType, lazy: bool, end: bytes) -> None:
    body = (
        b'{"jsonrpc":"2.0",\n"id":1,\n"method":"m","params":{"t":"' + "\u00fc".encode() * 40000 + b'"}}' + end
    )
    (item,) = backend.decode(body, lazy=lazy)
    if end:
        assert item.code == PARSE_ERROR
        assert item.message == f"Parse error: invalid UTF-8 at byte {len(body) - len(end)} of the frame"
    else:
        assert item.params == {"t": "\u00fc" * 40000}
