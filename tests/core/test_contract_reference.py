"""The pure-Python backend against its own reference paths: msgspec/orjson on and off, same results.

The python backend is the oracle of the differential tests, yet it decodes with ``msgspec`` and encodes
with ``orjson`` wherever they agree with the contract, and falls back to plain-Python reference paths
(``json`` plus the contract's own checks) elsewhere. ``fastpaths.set_enabled(False)`` sends everything
down the reference paths; these tests run the same calls both ways, on a table that names every JSON
type, escapes, integers near 2**63 and 2**64 and the digit limit, floats, nesting and invalid frames,
and on the hypothesis strategies of the differential tests. Results must be identical: every
``Message``/``FrameError`` field (``1``, ``1.0`` and ``True`` told apart), the same bytes (float text
aside, which the contract only asks to round-trip), the same exception class and message.

Whichever backend ``MCPFRAME_BACKEND`` selects is irrelevant: these tests import ``_pycore`` itself.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpframe import _pycore
from mcpframe._pycore import fastpaths

from ._support import canon_value, outcome, split_at
from .strategies import decoder_options, envelopes, frames, json_values, split_points, streams

MAX_INT_DIGITS = 4300


@contextmanager
def fast_paths(on: bool) -> Iterator[None]:
    """Run with the fast paths on or off, then put back whatever was in force (the suite may run
    with ``MCPFRAME_PYCORE_REFERENCE=1``)."""
    before = fastpaths.enabled()
    fastpaths.set_enabled(on)
    try:
        yield
    finally:
        fastpaths.set_enabled(before)


def both_ways(call: Callable[[], Any]) -> tuple[Any, Any]:
    """``call()`` with the fast paths, then with the reference paths only."""
    with fast_paths(True):
        fast = call()
    with fast_paths(False):
        reference = call()
    return fast, reference


# ---------------------------------------------------------------------------------------------------
# The switch itself


def _library_callables(module: Any) -> list[str]:
    """Names of ``module``'s globals that are functions or bound methods of msgspec or orjson."""
    found = []
    for name, value in vars(module).items():
        if isinstance(value, type) or not callable(value):
            continue
        owner = getattr(value, "__self__", None)
        home = type(owner).__module__ if owner is not None else getattr(value, "__module__", None)
        if str(home).split(".")[0] in ("msgspec", "orjson"):
            found.append(name)
    return found


def test_switch_rebinds_every_library_global() -> None:
    modules = [m for name, m in sorted(sys.modules.items()) if name.startswith("mcpframe._pycore")]
    with fast_paths(True):
        on = {m.__name__: _library_callables(m) for m in modules}
        assert fastpaths.enabled()
    with fast_paths(False):
        off = {m.__name__: _library_callables(m) for m in modules}
        assert not fastpaths.enabled()
    # Not vacuous: the hot paths do reach the libraries through module globals ...
    assert on["mcpframe._pycore.envelope"] == ["fast_decode"]
    assert on["mcpframe._pycore.encode"] == ["_orjson_dumps"]
    # ... and with the switch off, none is left anywhere in the backend.
    assert {name: found for name, found in off.items() if found} == {}


def test_reference_paths_give_the_contract_values() -> None:
    frame = b'{"jsonrpc":"2.0","id":18446744073709551616,"result":[1e400,-0,0.5,"\\u00e9\\ud83d\\ude00"]}'
    with fast_paths(False):
        (message,) = _pycore.decode(frame)
        line = _pycore.encode({"n": 2**64, "s": "\u00e9\n"})
    assert (message.kind, message.id) == ("result", 2**64)
    assert canon_value(message.result) == canon_value([float("inf"), 0, 0.5, "\u00e9\U0001f600"])
    assert line == b'{"n":18446744073709551616,"s":"\xc3\xa9\\n"}\n'


# ---------------------------------------------------------------------------------------------------
# Decoding

