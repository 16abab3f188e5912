"""Encoders (contract: "Encoding"): exact bytes, value rules and ``EncodeError`` messages."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from decimal import Decimal
from types import ModuleType
from typing import Any

import pytest

from mcpframe.errors import EncodeError


class Int(int):
    pass


class Str(str):
    pass


class Dict(dict):  # type: ignore[type-arg]
    pass


class List(list):  # type: ignore[type-arg]
    pass


def nested(depth: int) -> Any:
    """``depth`` nested lists around ``0``."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


J = '{"jsonrpc":"2.0",'
BIG = "1180591620717411303424"  # 2**70

# (call name, args, expected line without its "\n")
ENVELOPES = [
    pytest.param(
        "encode_request", (1, "x", {"a": 1}), J + '"id":1,"method":"x","params":{"a":1}}', id="request"
    ),
    pytest.param("encode_request", ("a", "x"), J + '"id":"a","method":"x"}', id="request-no-params"),
    pytest.param("encode_request", (1, "x", None), J + '"id":1,"method":"x"}', id="request-none-params"),
    pytest.param(
        "encode_request", (0, "x", []), J + '"id":0,"method":"x","params":[]}', id="request-empty-list"
    ),
    pytest.param(
        "encode_request",
        (2**70, "m", (1, 2)),
        J + f'"id":{BIG},"method":"m","params":[1,2]}}',
        id="request-big",
    ),
    pytest.param(
        "encode_request", (-(2**64), "m"), J + '"id":-18446744073709551616,"method":"m"}', id="request-neg"
    ),
    pytest.param("encode_notification", ("x",), J + '"method":"x"}', id="notification"),
    pytest.param("encode_notification", ("x", None), J + '"method":"x"}', id="notification-none"),
    pytest.param(
        "encode_notification",
        ("n/\u00e9", {"k": [True, False, None]}),
        J + '"method":"n/\u00e9","params":{"k":[true,false,null]}}',
        id="notification-params",
    ),
    pytest.param("encode_result", ("a", None), J + '"id":"a","result":null}', id="result-null"),
    pytest.param("encode_result", (3, {"content": []}), J + '"id":3,"result":{"content":[]}}', id="result"),
    pytest.param("encode_result", (3, "s"), J + '"id":3,"result":"s"}', id="result-scalar"),
    pytest.param(
        "encode_error",
        (None, -32600, "m"),
        J + '"id":null,"error":{"code":-32600,"message":"m"}}',
        id="error",
    ),
    pytest.param(
        "encode_error",
        (None, -32600, "m", {"x": 1}),
        J + '"id":null,"error":{"code":-32600,"message":"m","data":{"x":1}}}',
        id="error-data",
    ),
    pytest.param(
        "encode_error",
        (7, 1, "m", None),
        J + '"id":7,"error":{"code":1,"message":"m","data":null}}',
        id="data-none",
    ),
    pytest.param(
        "encode_error",
        ("e", 2**70, 'a"b'),
        J + f'"id":"e","error":{{"code":{BIG},"message":"a\\"b"}}}}',
        id="big",
    ),
    pytest.param("encode", ({"a": 1},), '{"a":1}', id="encode-dict"),
    pytest.param(
        "encode", ({"jsonrpc": "2.0", "id": 1, "result": 2},), J + '"id":1,"result":2}', id="encode-as-is"
    ),
    pytest.param("encode", ({"b": 1, "a": 2},), '{"b":1,"a":2}', id="encode-keeps-key-order"),
    pytest.param("encode", ([1, "2"],), '[1,"2"]', id="encode-list"),
    pytest.param("encode", ("x",), '"x"', id="encode-str"),
    pytest.param("encode", (None,), "null", id="encode-none"),
    pytest.param("encode", ({},), "{}", id="encode-empty"),
]


@pytest.mark.parametrize(("name", "args", "expected"), ENVELOPES)
def test_encoder_bytes(backend: ModuleType, name: str, args: tuple[Any, ...], expected: str) -> None:
    assert getattr(backend, name)(*args) == expected.encode() + b"\n"


def test_encode_error_without_data_omits_it(backend: ModuleType) -> None:
    line = backend.encode_error(1, -32601, "Method not found")
    assert line == b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}\n'


