"""The integer digit limit when decoding (contract: "Validation", step 6; "JSON semantics").

An integer literal of more than ``MAX_INT_DIGITS`` digits anywhere in a frame or batch element makes it
a ``FrameError`` -32600 (after the parse and envelope checks); every other frame of the chunk arrives.
Integers up to the limit decode exactly whatever ``sys.set_int_max_str_digits()`` says.
"""

from __future__ import annotations

import json
import sys
from types import ModuleType
from typing import Any

import pytest

from ._support import canon_all, feed_all, fixed_chunks, split_at

LIMIT = 4300
LONG = f"Invalid Request: integer literal longer than {LIMIT} digits"
BEFORE = b'{"jsonrpc":"2.0","id":"before","method":"a"}'
AFTER = b'{"jsonrpc":"2.0","method":"after","params":{}}'


def digits(n: int) -> str:
    """``n`` digits, not starting with 0 (all ten digits occur)."""
    return ("1234567890" * (n // 10 + 1))[:n]


AT_LIMIT = digits(LIMIT)
AT_LIMIT_VALUE = int(AT_LIMIT)  # built at import time, under the default int_max_str_digits


def frames_with(literal: str) -> dict[str, tuple[str, int | str | None]]:
    """Frames holding ``literal`` at every kind of place: (frame, the FrameError's expected id)."""
    n = literal
    return {
        "id": (f'{{"jsonrpc":"2.0","id":{n},"method":"m"}}', None),
        "params": (f'{{"jsonrpc":"2.0","id":1,"method":"m","params":[{n}]}}', 1),
        "params-member": (f'{{"jsonrpc":"2.0","id":"s","method":"m","params":{{"a":{n}}}}}', "s"),
        "result": (f'{{"jsonrpc":"2.0","id":2,"result":{n}}}', 2),
        "error-data": (f'{{"jsonrpc":"2.0","id":3,"error":{{"code":1,"message":"m","data":{n}}}}}', 3),
        "error-code": (f'{{"jsonrpc":"2.0","id":4,"error":{{"code":{n},"message":"m"}}}}', 4),
        "error-null-id": (
            f'{{"jsonrpc":"2.0","id":null,"error":{{"code":1,"message":"m","data":{n}}}}}',
            None,
        ),
        "nested": (f'{{"jsonrpc":"2.0","id":5,"method":"m","params":{{"a":[[{{"b":[{n}]}}]]}}}}', 5),
        "unknown-member": (f'{{"jsonrpc":"2.0","id":6,"method":"m","x":{{"y":{n}}}}}', 6),
        "response-params": (f'{{"jsonrpc":"2.0","id":7,"result":1,"params":[{n}]}}', 7),
    }


PLACES = list(frames_with("0"))


@pytest.mark.parametrize("size", [LIMIT + 1, 100_000], ids=["4301", "100000"])
@pytest.mark.parametrize("sign", ["", "-"], ids=["positive", "negative"])
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_long_literal_makes_the_frame_an_invalid_request(
    backend: ModuleType, lazy: bool, place: str, sign: str, size: int
) -> None:
    text, expected_id = frames_with(sign + digits(size))[place]
    frame = text.encode()
    data = BEFORE + b"\n" + frame + b"\r\n" + AFTER + b"\n"
    before, error, after = feed_all(backend, [data], lazy=lazy)
    assert (before.id, after.method) == ("before", "after")
    assert (error.code, error.message, error.id, error.batch) == (-32600, LONG, expected_id, None)
    assert type(error.id) is type(expected_id)
    assert (error.offset, error.preview, error.raw) == (len(BEFORE) + 1, frame[:64], frame)
    assert error.notification is False
    reply = json.loads(error.to_response())
    assert reply == {"jsonrpc": "2.0", "id": expected_id, "error": {"code": -32600, "message": LONG}}
    # the one-shot form gives the same error (offset 0)
    (alone,) = backend.decode(frame, lazy=lazy)
    assert (alone.code, alone.message, alone.id, alone.offset, alone.raw) == (
        -32600,
        LONG,
        expected_id,
        0,
        frame,
    )


@pytest.mark.parametrize("str_digits", [0, 640, 5000, 200_000], ids=lambda n: f"int_max_str_digits={n}")
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_the_limit_is_the_same_whatever_int_max_str_digits(
    backend: ModuleType, lazy: bool, str_digits: int
) -> None:
    frames = [text.encode() for text, _ in frames_with(digits(LIMIT + 1)).values()]
    frames += [text.encode() for text, _ in frames_with("-" + digits(100_000)).values()]
    expected = [(e.code, e.message, e.id, e.raw) for e in backend.decode(b"[" + b",".join(frames) + b"]")]
    data = b"\n".join([BEFORE, *frames, AFTER])
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(str_digits)
    try:
        items = feed_all(backend, [data], lazy=lazy)
        batch = backend.decode(b"[" + b",".join(frames) + b"]", lazy=lazy)
    finally:
        sys.set_int_max_str_digits(old)
    assert (items[0].id, items[-1].method) == ("before", "after")
    assert [(e.code, e.message, e.id, e.raw) for e in items[1:-1]] == expected
    assert [(e.code, e.message, e.id, e.raw) for e in batch] == expected
    assert {e.message for e in batch} == {LONG}


@pytest.mark.parametrize("size", [LIMIT + 1, 100_000], ids=["4301", "100000"])
def test_long_literal_in_a_valid_notification_is_flagged(backend: ModuleType, size: int) -> None:
    # A valid notification rejected all the same: MCP never answers a notification.
    frame = f'{{"jsonrpc":"2.0","method":"n","params":{{"v":-{digits(size)}}}}}'.encode()
    (error,) = backend.decode(frame)
    assert (error.message, error.id, error.notification, error.raw) == (LONG, None, True, frame)


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_long_literals_in_a_batch_fail_their_element_only(backend: ModuleType, lazy: bool) -> None:
    long = digits(LIMIT + 1)
    elements = [
        b'{"jsonrpc":"2.0","id":1,"method":"a","params":[1]}',
        f'{{"jsonrpc":"2.0","id":2,"method":"b","params":[-{long}]}}'.encode(),
        f'{{"jsonrpc":"2.0","id":{long},"result":0}}'.encode(),
        f'{{"jsonrpc":"2.0","method":"c","params":{{"{long}":["{long}",{long}.5,-{long}E-4290,0.{long}]}}}}'.encode(),
        f'{{"jsonrpc":"2.0","method":"d","params":{{"{long}":[{digits(100_000)}]}}}}'.encode(),
        f"[{long}]".encode(),
    ]
    frame = b"[ " + b" ,\n ".join(elements) + b" ]"
    items = backend.decode(frame, lazy=lazy)
    assert [getattr(i, "kind", None) or i.message for i in items] == [
        "request",
        LONG,
        LONG,
        "notification",
        LONG,
        "Invalid Request: expected a JSON object",
    ]
    assert [i.batch for i in items] == list(range(6))
    assert [i.raw for i in items] == elements
    assert [i.offset for i in items] == [frame.index(e) for e in elements]
    errors = [items[1], items[2], items[4]]
    assert [(e.id, e.notification) for e in errors] == [(2, False), (None, False), (None, True)]
    # strings, keys, fractions and exponents of many digits are no integer literals; the message
    # after the long ones keeps its own values and spans
    assert items[3].params == {long: [long, float("inf"), -float(long + "E-4290"), float("0." + long)]}
    assert items[3].raw_params == elements[3][elements[3].index(b'{"1') : -1]
    # with batches refused, the batch-level error comes first
    (refused,) = backend.decode(frame, batches=False)
    assert (refused.message, refused.raw) == ("Invalid Request: batches are not supported", frame)


def test_other_failures_come_first(backend: ModuleType) -> None:
    long = digits(5000)
    cases = {
        # invalid JSON anywhere wins
        f'{{"jsonrpc":"2.0","id":1,"method":"m","params":[{long}],}}': (
            -32700,
            "Parse error: invalid JSON",
            None,
        ),
        f'{{"jsonrpc":"2.0","id":1,"method":"m","params":[0{long}]}}': (
            -32700,
            "Parse error: invalid JSON",
            None,
        ),
        f"[{long}": (-32700, "Parse error: invalid JSON", None),
        # not an object
        f"{long}": (-32600, "Invalid Request: expected a JSON object", None),
        # the envelope rules: their message, the id only when it is short
        f'{{"jsonrpc":"2.0","id":{long},"method":1}}': (
            -32600,
            'Invalid Request: "method" must be a string',
            None,
        ),
        f'{{"jsonrpc":"1.0","id":"x","method":"m","params":[{long}]}}': (
            -32600,
            'Invalid Request: "jsonrpc" must be "2.0"',
            "x",
        ),
        f'{{"jsonrpc":"2.0","method":"m","params":{long}}}': (
            -32600,
            'Invalid Request: "params" must be an object or an array',
            None,
        ),
    }
    for text, expected in cases.items():
        (error,) = backend.decode(text.encode())
        assert (error.code, error.message, error.id) == expected, text[:60]
        assert error.notification is False


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_long_literal_fed_byte_by_byte(backend: ModuleType, lazy: bool) -> None:
    frame = f'{{"jsonrpc":"2.0","id":9,"method":"m","params":[{digits(LIMIT + 1)}]}}'.encode()
    data = BEFORE + b"\n" + frame + b"\n" + AFTER  # the last frame ends at close()
    items = feed_all(backend, fixed_chunks(data, 1), lazy=lazy)
    assert [getattr(i, "kind", None) or i.message for i in items] == ["request", LONG, "notification"]
    assert (items[1].id, items[1].raw, items[1].offset) == (9, frame, len(BEFORE) + 1)
    # and cut around the literal: the same results
    start = data.index(b"[1234") + 1
    for points in ([start], [start + 1], [start + LIMIT], [start + LIMIT + 1], [start, start + 2000]):
        assert canon_all(feed_all(backend, split_at(data, points), lazy=lazy)) == canon_all(items)


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_long_literals_in_64k_chunks(backend: ModuleType, lazy: bool) -> None:
    # a 100,000-digit literal and a frame of many 4,301-digit ones, between valid frames, as a pipe
    # delivers them
    huge = f'{{"jsonrpc":"2.0","id":"h","method":"m","params":[-{digits(100_000)}]}}'.encode()
    many = ",".join([digits(LIMIT)] * 30 + [digits(LIMIT + 1)] + [digits(LIMIT)] * 30)
    wide = f'{{"jsonrpc":"2.0","id":"w","result":[{many}]}}'.encode()
    data = b"\n".join([BEFORE, huge, AFTER, wide, BEFORE]) + b"\n"
    items = feed_all(backend, fixed_chunks(data, 64 * 1024), lazy=lazy)
    summary = [(getattr(i, "kind", None) or i.message, i.id) for i in items]
    assert summary == [
        ("request", "before"),
        (LONG, "h"),
        ("notification", None),
        (LONG, "w"),
        ("request", "before"),
    ]
    assert (items[1].raw, items[3].raw) == (huge, wide)


def at_limit_frames() -> list[tuple[bytes, str, Any]]:
    """Frames with exactly-``LIMIT``-digit integers: (frame, attribute, expected value)."""
    n, v = AT_LIMIT, AT_LIMIT_VALUE
    return [
        (f'{{"jsonrpc":"2.0","id":{n},"method":"m"}}'.encode(), "id", v),
        (f'{{"jsonrpc":"2.0","id":-{n},"result":null}}'.encode(), "id", -v),
        (f'{{"jsonrpc":"2.0","id":1,"method":"m","params":[{n},-{n}]}}'.encode(), "params", [v, -v]),
        (f'{{"jsonrpc":"2.0","id":1,"result":{{"a":[[{n}]]}}}}'.encode(), "result", {"a": [[v]]}),
        (
            f'{{"jsonrpc":"2.0","id":1,"error":{{"code":{n},"message":"m","data":-{n}}}}}'.encode(),
            "error",
            {"code": v, "message": "m", "data": -v},
        ),
    ]


@pytest.mark.usefixtures("low_str_digits")
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_at_the_limit_integers_are_exact_whatever_int_max_str_digits(backend: ModuleType, lazy: bool) -> None:
    cases = at_limit_frames()
    data = b"\n".join(frame for frame, _, _ in cases) + b"\n"
    for items in (
        feed_all(backend, [data], lazy=lazy),
        feed_all(backend, fixed_chunks(data, 1000), lazy=lazy),
        [backend.decode(frame, lazy=lazy)[0] for frame, _, _ in cases],
    ):
        assert [getattr(m, name) for m, (_, name, _) in zip(items, cases, strict=True)] == [
            expected for _, _, expected in cases
        ]
    # a frame of many, and a chunk large enough for the native decoder to release the GIL (values
    # built afterwards)
    many = ",".join([AT_LIMIT, "-" + AT_LIMIT] * 20)
    (message,) = backend.decode(f'{{"jsonrpc":"2.0","id":"w","result":[{many}]}}'.encode(), lazy=lazy)
    assert message.result == [AT_LIMIT_VALUE, -AT_LIMIT_VALUE] * 20
    padded = b'{"jsonrpc":"2.0","id":1,"method":"pad","params":["' + b"x" * 70_000 + b'"]}\n' + data
    items = feed_all(backend, [padded], lazy=lazy)
    assert [getattr(m, name) for m, (_, name, _) in zip(items[1:], cases, strict=True)] == [
        expected for _, _, expected in cases
    ]


def test_splice_id_refuses_a_frame_with_a_long_literal(backend: ModuleType) -> None:
    frame = f'{{"jsonrpc":"2.0","id":1,"method":"m","params":[{digits(LIMIT + 1)}]}}'.encode()
    with pytest.raises(ValueError, match="frame is not a valid JSON-RPC message"):
        backend.splice_id(frame, 2)