BIG = [2**53 - 1, 2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, 10**18, 10**19]
INT_TEXTS = [
    b"0",
    b"-0",
    b"7",
    *(str(v).encode() for v in BIG),
    *(str(-v).encode() for v in BIG),
    str(-(2**63) - 1).encode(),
    b"9" * (MAX_INT_DIGITS - 1),
    b"9" * MAX_INT_DIGITS,
    b"-" + b"9" * MAX_INT_DIGITS,
    b"1" * (MAX_INT_DIGITS + 1),
    b"-" + b"1" * (MAX_INT_DIGITS + 1),
]
FLOAT_TEXTS = [
    b"0.0",
    b"-0.0",
    b"0.1",
    b"1.5e3",
    b"1E+2",
    b"-1e-2",
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"5e-324",
    b"1.7976931348623157e308",
    b"123456789012345678901234567890.5",
    b"1" * 5000 + b".5",
    b"9007199254740993.0",
    b"1e16",
]
STRING_TEXTS = [
    b'""',
    b'"plain"',
    b'"\\u00e9\\u20ac"',
    b'"\\ud83d\\ude00"',
    b'"\\uD83D\\uDE00"',
    b'"\\ud800"',
    b'"\\udc00"',
    b'"\\ud800\\u0041"',
    b'"\\ud800x"',
    b'"\\udc00\\ud800"',
    b'"\\\\ud800"',
    b'"\\"\\\\\\/\\b\\f\\n\\r\\t"',
    b'"\\u0000\\u001f"',
    '"\u00e9\u2028\U0001f600\ufeff"'.encode(),
    b'"\x01"',
    b'"\t"',
    b'"\\x"',
    b'"\\u12"',
    b'"\xff"',
    b'"\xc0\x80"',
    b'"\xed\xa0\x80"',
    b'"\xe2\x82"',
]
OTHER_TEXTS = [
    b"null",
    b"true",
    b"false",
    b"[]",
    b"{}",
    b'[1,"a",null,true,false,{"k":[2.5]}]',
    b'{"a":1,"b":2,"a":3}',
    b'{"\\u0061":1,"a":2}',
    b'{"\\ud800":1}',
    b" [ 1 , 2 ] ",
    b"[1,]",
    b'{"a":1,}',
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"'a'",
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"tru",
    b"[1 2]",
    b"[" * 127 + b"]" * 127,
    b"[" * 128 + b"]" * 128,
    b"[" * 129 + b"]" * 129,
    b'{"k":' * 127 + b"0" + b"}" * 127,
    b'"[[[[' + b"[" * 200 + b'"',
]
SNIPPETS = INT_TEXTS + FLOAT_TEXTS + STRING_TEXTS + OTHER_TEXTS


def frames_around(value: bytes) -> list[bytes]:
    """The snippet as a whole frame, and in each place of an envelope where a value may stand."""
    return [
        value,
        b'{"jsonrpc":"2.0","id":1,"result":' + value + b"}",
        b'{"jsonrpc":"2.0","id":' + value + b',"method":"m","params":[' + value + b"]}",
        b'{"jsonrpc":"2.0","method":"n","params":{"v":' + value + b"}}",
        b'{"jsonrpc":"2.0","id":'
        + value
        + b',"error":{"code":'
        + value
        + b',"message":"m","data":'
        + value
        + b"}}",
        b'[{"jsonrpc":"2.0","id":2,"result":' + value + b"}," + value + b"]",
        b'{"jsonrpc":"2.0","id":3,"result":null,"extra":' + value + b"}",
    ]


INVALID_FRAMES = [
    b"",
    b" \t\r\n",
    b"\xef\xbb\xbf" + b'{"jsonrpc":"2.0","method":"m"}',
    b'{"jsonrpc":"2.0","method":"m"}\xef\xbb\xbf',
    b'{"jsonrpc":"2.0","method":"m"} x',
    b'{"jsonrpc":"2.0","method":"m"',
    b'{"jsonrpc":"2.0","method":"m\n"}',
    b'{"jsonrpc":"2.0","method":1,"params":"bar"}',
    b'{"jsonrpc":"1.0","id":1,"method":"m"}',
    b'{"id":1,"method":"m"}',
    b'{"jsonrpc":"2.0","id":null,"method":"m"}',
    b'{"jsonrpc":"2.0","id":1.0,"result":1}',
    b'{"jsonrpc":"2.0","id":true,"result":1}',
    b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}',
    b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":"m"}}',
    b"[]",
    b"[[]]",
    b'[{"jsonrpc":"2.0","method":"m"},[1]]',
]
DECODE_CORPUS = sorted(
    {frame for snippet in SNIPPETS for frame in frames_around(snippet)} | set(INVALID_FRAMES)
)
DECODE_OPTIONS: list[dict[str, Any]] = [{}, {"lazy": True}, {"batches": False}, {"max_frame": 40}]