# (value, expected JSON text of the value)
VALUES = [
    pytest.param('"\\/', '"\\"\\\\/"', id="quote-backslash-slash"),
    pytest.param("\n\r\t\b\f", '"\\n\\r\\t\\b\\f"', id="short-escapes"),
    pytest.param("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"', id="control-escapes"),
    pytest.param("\x7f", '"\x7f"', id="del-raw"),
    pytest.param("\u00e9\u2028\u2029\U0001f600", '"\u00e9\u2028\u2029\U0001f600"', id="non-ascii-raw"),
    pytest.param("\ufeff", '"\ufeff"', id="bom-char-raw"),
    pytest.param(2**64, "18446744073709551616", id="2**64"),
    pytest.param(2**63 - 1, "9223372036854775807", id="i64-max"),
    pytest.param(-(2**63), "-9223372036854775808", id="i64-min"),
    pytest.param(-(2**63) - 1, "-9223372036854775809", id="below-i64"),
    pytest.param(10**40, "1" + "0" * 40, id="10**40"),
    pytest.param(True, "true", id="true"),
    pytest.param(False, "false", id="false"),
    pytest.param(None, "null", id="none"),
    pytest.param(float("nan"), "null", id="nan"),
    pytest.param(float("inf"), "null", id="inf"),
    pytest.param(float("-inf"), "null", id="-inf"),
    pytest.param((1, (2,)), "[1,[2]]", id="tuple"),
    pytest.param(Int(5), "5", id="int-subclass"),
    pytest.param(Str("s"), '"s"', id="str-subclass"),
    pytest.param(Dict(a=1), '{"a":1}', id="dict-subclass"),
    pytest.param(OrderedDict([("z", 1), ("a", 2)]), '{"z":1,"a":2}', id="ordered-dict"),
    pytest.param(List([1]), "[1]", id="list-subclass"),
    pytest.param({Str("k"): 1}, '{"k":1}', id="str-subclass-key"),
    pytest.param({"": [], "\n": {}}, '{"":[],"\\n":{}}', id="odd-keys"),
    pytest.param(nested(254), "[" * 254 + "0" + "]" * 254, id="254-nested"),
]


@pytest.mark.parametrize(("value", "text"), VALUES)
def test_value_encoding(backend: ModuleType, value: object, text: str) -> None:
    assert backend.encode(value) == text.encode() + b"\n"
    assert backend.encode_result(1, value) == b'{"jsonrpc":"2.0","id":1,"result":' + text.encode() + b"}\n"


FLOATS = [0.0, -0.0, 1.0, 0.1, 1.5, -2.25, 1e300, 1e-300, 5e-324, 1.7976931348623157e308, 2.0**53 + 2, 1 / 3]


@pytest.mark.parametrize("value", FLOATS, ids=repr)
def test_floats_round_trip(backend: ModuleType, value: float) -> None:
    line = backend.encode([value])
    decoded = json.loads(line)[0]
    assert type(decoded) is float
    assert decoded == value
    assert math.copysign(1.0, decoded) == math.copysign(1.0, value)
    assert b"\n" not in line[:-1]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param({1, 2}, "Type is not JSON serializable: set", id="set"),
        pytest.param(b"x", "Type is not JSON serializable: bytes", id="bytes"),
        pytest.param(bytearray(b"x"), "Type is not JSON serializable: bytearray", id="bytearray"),
        pytest.param(object(), "Type is not JSON serializable: object", id="object"),
        pytest.param(Decimal("1.5"), "Type is not JSON serializable: Decimal", id="decimal"),
        pytest.param({"a": [1, {"b": frozenset()}]}, "Type is not JSON serializable: frozenset", id="deep"),
        pytest.param({1: "a"}, "Dict key must be str", id="int-key"),
        pytest.param({None: "a"}, "Dict key must be str", id="none-key"),
        pytest.param({("a",): 1}, "Dict key must be str", id="tuple-key"),
        pytest.param(nested(255), "Recursion limit reached", id="255-nested"),
        pytest.param([{"a": nested(300)}], "Recursion limit reached", id="deep-inside"),
        pytest.param("\ud800", "str is not valid UTF-8: surrogates not allowed", id="lone-surrogate"),
        pytest.param({"\udfff": 1}, "str is not valid UTF-8: surrogates not allowed", id="surrogate-key"),
        pytest.param(
            ["ok", "a\udc80b"], "str is not valid UTF-8: surrogates not allowed", id="surrogate-in-list"
        ),
    ],
)
def test_encode_errors(backend: ModuleType, value: object, message: str) -> None:
    with pytest.raises(EncodeError) as info:
        backend.encode(value)
    assert str(info.value) == message
    assert isinstance(info.value, TypeError)
    with pytest.raises(EncodeError, match=f"^{re.escape(message)}$"):
        backend.encode_result(1, value)


