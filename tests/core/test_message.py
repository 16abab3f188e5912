"""``Message`` attributes (eager and lazy), ids, ``with_id`` and ``splice_id``."""

from __future__ import annotations

from types import ModuleType

import pytest

from ._support import canon_value, stream

LAZY = pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])

SPACED = b'{ "jsonrpc" : "2.0" , "id" : 7 , "method" : "tools/call" , "params" : { "a" : [ 1 , 2.5 ] } }'

# (frame, expected attributes); raw is the frame itself, offset 0, batch None.
ATTRIBUTES = [
    pytest.param(
        SPACED,
        {
            "kind": "request",
            "id": 7,
            "method": "tools/call",
            "params": {"a": [1, 2.5]},
            "raw_id": b"7",
            "raw_params": b'{ "a" : [ 1 , 2.5 ] }',
        },
        id="request-spaced",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        {"kind": "notification", "method": "notifications/initialized"},
        id="notification-no-params",
    ),
    pytest.param(
        b'{"method":"n","params":[],"jsonrpc":"2.0"}',
        {"kind": "notification", "method": "n", "params": [], "raw_params": b"[]"},
        id="notification-member-order",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"a\\"b","result":{"x":null}}',
        {
            "kind": "result",
            "id": 'a"b',
            "result": {"x": None},
            "raw_id": b'"a\\"b"',
            "raw_result": b'{"x":null}',
        },
        id="result-escaped-id",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":null}',
        {"kind": "result", "id": 1, "raw_id": b"1", "raw_result": b"null"},
        id="result-null",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":2,"result":\t"\\u00e9\\ud83d\\ude00" }',
        {
            "kind": "result",
            "id": 2,
            "result": "\u00e9\U0001f600",
            "raw_id": b"2",
            "raw_result": b'"\\u00e9\\ud83d\\ude00"',
        },
        id="result-string-escapes",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":[1]}}',
        {
            "kind": "error",
            "error": {"code": -32700, "message": "bad", "data": [1]},
            "raw_id": b"null",
            "raw_error": b'{"code":-32700,"message":"bad","data":[1]}',
        },
        id="error-null-id",
    ),
    pytest.param(
        b'{"error":{"message":"m","code":5},"id":"x","jsonrpc":"2.0"}',
        {
            "kind": "error",
            "id": "x",
            "error": {"message": "m", "code": 5},
            "raw_id": b'"x"',
            "raw_error": b'{"message":"m","code":5}',
        },
        id="error-member-order",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":{"id":5},"id":9}',
        {
            "kind": "request",
            "id": 9,
            "method": "m",
            "params": {"id": 5},
            "raw_id": b"9",
            "raw_params": b'{"id":5}',
        },
        id="nested-id-ignored",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"\\"id\\":1","id":2}',
        {"kind": "request", "id": 2, "method": '"id":1', "raw_id": b"2"},
        id="id-in-string",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}',
        {"kind": "request", "id": 2, "method": "m", "raw_id": b"2"},
        id="duplicate-id-last-wins",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1180591620717411303424,"method":"m"}',
        {"kind": "request", "id": 2**70, "method": "m", "raw_id": b"1180591620717411303424"},
        id="big-int-id",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":-1180591620717411303424,"result":1}',
        {
            "kind": "result",
            "id": -(2**70),
            "result": 1,
            "raw_id": b"-1180591620717411303424",
            "raw_result": b"1",
        },
        id="big-negative-id",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":-0,"method":"m"}',
        {"kind": "request", "id": 0, "method": "m", "raw_id": b"-0"},
        id="minus-zero-id",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"1","method":"m"}',
        {"kind": "request", "id": "1", "method": "m", "raw_id": b'"1"'},
        id="string-one-id",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":[18446744073709551616,-9223372036854775809,1e400]}',
        {
            "kind": "request",
            "id": 1,
            "method": "m",
            "raw_id": b"1",
            "params": [2**64, -(2**63) - 1, float("inf")],
            "raw_params": b"[18446744073709551616,-9223372036854775809,1e400]",
        },
        id="big-values",
    ),
]


def expected_attributes(frame: bytes, partial: dict[str, object], lazy: bool) -> dict[str, object]:
    full: dict[str, object] = dict.fromkeys(
        ("id", "method", "params", "result", "error", "raw_id", "raw_params", "raw_result", "raw_error")
    )
    full.update(partial)
    full.update(raw=frame, offset=0, batch=None, lazy=lazy)
    return full


