"""The guard of one frame (contract: "FrameError", -32603): an exception while a frame's values are built
costs that frame only. It becomes one ``FrameError`` -32603, nothing escapes ``feed``/``close``/``decode``,
and the other frames of the chunk arrive.

Two real failures are provoked: a ``RecursionError`` (the Python backend's JSON parsers recurse through
nested values; the native one does not use the interpreter's stack) and, on the native backend, a
``MemoryError`` at every single allocation of a call in turn (``_testcapi.set_nomemory``; ``msgspec``,
under the Python backend, crashes the process when an allocation fails, so it is left out there).
"""

from __future__ import annotations

import gc
import inspect
import json
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from ._support import canon, feed_all

INTERNAL = "Internal error: decoding the frame failed ({})"

# a lazy frame builds little while decoding (its `Message` may be a reused one, the freelist; ids and
# plain method names are made on first access): A's method is written with an escape, so that its str
# is made while decoding and a lazy decoder has an allocation to fail in a frame
A = (
    b'{"jsonrpc":"2.0","id":1001,"method":"a\\u0062",'
    b'"params":{"x":[1,2,"s"],"y":{"z":-12345678901234567890123}}}'
)
B = b'{"jsonrpc":"2.0","id":"beta","result":{"content":[{"type":"text","text":"\\u00e9t\\u00e9"}]}}'
C = b'{"jsonrpc":"2.0","method":"gamma","params":[3.5,null,true]}'
DEEP_REQUEST = b'{"jsonrpc":"2.0","id":7,"method":"deep","params":' + b"[" * 100 + b"]" * 100 + b"}"
DEEP_NOTE = b'{"jsonrpc":"2.0","method":"deep","params":{"a":' + b"[" * 100 + b"]" * 100 + b"}}"
DEEP_BATCH = b"[" + DEEP_REQUEST + b"," + A + b"]"


def internal_error(item: Any, name: str, frame: bytes, offset: int) -> tuple[Any, ...]:
    """Whether ``item`` is the guard's error for ``frame`` at ``offset`` (the exception named ``name``),
    and its readable ``(id, notification)``."""
    names = (name, "PanicException") if name == "MemoryError" else (name,)
    return (item.code, item.message, item.offset, item.raw, item.preview, item.batch) in [
        (-32603, INTERNAL.format(n), offset, frame, frame[:64], None) for n in names
    ], (item.id, item.notification)


def test_a_recursion_error_costs_its_frame_only(backend: ModuleType) -> None:
    frames = [A, DEEP_REQUEST, B, DEEP_NOTE, DEEP_BATCH, C]
    data = b"\n".join(frames)
    usual = [canon(item) for item in feed_all(backend, [data])]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 60)  # 100 nested arrays go deeper than that
    try:
        decoder = backend.Decoder()
        got = decoder.feed(data) + decoder.close()  # C, unterminated, comes from close()
        one_shot = backend.decode(DEEP_REQUEST)
    finally:
        sys.setrecursionlimit(old)
    if backend.__name__ == "mcpframe._core" or sys.version_info >= (3, 12):
        # the native decoder does not use the interpreter's stack: nothing to guard. Nor, from 3.12 on,
        # the Python backend's: its parsers are C (msgspec, json), whose depth 3.12 counts apart from
        # sys.getrecursionlimit(), so 100 levels under the lowered limit raise nothing there
        assert [canon(i) for i in got] == usual
        assert one_shot[0].id == 7
        return
    # the Python backend's parsers recurse: each deep frame is one guard error, the rest as usual
    a, deep_request, b, deep_note, deep_batch, c = got
    assert [canon(i) for i in (a, b, c)] == [usual[0], usual[2], usual[-1]]
    offsets = [data.index(frame) for frame in frames]
    assert internal_error(deep_request, "RecursionError", DEEP_REQUEST, offsets[1]) == (True, (7, False))
    assert internal_error(deep_note, "RecursionError", DEEP_NOTE, offsets[3]) == (True, (None, True))
    assert internal_error(deep_batch, "RecursionError", DEEP_BATCH, offsets[4]) == (True, (None, False))
    (error,) = one_shot
    assert internal_error(error, "RecursionError", DEEP_REQUEST, 0) == (True, (7, False))
    assert json.loads(error.to_response()) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": INTERNAL.format("RecursionError")},
    }