def test_self_reference_hits_recursion_limit(backend: ModuleType) -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(EncodeError, match=r"^Recursion limit reached$"):
        backend.encode(loop)


@pytest.mark.parametrize("name", ["encode_request", "encode_notification", "encode_result", "encode_error"])
def test_envelope_payload_errors(backend: ModuleType, name: str) -> None:
    call = {
        "encode_request": lambda v: backend.encode_request(1, "m", v),
        "encode_notification": lambda v: backend.encode_notification("m", v),
        "encode_result": lambda v: backend.encode_result(1, v),
        "encode_error": lambda v: backend.encode_error(1, 1, "m", v),
    }[name]
    with pytest.raises(EncodeError, match=r"^Type is not JSON serializable: set$"):
        call({"a": {1}})
    with pytest.raises(EncodeError, match=r"^Recursion limit reached$"):
        call(nested(255))
    # The limit counts the containers inside the payload value, not the envelope around it.
    assert json.loads(call(nested(254)))


def test_surrogate_in_method_or_message(backend: ModuleType) -> None:
    surrogates = r"^str is not valid UTF-8: surrogates not allowed$"
    with pytest.raises(EncodeError, match=surrogates):
        backend.encode_request(1, "\ud800")
    with pytest.raises(EncodeError, match=surrogates):
        backend.encode_notification("\ud800")
    with pytest.raises(EncodeError, match=surrogates):
        backend.encode_error(1, 1, "\ud800")
    with pytest.raises(EncodeError, match=surrogates):
        backend.encode_request("\ud800", "m")


@pytest.mark.parametrize("name", ["encode_request", "encode_result", "encode_error"])
@pytest.mark.parametrize("bad_id", [True, False], ids=["true", "false"])
def test_bool_id_is_refused(backend: ModuleType, name: str, bad_id: bool) -> None:
    args: tuple[Any, ...] = {
        "encode_request": (bad_id, "m"),
        "encode_result": (bad_id, 1),
        "encode_error": (bad_id, 1, "m"),
    }[name]
    with pytest.raises(TypeError):
        getattr(backend, name)(*args)


@pytest.mark.parametrize("bad_id", [1.0, [1], {"a": 1}], ids=["float", "list", "dict"])
def test_non_id_types_are_refused(backend: ModuleType, bad_id: object) -> None:
    with pytest.raises(TypeError):
        backend.encode_request(bad_id, "m")
    with pytest.raises(TypeError):
        backend.encode_result(bad_id, 1)


def test_non_str_method_is_refused(backend: ModuleType) -> None:
    with pytest.raises(TypeError):
        backend.encode_request(1, 5)
    with pytest.raises(TypeError):
        backend.encode_notification(None)


def test_encode_many(backend: ModuleType) -> None:
    messages = [{"jsonrpc": "2.0", "method": "a"}, {"jsonrpc": "2.0", "id": 1, "result": "\n"}]
    expected = b'{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","id":1,"result":"\\n"}\n'
    assert backend.encode_many(messages) == expected
    assert backend.encode_many(iter(messages)) == expected
    assert backend.encode_many(m for m in messages) == expected
    assert backend.encode_many([]) == b""
    assert backend.encode_many(messages) == b"".join(backend.encode(m) for m in messages)


def test_encode_many_propagates_errors(backend: ModuleType) -> None:
    with pytest.raises(EncodeError, match=r"^Dict key must be str$"):
        backend.encode_many([{"a": 1}, {2: 1}])


# ---- argument-check order: the leftmost bad argument decides (contract: "Encoding") -------------

SURROGATES = "str is not valid UTF-8: surrogates not allowed"

# Bad values of each argument: (label, value, class, message). A TypeError's message is only pinned
# to start with the argument's name; an EncodeError's message is the contract's.
BAD_ARGS: dict[str, list[tuple[str, object, type[Exception], str]]] = {
    "id": [
        ("float", 1.5, TypeError, "id "),
        ("bool", True, TypeError, "id "),
        ("surrogate", "\ud800", EncodeError, SURROGATES),
    ],
    "method": [("none", None, TypeError, "method "), ("surrogate", "\udc00", EncodeError, SURROGATES)],
    "code": [("bool", True, TypeError, "code "), ("str", "1", TypeError, "code ")],
    "message": [("int", 5, TypeError, "message "), ("surrogate", "\udfff", EncodeError, SURROGATES)],
    "value": [
        ("object", object(), EncodeError, "Type is not JSON serializable: object"),
        ("int-key", {1: 2}, EncodeError, "Dict key must be str"),
        ("surrogate", ["\ud83d"], EncodeError, SURROGATES),
        ("too-deep", nested(255), EncodeError, "Recursion limit reached"),
    ],
}

