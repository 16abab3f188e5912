"""UTF-8 checked a block at a time (the native decoder checks a chunk in 16 KiB blocks that end at the
start of a character, just ahead of the frames that need them): multi-byte characters on every side
of a block's end, a block that would end inside a character, and invalid bytes after valid lines,
with the lines before and after them decoded as usual, in one chunk larger and one smaller than the
size from which a lazy decoder frames without the GIL. Both backends."""

from __future__ import annotations

from types import ModuleType

import pytest

from ._support import located

PARSE_ERROR = -32700
BLOCK = 16 * 1024
EMOJI = "\U0001f680\u65e5\u00fc"


def request(k: int, text: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"m","params":{"t":"%s"}}\n' % (k, text.encode())


def filler(k: int, length: int) -> bytes:
    """A request line of exactly ``length`` bytes (newline included)."""
    bare = len(request(k, ""))
    return request(k, "a" * (length - bare))


BAD = b'{"jsonrpc":"2.0","id":-1,"method":"m","params":{"t":"\xff"}}\n'


def stream(shift: int, after: int) -> tuple[bytes, list[tuple[object, ...]]]:
    """A filler line ending near the first block's end, a line of multi-byte characters across it,
    an invalid line, then ``after`` lines of multi-byte characters; and what decoding it yields."""
    lines = [filler(0, BLOCK - 40 + shift), request(1, EMOJI * 30), BAD]
    lines += [request(k, EMOJI * 20) for k in range(3, 3 + after)]
    want: list[tuple[object, ...]] = []
    offset = 0
    for line in lines:
        if line == BAD:
            want.append(("error", PARSE_ERROR, "Parse error: invalid UTF-8 at byte 53 of the frame", offset))
        else:
            k = int(line.split(b'"id":')[1].split(b",")[0])
            want.append(("message", k, {"t": line.split(b'"t":"')[1].split(b'"')[0].decode()}, offset))
        offset += len(line)
    return b"".join(lines), want


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("after", [40, 600])  # one chunk below 64 KiB, one above
@pytest.mark.parametrize("shift", range(0, 48, 3))
def test_characters_across_block_ends(backend: ModuleType, lazy: bool, after: int, shift: int) -> None:
    data, want = stream(shift, after)
    assert (len(data) > 64 * 1024) == (after == 600)
    decoder = backend.Decoder(lazy=lazy)
    items = decoder.feed(data) + decoder.close()
    assert located(items) == want


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("cut", [1, 2, 3])
def test_valid_lines_before_a_cut_character_at_a_block_end(backend: ModuleType, lazy: bool, cut: int) -> None:
    # the chunk's bytes run out inside a character just past the first block: the lines before
    # it are whole and valid, the tail is held for the next chunk, which completes it
    head = filler(0, BLOCK + 100)
    char = "\U0001f680".encode()
    tail = b'{"jsonrpc":"2.0","id":9,"method":"m","params":{"t":"' + char[:cut]
    decoder = backend.Decoder(lazy=lazy)
    first = decoder.feed(head + tail)
    assert located(first) == [("message", 0, {"t": "a" * (BLOCK + 100 - len(request(0, "")))}, 0)]
    rest = decoder.feed(char[cut:] + b'"}}\n') + decoder.close()
    assert located(rest) == [("message", 9, {"t": "\U0001f680"}, len(head))]