@pytest.mark.parametrize(("frame", "partial"), ATTRIBUTES)
@LAZY
def test_message_attributes(
    backend: ModuleType, lazy: bool, frame: bytes, partial: dict[str, object]
) -> None:
    (message,) = stream(backend, frame + b"\n", lazy=lazy)
    expected = expected_attributes(frame, partial, lazy)
    actual = {name: getattr(message, name) for name in expected}
    assert {k: canon_value(v) for k, v in actual.items()} == {k: canon_value(v) for k, v in expected.items()}


@pytest.mark.parametrize(("frame", "partial"), ATTRIBUTES)
def test_eager_equals_lazy(backend: ModuleType, frame: bytes, partial: dict[str, object]) -> None:
    (eager,) = backend.decode(frame)
    (lazy,) = backend.decode(frame, lazy=True)
    assert (eager.lazy, lazy.lazy) == (False, True)
    assert eager == lazy
    assert lazy == eager
    for name in ("params", "result", "error"):
        assert canon_value(getattr(lazy, name)) == canon_value(getattr(eager, name)), name


def test_lazy_value_is_cached(backend: ModuleType) -> None:
    (message,) = backend.decode(SPACED, lazy=True)
    first = message.params
    assert first == {"a": [1, 2.5]}
    assert message.params is first
    (result,) = backend.decode(b'{"jsonrpc":"2.0","id":1,"result":[1]}', lazy=True)
    assert result.result is result.result


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        pytest.param(
            b'{"jsonrpc":"2.0","method":"m","params":[1,}', "Parse error: invalid JSON", id="syntax"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1,"result":"\xff"}',
            "Parse error: invalid UTF-8 at byte 34 of the frame",
            id="utf8",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"m","params":' + b"[" * 128 + b"]" * 128 + b"}",
            "Parse error: nesting deeper than 128 levels",
            id="depth",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1,"result":"\\ud800"}', "Parse error: invalid JSON", id="surrogate"
        ),
    ],
)
def test_lazy_payload_checked_during_feed(backend: ModuleType, frame: bytes, message: str) -> None:
    decoder = backend.Decoder(lazy=True)
    (error,) = decoder.feed(frame + b"\n")
    assert (error.code, error.message) == (-32700, message)


def test_offsets_and_batch_indices(backend: ModuleType) -> None:
    one = b'{"jsonrpc":"2.0","method":"a"}'
    two = b'{"jsonrpc":"2.0","id":1,"result":2}'
    data = b"\xef\xbb\xbf" + one + b"\r\n\n[" + two + b", " + one + b"]\n"
    first, second, third = stream(backend, data)
    assert (first.offset, first.batch) == (3, None)
    assert (second.offset, second.batch, second.raw) == (3 + len(one) + 4, 0, two)
    assert (third.offset, third.batch, third.raw) == (3 + len(one) + 4 + len(two) + 2, 1, one)


def test_message_equality(backend: ModuleType) -> None:
    frame = b'{"jsonrpc":"2.0","id":1,"method":"m"}'
    (one,) = backend.decode(frame)
    (two,) = backend.decode(frame)
    (shifted,) = stream(backend, b"\n" + frame)
    (other_id,) = backend.decode(frame.replace(b"1", b'"1"'))
    (in_batch,) = backend.decode(b"[" + frame + b"]")
    assert one == two
    assert one != shifted
    assert one != other_id
    assert in_batch != one


def test_message_repr(backend: ModuleType) -> None:
    (message,) = backend.decode(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"secret":1}}')
    assert repr(message) == "Message(kind='request', id=1, method='tools/call')"


def test_message_is_immutable_and_not_constructible(backend: ModuleType) -> None:
    (message,) = backend.decode(b'{"jsonrpc":"2.0","id":1,"method":"m"}')
    with pytest.raises((AttributeError, TypeError)):
        message.id = 2
    with pytest.raises(TypeError):
        backend.Message()


def test_id_types_distinct(backend: ModuleType) -> None:
    int_one, str_one = backend.decode(
        b'[{"jsonrpc":"2.0","id":1,"result":0},{"jsonrpc":"2.0","id":"1","result":0}]'
    )
    assert (type(int_one.id), type(str_one.id)) == (int, str)
    assert int_one.id != str_one.id


# ---- with_id / splice_id ----------------------------------------------------------------------