def sweep(call: Callable[[], list[Any]], attempts: int = 80) -> list[list[Any] | None]:
    """``call()`` with the k-th allocation failing, for every k below ``attempts`` (``None``: it raised
    ``MemoryError``). The garbage collector is off, so that only ``call`` allocates."""
    testcapi = pytest.importorskip("_testcapi")
    outcomes: list[list[Any] | None] = []
    gc.disable()
    try:
        for k in range(attempts):
            testcapi.set_nomemory(k, k + 1)
            try:
                outcome: list[Any] | None = call()
            except MemoryError:
                outcome = None
            finally:
                testcapi.remove_mem_hooks()
            outcomes.append(outcome)
    finally:
        gc.enable()
    return outcomes


def check_sweep(
    outcomes: list[list[Any] | None], expected: list[Any], frames: list[tuple[bytes, int]]
) -> None:
    """Every outcome is a MemoryError raised (an allocation outside any frame's building failed) or
    all the frames, each one what it should be or its own -32603; the guard engaged at least once,
    and the last attempts got past every allocation of the call.

    A PyO3 constructor that meets a failed allocation reports the ``MemoryError`` to
    ``sys.unraisablehook`` and panics: the frame's error then names ``PanicException``."""
    assert outcomes[-1] is not None
    assert [canon(i) for i in outcomes[-1]] == [canon(i) for i in expected]
    guarded = 0
    for outcome in outcomes:
        if outcome is None:
            continue
        assert len(outcome) == len(expected)
        for item, want, (frame, offset) in zip(outcome, expected, frames, strict=True):
            if canon(item) == canon(want):
                continue
            guarded += 1
            ident = getattr(want, "id", None)
            notification = getattr(want, "kind", None) == "notification"
            assert internal_error(item, "MemoryError", frame, offset) == (True, (ident, notification))
    assert guarded > 0


pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture
def native(both_backends: Any) -> ModuleType:
    """The native backend, in both backends' runs: the allocation sweep cannot run on the python backend
    (msgspec, its parser, crashes the process on a failed allocation), so it is not parametrized."""
    native: ModuleType = both_backends.native
    return native


CHUNK = b"\n".join([A, B, C]) + b"\n"
SPOTS = [(A, 0), (B, len(A) + 1), (C, len(A) + len(B) + 2)]


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_memory_errors_in_feed(native: ModuleType, lazy: bool) -> None:
    expected = native.Decoder(lazy=lazy).feed(CHUNK)

    def call() -> list[Any]:
        decoder = native.Decoder(lazy=lazy)
        return list(decoder.feed(CHUNK))

    check_sweep(sweep(call), expected, SPOTS)


def test_memory_errors_in_a_large_lazy_chunk(native: ModuleType) -> None:
    # A lazy decoder validates a chunk over 64 KiB without the GIL and builds the objects afterwards.
    pad = b'{"jsonrpc":"2.0","method":"pad","params":["' + b"p" * 70_000 + b'"]}'
    chunk = CHUNK + pad + b"\n"
    expected = native.Decoder(lazy=True).feed(chunk)
    spots = [*SPOTS, (pad, len(CHUNK))]
    check_sweep(sweep(lambda: list(native.Decoder(lazy=True).feed(chunk))), expected, spots)


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_memory_errors_in_close_and_reassembly(native: ModuleType, lazy: bool) -> None:
    # B arrives in two chunks (a reassembled frame); C is unterminated, decoded by close().
    data = CHUNK[:-1]
    cut = len(A) + 10
    expected = feed_all(native, [data[:cut], data[cut:]], lazy=lazy)

    def call() -> list[Any]:
        decoder = native.Decoder(lazy=lazy)
        first = decoder.feed(data[:cut])
        return [*first, *decoder.feed(data[cut:]), *decoder.close()]

    check_sweep(sweep(call), expected, SPOTS)


def test_memory_errors_in_decode(native: ModuleType) -> None:
    batch = b"[" + A + b"," + C + b"]"
    expected = native.decode(batch)
    outcomes = sweep(lambda: list(native.decode(batch)))
    # a batch is one frame: the guard's error stands for all of it
    assert outcomes[-1] is not None
    assert [canon(i) for i in outcomes[-1]] == [canon(i) for i in expected]
    shapes = {tuple(getattr(i, "code", None) for i in o) for o in outcomes if o is not None}
    assert (-32603,) in shapes
    assert shapes <= {(None, None), (-32603,)}
    for outcome in outcomes:
        if outcome is not None and len(outcome) == 1:
            (error,) = outcome
            assert internal_error(error, "MemoryError", batch, 0) == (True, (None, False))