# encoder -> its positional arguments: (name, kind of bad values, a good value)
ENCODER_ARGS: dict[str, list[tuple[str, str, object]]] = {
    "encode_request": [("id", "id", 1), ("method", "method", "m"), ("params", "value", {"a": 1})],
    "encode_notification": [("method", "method", "m"), ("params", "value", [1])],
    "encode_result": [("id", "id", "r"), ("result", "value", None)],
    "encode_error": [
        ("id", "id", None),
        ("code", "code", -32600),
        ("message", "message", "m"),
        ("data", "value", {"d": 1}),
    ],
}


def _bad_argument_cases() -> Iterator[Any]:
    """Every encoder with every pair, triple, ... of bad arguments, and the failure expected: the
    leftmost bad argument's own."""
    for name, params in ENCODER_ARGS.items():
        for count in range(2, len(params) + 1):
            for chosen in itertools.combinations(range(len(params)), count):
                choices = [BAD_ARGS[params[i][1]] for i in chosen]
                for bads in itertools.product(*choices):
                    args = [good for _, _, good in params]
                    for i, (_, value, _, _) in zip(chosen, bads, strict=True):
                        args[i] = value
                    label = "-".join(f"{params[i][0]}:{bad[0]}" for i, bad in zip(chosen, bads, strict=True))
                    _, _, kind, message = bads[0]
                    yield pytest.param(name, tuple(args), kind, message, id=f"{name}-{label}")


@pytest.mark.parametrize(("name", "args", "kind", "message"), list(_bad_argument_cases()))
def test_leftmost_bad_argument_decides(
    backend: ModuleType, name: str, args: tuple[Any, ...], kind: type[Exception], message: str
) -> None:
    with pytest.raises(TypeError) as info:  # EncodeError is a TypeError too: the exact class is checked
        getattr(backend, name)(*args)
    assert type(info.value) is kind
    if kind is EncodeError:
        assert str(info.value) == message
    else:
        assert str(info.value).startswith(message)


def _bad_then_raising() -> Iterator[Any]:
    yield {"ok": 1}
    yield {"a": {2}}
    raise AssertionError("encode_many read past the first bad message")


@pytest.mark.parametrize(
    ("name", "make_arg", "message"),
    [
        pytest.param(
            "encode", lambda: {"a": object(), 1: 2}, "Type is not JSON serializable: object", id="value-first"
        ),
        pytest.param("encode", lambda: {1: 2, "a": object()}, "Dict key must be str", id="key-first"),
        pytest.param("encode", lambda: [["\ud800"], nested(255)], SURROGATES, id="surrogate-before-depth"),
        pytest.param("encode_many", lambda: [{2: 1}, object()], "Dict key must be str", id="many-first"),
        pytest.param("encode_many", _bad_then_raising, "Type is not JSON serializable: set", id="many-lazy"),
    ],
)
def test_first_failure_in_one_value_wins(
    backend: ModuleType, name: str, make_arg: Callable[[], object], message: str
) -> None:
    with pytest.raises(EncodeError) as info:
        getattr(backend, name)(make_arg())
    assert str(info.value) == message


def test_lines_decode_back(backend: ModuleType) -> None:
    params = {"text": "line1\nline2\r\n\u2028", "n": [2**70, -1, 0.5], "e": {}}
    lines = (
        backend.encode_request(1, "tools/call", params)
        + backend.encode_notification("notifications/progress", {"p": 1})
        + backend.encode_result("r", params)
        + backend.encode_error(None, -32700, "Parse error", params)
    )
    assert lines.count(b"\n") == 4
    assert b"\r" not in lines
    decoder = backend.Decoder()
    request, note, result, error = decoder.feed(lines)
    assert (request.kind, request.id, request.params) == ("request", 1, params)
    assert (note.kind, note.params) == ("notification", {"p": 1})
    assert (result.kind, result.id, result.result) == ("result", "r", params)
    assert (error.kind, error.id, error.error) == (
        "error",
        None,
        {"code": -32700, "message": "Parse error", "data": params},
    )