# (frame, new id, expected bytes)
WITH_ID = [
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"method":"m"}', 42, b'{"jsonrpc":"2.0","id":42,"method":"m"}', id="int"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"method":"m"}',
        "abc",
        b'{"jsonrpc":"2.0","id":"abc","method":"m"}',
        id="str",
    ),
    pytest.param(
        b'{ "id" : "old" , "jsonrpc":"2.0","method":"m" ,"params":{"id":1}}',
        7,
        b'{ "id" : 7 , "jsonrpc":"2.0","method":"m" ,"params":{"id":1}}',
        id="whitespace-kept",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","method":"m","params":{"id":1},"id":2}',
        2**70,
        b'{"jsonrpc":"2.0","method":"m","params":{"id":1},"id":1180591620717411303424}',
        id="big-int-nested-id-kept",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":-5,"result":{"id":-5}}',
        'q"\\\n\u00e9',
        '{"jsonrpc":"2.0","id":"q\\"\\\\\\n\u00e9","result":{"id":-5}}'.encode(),
        id="escaped-str",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}',
        -1,
        b'{"jsonrpc":"2.0","id":-1,"error":{"code":1,"message":"m"}}',
        id="error-response",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"\\u0031","method":"\\"id\\":3"}',
        3,
        b'{"jsonrpc":"2.0","id":3,"method":"\\"id\\":3"}',
        id="escaped-old-id",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"method":"\xc3\xa9"}',
        "\u00e9",
        b'{"jsonrpc":"2.0","id":"\xc3\xa9","method":"\xc3\xa9"}',
        id="utf8",
    ),
]


@pytest.mark.parametrize(("frame", "new_id", "expected"), WITH_ID)
@LAZY
def test_with_id(backend: ModuleType, lazy: bool, frame: bytes, new_id: object, expected: bytes) -> None:
    (message,) = backend.decode(frame, lazy=lazy)
    assert message.with_id(new_id) == expected
    assert message.raw == frame  # unchanged


@pytest.mark.parametrize(("frame", "new_id", "expected"), WITH_ID)
def test_splice_id(backend: ModuleType, frame: bytes, new_id: object, expected: bytes) -> None:
    assert backend.splice_id(frame, new_id) == expected
    (respliced,) = backend.decode(expected)
    assert respliced.id == new_id


def test_with_id_on_batch_element(backend: ModuleType) -> None:
    element = b'{"jsonrpc":"2.0","id":1,"method":"m"}'
    _, second = backend.decode(b'[{"jsonrpc":"2.0","method":"n"},' + element + b"]")
    assert second.with_id("z") == b'{"jsonrpc":"2.0","id":"z","method":"m"}'


@pytest.mark.parametrize(
    "frame",
    [b'{"jsonrpc":"2.0","method":"m"}', b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}'],
    ids=["notification", "error-null-id"],
)
def test_with_id_without_id(backend: ModuleType, frame: bytes) -> None:
    (message,) = backend.decode(frame)
    with pytest.raises(ValueError, match=r"^message has no id$"):
        message.with_id(1)
    with pytest.raises(ValueError, match=r"^message has no id$"):
        backend.splice_id(frame, 1)


@pytest.mark.parametrize("bad", [True, 1.5, None, [1]], ids=["bool", "float", "none", "list"])
def test_with_id_rejects_non_id(backend: ModuleType, bad: object) -> None:
    frame = b'{"jsonrpc":"2.0","id":1,"method":"m"}'
    (message,) = backend.decode(frame)
    with pytest.raises(TypeError):
        message.with_id(bad)
    with pytest.raises(TypeError):
        backend.splice_id(frame, bad)


@pytest.mark.parametrize(
    "frame",
    [
        b"{",
        b"",
        b"[]",
        b'[{"jsonrpc":"2.0","id":1,"method":"m"}]',
        b'{"id":1,"method":"m"}',
        b'{"jsonrpc":"2.0","id":1.5,"result":1}',
        b'{"jsonrpc":"2.0","id":1,"method":"m"}\n{"jsonrpc":"2.0","id":2,"method":"m"}',
        b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
        b"7",
    ],
    ids=repr,
)
def test_splice_id_invalid_frame(backend: ModuleType, frame: bytes) -> None:
    with pytest.raises(ValueError, match=r"^frame is not a valid JSON-RPC message$"):
        backend.splice_id(frame, 1)
