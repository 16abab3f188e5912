"""The integer digit limit when encoding (contract: "Encoding").

Every encoder writes an integer (``int`` subclasses and ids included) of up to ``MAX_INT_DIGITS``
digits exactly, whatever ``sys.set_int_max_str_digits()`` says, and raises ``EncodeError`` for a longer
one, decided by one comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from mcpframe.errors import EncodeError

LIMIT = 4300
TOO_LONG = f"Integer exceeds the limit of {LIMIT} digits"
TOP = 10**LIMIT - 1  # the largest integer of LIMIT digits
TOP_TEXT = "9" * LIMIT
MIXED = int("1234567890" * (LIMIT // 10))  # LIMIT digits, all ten of them
MIXED_TEXT = "1234567890" * (LIMIT // 10)


class Int(int):
    """An int subclass: written as its integer value, limited like it."""

    def __str__(self) -> str:
        return "not this"

    __repr__ = __str__


def calls(backend: ModuleType, v: int) -> dict[str, Callable[[], bytes]]:
    """Every place an encoder writes an integer, with ``v`` there."""
    frame = b'{"jsonrpc":"2.0","id":1,"method":"m"}'
    message = backend.decode(frame)[0]
    return {
        "request-id": lambda: backend.encode_request(v, "m"),
        "request-params": lambda: backend.encode_request(1, "m", [v]),
        "notification-params": lambda: backend.encode_notification("m", {"v": v}),
        "result-id": lambda: backend.encode_result(v, None),
        "result": lambda: backend.encode_result(1, v),
        "error-id": lambda: backend.encode_error(v, 1, "m"),
        "error-code": lambda: backend.encode_error(1, v, "m"),
        "error-data": lambda: backend.encode_error(None, 1, "m", [[v]]),
        "encode": lambda: backend.encode(v),
        "encode-nested": lambda: backend.encode({"a": [1, {"b": (v,)}]}),
        "encode-many": lambda: backend.encode_many([{"a": 1}, {"b": v}]),
        "with-id": lambda: message.with_id(v),
        "splice-id": lambda: backend.splice_id(frame, v),
        "frame-error-response": lambda: backend.FrameError(-32600, "m", id=v).to_response(),
    }


PLACES = [  # the keys of calls()
    "request-id",
    "request-params",
    "notification-params",
    "result-id",
    "result",
    "error-id",
    "error-code",
    "error-data",
    "encode",
    "encode-nested",
    "encode-many",
    "with-id",
    "splice-id",
    "frame-error-response",
]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(
    "value",
    [10**LIMIT, -(10**LIMIT), 10**100_000, Int(10**LIMIT)],
    ids=["4301", "-4301", "100001", "subclass"],
)
def test_beyond_the_limit_raises_encode_error(backend: ModuleType, place: str, value: int) -> None:
    with pytest.raises(EncodeError) as info:
        calls(backend, value)[place]()
    assert str(info.value) == TOO_LONG


@pytest.mark.usefixtures("low_str_digits")
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(
    ("value", "text"),
    [(TOP, TOP_TEXT), (-TOP, "-" + TOP_TEXT), (MIXED, MIXED_TEXT), (Int(-MIXED), "-" + MIXED_TEXT)],
    ids=["4300-nines", "-4300-nines", "4300-mixed", "subclass"],
)
def test_at_the_limit_written_exactly_whatever_int_max_str_digits(
    backend: ModuleType, place: str, value: int, text: str
) -> None:
    line = calls(backend, value)[place]()
    assert text.encode() in line
    # only the limited integer is that long: it is written once, and nothing else changed
    assert len(line) - len(text) == len(calls(backend, 7)[place]()) - 1


def test_the_first_failing_value_wins(backend: ModuleType) -> None:
    # The limit is checked where the walker meets the integer, like the other value failures.
    with pytest.raises(EncodeError, match="limit of 4300"):
        backend.encode([10**LIMIT, {1: 2}])
    with pytest.raises(EncodeError, match="Dict key must be str"):
        backend.encode([{1: 2}, 10**LIMIT])
    with pytest.raises(EncodeError, match="Type is not JSON serializable: set"):
        backend.encode_result(1, [{1}, 10**LIMIT])


@pytest.mark.usefixtures("low_str_digits")
def test_large_ints_below_the_limit_round_trip(backend: ModuleType) -> None:
    values: list[Any] = [2**64, -(2**63) - 1, 10**639, 10**640, 10**641 + 7, TOP, -MIXED]
    line = backend.encode_result(10**640, values)
    (message,) = backend.decode(line)
    assert (message.id, message.result) == (10**640, values)
