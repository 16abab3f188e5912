"""Batches (contract: "Batches"): one result per element, in order, and the batch-level errors."""

from __future__ import annotations

from types import ModuleType

import pytest

from ._support import stream
from .contract_text import (
    BAD_JSON,
    DEPTH,
    INVALID,
    NEITHER,
    NO_JSONRPC,
    NOT_OBJECT,
    PARAMS_TYPE,
    PARSE,
    nest,
)

# ---- batches ------------------------------------------------------------------------------------

REQ = b'{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2]}'
NOTE = b'{"jsonrpc":"2.0","method":"note"}'


def test_batch_elements_in_order(backend: ModuleType) -> None:
    frame = b"[ " + REQ + b" ,\t" + NOTE + b"\r," + b'{"jsonrpc":"2.0","id":"r","result":[]}' + b" ]"
    prefix = b"\xef\xbb\xbf\n"
    items = stream(backend, prefix + frame + b"\n")
    assert [(m.kind, m.id, m.batch) for m in items] == [
        ("request", 1, 0),
        ("notification", None, 1),
        ("result", "r", 2),
    ]
    assert [m.raw for m in items] == [REQ, NOTE, b'{"jsonrpc":"2.0","id":"r","result":[]}']
    assert [m.offset for m in items] == [len(prefix) + frame.index(m.raw) for m in items]
    assert items[0].params == [1, 2]
    assert items[0].raw_params == b"[1,2]"


def test_mixed_batch(backend: ModuleType) -> None:
    nested = b"[" + REQ + b"]"
    broken = b'{"jsonrpc":"2.0","id":3}'
    frame = b"[" + REQ + b", 1 ," + nested + b"," + broken + b',"s",{"method":5},{}]'
    items = backend.decode(frame)
    kinds = [(getattr(i, "kind", None), getattr(i, "message", None), i.id, i.batch) for i in items]
    assert kinds == [
        ("request", None, 1, 0),
        (None, NOT_OBJECT, None, 1),
        (None, NOT_OBJECT, None, 2),
        (None, NEITHER, 3, 3),
        (None, NOT_OBJECT, None, 4),
        (None, NO_JSONRPC, None, 5),
        (None, NO_JSONRPC, None, 6),
    ]
    errors = items[1:]
    assert [e.preview for e in errors] == [b"1", nested[:64], broken, b'"s"', b'{"method":5}', b"{}"]
    assert [e.offset for e in errors] == [
        frame.index(b"1 ,"),
        frame.index(nested),
        *_offsets(frame, errors[2:]),
    ]
    assert [e.code for e in errors] == [INVALID] * 6
    assert [e.notification for e in errors] == [False] * 6  # an invalid notification is answered
    assert [e.raw for e in errors] == [b"1", nested, broken, b'"s"', b'{"method":5}', b"{}"]


def _offsets(frame: bytes, errors: list[object]) -> list[int]:
    return [frame.rindex(e.preview) for e in errors]  # type: ignore[attr-defined]


@pytest.mark.parametrize("frame", [b"[]", b"[ ]", b" [\t\r] "], ids=["tight", "space", "whitespace"])
def test_empty_batch(backend: ModuleType, frame: bytes) -> None:
    (error,) = stream(backend, b"\n" + frame + b"\n")
    assert (error.code, error.message, error.id, error.batch) == (
        INVALID,
        "Invalid Request: empty batch",
        None,
        None,
    )
    assert (error.offset, error.preview, error.notification) == (1, frame, False)


@pytest.mark.parametrize(
    "frame", [b"[]", b"[" + REQ + b"]", b"[1,2]", b"[[]]", b"[" + REQ + b"," + NOTE + b"]"], ids=repr
)
def test_batches_disabled(backend: ModuleType, frame: bytes) -> None:
    (error,) = stream(backend, frame, batches=False)
    assert (error.code, error.message, error.id, error.batch) == (
        INVALID,
        "Invalid Request: batches are not supported",
        None,
        None,
    )
    assert (error.offset, error.preview) == (0, frame[:64])


def test_batches_disabled_still_checks_json_first(backend: ModuleType) -> None:
    (error,) = stream(backend, b"[" + REQ, batches=False)
    assert (error.code, error.message) == (PARSE, BAD_JSON)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        pytest.param(b"[" + REQ + b",]", BAD_JSON, id="trailing-comma"),
        pytest.param(b"[" + REQ, BAD_JSON, id="unclosed"),
        pytest.param(b"[" + REQ + b"] []", BAD_JSON, id="trailing-array"),
        pytest.param(b"[" * 129 + b"]" * 129, DEPTH, id="too-deep"),
    ],
)
def test_broken_batch_is_one_parse_error(backend: ModuleType, frame: bytes, message: str) -> None:
    (error,) = backend.decode(frame)
    assert (error.code, error.message, error.batch, error.offset) == (PARSE, message, None, 0)


def test_batch_depth_counts_the_array(backend: ModuleType) -> None:
    ok = b"[" + nest(127) + b"]"
    (message,) = backend.decode(ok)
    assert (message.kind, message.batch) == ("request", 0)
    (error,) = backend.decode(b"[" + nest(128) + b"]")
    assert (error.code, error.message, error.batch) == (PARSE, DEPTH, None)


def test_batch_element_with_tricky_strings(backend: ModuleType) -> None:
    first = b'{"jsonrpc":"2.0","id":"],[","method":"m","params":{"s":"}\\"]"}}'
    second = b'{"jsonrpc":"2.0","id":"{","result":"\\\\"}'
    frame = b"[" + first + b"," + second + b"]"
    one, two = backend.decode(frame)
    assert (one.raw, one.id, one.params, one.offset) == (first, "],[", {"s": '}"]'}, 1)
    assert (two.raw, two.id, two.result, two.offset) == (second, "{", "\\", len(first) + 2)


def test_batch_of_one_error_element_carries_id(backend: ModuleType) -> None:
    (error,) = backend.decode(b'[{"jsonrpc":"2.0","id":"q","method":"m","params":0}]')
    assert (error.message, error.id, error.batch, error.offset) == (PARAMS_TYPE, "q", 0, 1)
    assert error.to_response() == (
        b'{"jsonrpc":"2.0","id":"q","error":{"code":-32600,'
        b'"message":"Invalid Request: \\"params\\" must be an object or an array"}}\n'
    )
