"""Large lines of every size around the native encoder's buffer steps: a line past the 16 KiB scratch
buffer moves into a ``bytes`` object that is grown while written and, at the end, either shrunk or
(when little is left over) kept with its size lowered in place. Each line must be an ordinary
``bytes`` object: the same bytes as ``orjson.dumps(x) + b"\\n"`` and the python backend, a NUL after
its last byte (CPython keeps one after every ``bytes``), and ``len``, ``hash``, slicing,
concatenation, ``pickle``, ``memoryview`` and ``decode`` that agree with a copy made by Python."""

from __future__ import annotations

import ctypes
import pickle
import platform
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import orjson
import pytest

KIB = 1024
# Around the scratch buffer, the usual doubling steps and glibc's mmap threshold (128 KiB), and
# two lines far above it.
SIZES = (16 * KIB, 32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB, 1024 * KIB, 4096 * KIB)
# Offsets of a line's length from each size: both sides of every step, and a few bytes either
# way of the eighth of slack at which the encoder stops shrinking a line.
OFFSETS = (-4096, -600, -130, -9, -1, 0, 1, 9, 130, 600, 2048, 5000)


def _text(n: int, escapes: bool) -> str:
    """``n`` characters of text; with ``escapes`` a quote, a newline or a control every ~100."""
    words = "the server returned a list of files matching pattern é ünïcode 🙂 "
    if escapes:
        words += 'quote " back \\ line\n tab\t bell\x07 '
    return (words * (n // len(words) + 1))[:n]


def _shapes(size: int) -> Iterator[Any]:
    """Messages whose lines land at and around ``size`` bytes, each grown a different way."""
    envelope = len(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": ""}})) + 1
    for offset in OFFSETS:
        n = size + offset - envelope
        if n <= 0:
            continue
        # One long string: the buffer grows once, with an eighth to spare.
        yield {"jsonrpc": "2.0", "id": 1, "result": {"text": "x" * n}}
        # Escapes: each may top the buffer up again on its own.
        yield {"jsonrpc": "2.0", "id": 1, "result": {"text": _text(n // 2, escapes=True)}}
    # Many small values: the buffer doubles step by step, so the slack at the end varies.
    for count in (size // 40 - 3, size // 40, size // 40 + 5):
        yield {"jsonrpc": "2.0", "id": 2, "result": {"items": [f"item {i:06d} é" for i in range(count)]}}
        yield [i * 7919 for i in range(count)]


def _nul_after(line: bytes) -> int:
    """The byte after the end of ``line``'s data, read from its object (CPython's layout)."""
    # `bytes.__basicsize__` is the header plus the one byte of the trailing NUL.
    start = id(line) + bytes.__basicsize__ - 1
    return ctypes.string_at(start + len(line), 1)[0]


def _check_line(line: bytes, expected: bytes) -> None:
    assert type(line) is bytes
    assert line == expected
    assert len(line) == len(expected)
    assert hash(line) == hash(bytes(bytearray(expected)))
    assert line[:10] == expected[:10]
    assert line[-10:] == expected[-10:]
    assert line[len(line) // 2 :: 997] == expected[len(expected) // 2 :: 997]
    assert line + b"tail" == expected + b"tail"
    assert b"head" + line == b"head" + expected
    assert pickle.loads(pickle.dumps(line)) == expected
    view = memoryview(line)
    assert view.nbytes == len(expected)
    assert view[-1] == ord("\n")
    assert view.tobytes() == expected
    assert line.decode() == expected.decode()
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    if platform.python_implementation() == "CPython":
        assert _nul_after(line) == 0


@pytest.mark.parametrize("size", SIZES, ids=[f"{size // KIB}KiB" for size in SIZES])
def test_large_lines_are_ordinary_bytes(backend: ModuleType, size: int) -> None:
    seen = 0
    for message in _shapes(size):
        expected = orjson.dumps(message) + b"\n"
        _check_line(backend.encode(message), expected)
        seen += 1
    assert seen >= 20


@pytest.mark.parametrize("size", SIZES[:4], ids=[f"{size // KIB}KiB" for size in SIZES[:4]])
def test_large_lines_match_the_python_backend(both_backends: Any, size: int) -> None:
    native, python = both_backends
    for message in _shapes(size):
        assert native.encode(message) == python.encode(message)


def test_large_results_and_batches(backend: ModuleType) -> None:
    for size in SIZES[:5]:
        text = _text(size, escapes=True)
        expected = orjson.dumps({"jsonrpc": "2.0", "id": 9, "result": {"text": text}}) + b"\n"
        _check_line(backend.encode_result(9, {"text": text}), expected)
        many = [{"jsonrpc": "2.0", "method": "m", "params": {"t": text[: size // 3]}}] * 3
        _check_line(backend.encode_many(many[:1]), orjson.dumps(many[0]) + b"\n")
        assert backend.encode_many(many) == b"".join(orjson.dumps(m) + b"\n" for m in many)


def test_large_lines_kept_and_dropped_in_any_order(backend: ModuleType) -> None:
    # Lines of many sizes alive at once and freed out of order: each keeps its own bytes.
    messages = [{"id": i, "t": "y" * (size + 37 * i)} for i, size in enumerate(SIZES[:6] * 3)]
    lines = [backend.encode(m) for m in messages]
    for index in (5, 0, 15, 3):
        del lines[index]
        del messages[index]
    for line, message in zip(lines, messages, strict=True):
        _check_line(line, orjson.dumps(message) + b"\n")