def decode_everything(frame: bytes, options: dict[str, Any]) -> list[Any]:
    """Every contract-visible result of ``frame``: one-shot, as a stream line (fed bytewise at a few
    points), and what splicing an id and answering the errors give."""
    decoded = outcome(partial(_pycore.decode, frame, **options))
    fed = outcome(partial(_feed, [frame[:5], frame[5:17], frame[17:], b"\n"], options))
    spliced = outcome(partial(_pycore.splice_id, frame, 2**64))
    answers = outcome(partial(_answers, frame))
    return [decoded, fed, spliced, answers]


def _feed(chunks: list[bytes], options: dict[str, Any]) -> list[Any]:
    decoder = _pycore.Decoder(**options)
    out = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return out


def _answers(frame: bytes) -> list[bytes]:
    """What a peer writes back: ``to_response`` of each error, ``with_id`` of each message with an id."""
    out = []
    for item in _pycore.decode(frame):
        if isinstance(item, _pycore.FrameError):
            out.append(item.to_response())
        elif item.id is not None:
            out.append(item.with_id("\u00e9\n"))
    return out


@pytest.mark.parametrize("options", DECODE_OPTIONS, ids=lambda o: ",".join(o) or "default")
def test_decode_table(options: dict[str, Any]) -> None:
    assert len(DECODE_CORPUS) > 300  # the table is what it says
    differ = []
    for frame in DECODE_CORPUS:
        fast, reference = both_ways(partial(decode_everything, frame, options))
        if fast != reference:
            differ.append((frame[:80], fast, reference))
    assert differ == []


def test_decode_table_covers_both_outcomes() -> None:
    # The table holds valid messages, each frame error code, and literals past the digit limit.
    codes = set()
    kinds = set()
    for frame in DECODE_CORPUS:
        for item in _pycore.decode(frame):
            if isinstance(item, _pycore.FrameError):
                codes.add((item.code, item.message.split(":")[0]))
            else:
                kinds.add(item.kind)
    assert kinds == {"request", "notification", "result", "error"}
    assert {(-32700, "Parse error"), (-32600, "Invalid Request")} <= codes
    long_literal = f"Invalid Request: integer literal longer than {MAX_INT_DIGITS} digits"
    assert any(
        isinstance(item, _pycore.FrameError) and item.message == long_literal
        for frame in DECODE_CORPUS
        for item in _pycore.decode(frame)
    )


@given(frames(), decoder_options)
def test_decode_random_frames(frame: bytes, options: dict[str, Any]) -> None:
    fast, reference = both_ways(partial(decode_everything, frame, options))
    assert fast == reference


@given(st.data(), streams(), decoder_options)
def test_decode_random_streams(data: st.DataObject, stream: bytes, options: dict[str, Any]) -> None:
    chunks = split_at(stream, data.draw(split_points(stream)))
    fast, reference = both_ways(partial(outcome, partial(_feed, chunks, options)))
    assert fast == reference


def test_decode_table_under_a_low_int_max_str_digits(low_str_digits: None) -> None:
    # msgspec refuses more literals under CPython's lowest limit (640 digits): the same results still.
    for frame in DECODE_CORPUS:
        fast, reference = both_ways(partial(decode_everything, frame, {}))
        assert fast == reference, frame[:80]


# ---------------------------------------------------------------------------------------------------
# Encoding

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')


def _floats_as_repr(line: bytes) -> bytes:
    """``line`` with the text of each float literal (outside strings) rewritten as ``float.__repr__``:
    the contract lets float text differ as long as it reads back as the same float."""

    def one(match: re.Match[bytes]) -> bytes:
        token = match.group()
        if token.startswith(b'"') or not re.search(rb"[.eE]", token):
            return token
        return float.__repr__(float(token)).encode()

    return _TOKEN.sub(one, line)


def assert_same_encoding(fast: Any, reference: Any) -> None:
    if fast[0] == "returned" and reference[0] == "returned" and isinstance(fast[1], bytes):
        assert _floats_as_repr(fast[1]) == _floats_as_repr(reference[1])
        assert fast[1].count(b"\n") == reference[1].count(b"\n")
    else:
        assert fast == reference


class IntSub(int):
    pass


