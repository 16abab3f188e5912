"""The native decoder's frame-by-frame path (chunks up to 64 KiB, the GIL held) releases each frame's
scan items once their objects are built: a message owning nothing (the usual) is forgotten, one that
owns a decoded id or method string (escapes) or a failure is dropped. A stream of every kind of item
(escaped ids and methods, failures with and without ids, batches mixing both, a frame over 64 KiB,
an oversize one, nesting at and over the limit, ids around 2**63 and 2**64, every byte value in a
string) decodes the same on both backends, lazy and eager, whatever the chunking: one byte at a
time, chunk edges on every side of an item, and chunks over 64 KiB (the path without the GIL)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._support import canon_all, feed_all, fixed_chunks

MAX_FRAME = 200_000


def request(id_json: str, method_json: str = '"m"', params: str = '{"a":1}') -> bytes:
    return b'{"jsonrpc":"2.0","id":%s,"method":%s,"params":%s}' % (
        id_json.encode(),
        method_json.encode(),
        params.encode(),
    )


IDS = [
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "999999999999999999",
    "1000000000000000000",
    "0",
    "-0",
    '"s"',
    '"\\u0041\\n"',
    '"\\ud83d\\ude80"',
]

EVERY_BYTE = json.dumps("".join(chr(b) for b in range(256)), ensure_ascii=False)

LINES = [
    *(request(i) for i in IDS),
    request("7", '"tools/\\u0063all"'),  # an escaped method
    b'{"jsonrpc":"2.0","method":"notifications/\\u0070rogress","params":{"p":"\\t"}}',
    b'{"jsonrpc":"2.0","id":"\\u00e9","result":{"x":[1,2.5,null,true]}}',
    b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}',
    request("4", params=f'{{"s":{EVERY_BYTE}}}'),
    b'{"jsonrpc":"2.0","id":"\\u0078","method":5}',  # invalid envelope, with a string id
    b'{"jsonrpc":"2.0","id":12345678901234567890,"method":[]}',  # invalid, with a big id
    b'{"jsonrpc":"2.0","id":1,"method":"m"',  # invalid JSON
    b'{"jsonrpc":"2.0","id":1,"method":"m\xff"}',  # invalid UTF-8
    b'[{"jsonrpc":"2.0","id":"\\u0062","method":"b"},1,{"jsonrpc":"2.0","method":"n"},{"id":2}]',
    b"[]",
    b'{"jsonrpc":"2.0","id":5,"method":"deep","params":' + b"[" * 62 + b"]" * 62 + b"}",
    b'{"jsonrpc":"2.0","id":6,"method":"deep","params":' + b"[" * 70 + b"]" * 70 + b"}",
    request("8", params=f'["{"x" * 70_000}"]'),  # over 64 KiB: reassembled across chunks
    request("9", params=f'["{"y" * (MAX_FRAME + 10)}"]'),  # over max_frame
    b"",
    b"  ",
    request('"last\\u0021"', '"\\u006d"'),
]
DATA = b"\n".join(LINES) + b"\n"
EDGES = [sum(len(line) + 1 for line in LINES[:k]) for k in range(len(LINES) + 1)]


def decoded(module: object, chunks: list[bytes], lazy: bool) -> list[tuple[object, ...]]:
    return canon_all(feed_all(module, chunks, lazy=lazy, max_frame=MAX_FRAME))


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("size", [1, 7, 100, 4096, 65535, 65536, 65537, 300_000, len(DATA)])
def test_every_kind_of_item_in_fixed_chunks(both_backends: Any, lazy: bool, size: int) -> None:
    chunks = fixed_chunks(DATA, size)
    want = decoded(both_backends.python, chunks, lazy)
    assert decoded(both_backends.native, chunks, lazy) == want
    assert len(want) > len(LINES)  # the batch's elements, each its own item


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("shift", [-2, -1, 0, 1, 2])
def test_chunk_edges_on_every_side_of_every_item(both_backends: Any, lazy: bool, shift: int) -> None:
    points = sorted({min(max(edge + shift, 0), len(DATA)) for edge in EDGES})
    chunks = [DATA[a:b] for a, b in zip([0, *points], [*points, len(DATA)], strict=True)]
    want = decoded(both_backends.python, chunks, lazy)
    assert decoded(both_backends.native, chunks, lazy) == want


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_repeated_decoding_keeps_the_shared_method_and_value_objects(both_backends: Any, lazy: bool) -> None:
    # a forgotten item must not have held a reference: the messages built from it keep their
    # values and methods alive on their own, across many chunks and after the decoder is gone
    chunks = fixed_chunks(DATA * 3, 4096)
    kept = feed_all(both_backends.native, chunks, lazy=lazy, max_frame=MAX_FRAME)
    want = decoded(both_backends.python, chunks, lazy)
    for _ in range(3):
        feed_all(both_backends.native, chunks, lazy=lazy, max_frame=MAX_FRAME)
    assert canon_all(kept) == want