class StrSub(str):
    pass


class FloatSub(float):
    pass


class DictSub(dict[str, Any]):
    pass


class Colour(enum.IntEnum):
    RED = 1


class Plain(enum.Enum):
    A = "a"


@dataclasses.dataclass
class Point:
    x: int


def nested(depth: int, leaf: Any = 0) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


ENCODE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    *BIG,
    *(-v for v in BIG),
    -(2**63) - 1,
    10**MAX_INT_DIGITS - 1,
    -(10**MAX_INT_DIGITS - 1),
    10**MAX_INT_DIGITS,
    0.0,
    -0.0,
    0.1,
    1e16,
    1e-7,
    5e-324,
    1.7976931348623157e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    "",
    "plain",
    '"\\/\b\f\n\r\t\x00\x1f\x7f',
    "\u00e9\u2028\U0001f600\ufeff",
    "\ud800",
    "a\udfffb",
    [],
    {},
    (),
    (1, "a"),
    [1, "a", None, True, 2.5, {"k": [2**64]}],
    {"a": 1, "b": {"c": [None, "\u00e9"]}},
    {"\ud800": 1},
    {1: 2},
    {"a": 1, 2: "b"},
    [10**MAX_INT_DIGITS, {1: 2}],
    [{1: 2}, 10**MAX_INT_DIGITS],
    IntSub(5),
    StrSub("s"),
    FloatSub(1.5),
    DictSub(a=1),
    collections.OrderedDict(a=1),
    Colour.RED,
    Plain.A,
    {1, 2},
    b"bytes",
    bytearray(b"x"),
    uuid.UUID(int=1),
    datetime.date(2026, 1, 1),
    Point(1),
    object(),
    nested(254),
    nested(255),
    nested(253, []),
    nested(254, []),
    nested(254, ()),
    [nested(254)],
]


def encode_everything(value: Any) -> list[Any]:
    """Every encoder on ``value``, in each argument place it can take."""
    calls: list[Callable[[], Any]] = [
        partial(_pycore.encode, value),
        partial(_pycore.encode_many, [value, {"x": value}]),
        partial(_pycore.encode_request, 1, "m", value),
        partial(_pycore.encode_request, value, "m"),
        partial(_pycore.encode_request, 1, value),
        partial(_pycore.encode_notification, "m", value),
        partial(_pycore.encode_notification, value),
        partial(_pycore.encode_result, value, value),
        partial(_pycore.encode_result, "r", value),
        partial(_pycore.encode_error, value, -32600, "m"),
        partial(_pycore.encode_error, 1, value, "m", value),
        partial(_pycore.encode_error, None, -32603, "m", value),
        partial(_pycore.encode_error, "e", 1, value),
    ]
    return [outcome(call) for call in calls]


@pytest.mark.parametrize("value", ENCODE_VALUES, ids=lambda v: type(v).__name__)
def test_encode_table(value: Any) -> None:
    fast, reference = both_ways(partial(encode_everything, value))
    assert len(fast) == len(reference)
    for one, other in zip(fast, reference, strict=True):
        assert_same_encoding(one, other)


def test_encode_table_covers_both_outcomes() -> None:
    results = [result for value in ENCODE_VALUES for result in encode_everything(value)]
    raised = {(result[1].__name__, result[2].split(":")[0]) for result in results if result[0] == "raised"}
    assert sum(result[0] == "returned" for result in results) > 100
    assert {
        ("EncodeError", "Type is not JSON serializable"),
        ("EncodeError", "Dict key must be str"),
        ("EncodeError", "Recursion limit reached"),
        ("EncodeError", "str is not valid UTF-8"),
        ("EncodeError", f"Integer exceeds the limit of {MAX_INT_DIGITS} digits"),
    } <= raised
    assert any(cls == "TypeError" for cls, _ in raised)


@given(json_values)
def test_encode_random_values(value: Any) -> None:
    fast, reference = both_ways(partial(encode_everything, value))
    for one, other in zip(fast, reference, strict=True):
        assert_same_encoding(one, other)


@given(envelopes(hostile=False))
def test_encode_random_envelopes(envelope: dict[str, Any]) -> None:
    fast, reference = both_ways(partial(encode_everything, envelope))
    for one, other in zip(fast, reference, strict=True):
        assert_same_encoding(one, other)
