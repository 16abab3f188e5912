"""``value_span``: the byte span of a value found by a key path (a proxy splices progress tokens by it)."""

from __future__ import annotations

import json
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TOKEN = ("params", "_meta", "progressToken")


def _request(params: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + params + b"}"


def _value(backend: ModuleType, frame: bytes, path: tuple[str, ...] = TOKEN) -> bytes | None:
    span = backend.value_span(frame, path)
    return None if span is None else frame[span[0] : span[1]]


@pytest.mark.parametrize(
    ("params", "token"),
    [
        (b'{"_meta":{"progressToken":7}}', b"7"),
        (b'{"_meta":{"progressToken":"abc"}}', b'"abc"'),
        (b'{"_meta":{"progressToken":"a\\"b\\\\c\\u00e9"}}', b'"a\\"b\\\\c\\u00e9"'),
        (b'{"_meta":{"progressToken":9223372036854775807}}', b"9223372036854775807"),
        (b'{"_meta":{"progressToken":9223372036854775808}}', b"9223372036854775808"),
        (b'{"_meta":{"progressToken":18446744073709551616}}', b"18446744073709551616"),
        (b'{"_meta":{"progressToken":-18446744073709551617}}', b"-18446744073709551617"),
        # nested _meta with other keys, and a progressToken one level too deep that must not match
        (b'{"name":"x","_meta":{"a":{"progressToken":1},"progressToken":2,"z":[3]},"arguments":{}}', b"2"),
        # whitespace everywhere the grammar allows it
        (b' { "_meta" :\n{\t"progressToken"\r\n:  "t" } } ', b'"t"'),
        # an escaped key is the same key; of duplicates the last one wins
        (b'{"_meta":{"progress\\u0054oken":5}}', b"5"),
        (b'{"_meta":{"progressToken":1,"progressToken":{"x":[1]}}}', b'{"x":[1]}'),
        (b'{"_meta":{"progressToken":1},"_meta":{"other":2}}', None),
    ],
)
def test_the_token_span(backend: ModuleType, params: bytes, token: bytes | None) -> None:
    assert _value(backend, _request(params)) == token


@pytest.mark.parametrize(
    "params",
    [
        b'{"q":"{\\"_meta\\":{\\"progressToken\\":1}}"}',  # a string that looks like JSON
        b'{"arguments":{"_meta":{"progressToken":1}}}',  # the right keys in the wrong place
        b'[{"_meta":{"progressToken":1}}]',
        b'{"_meta":[1]}',
        b'{"_meta":"progressToken"}',
        b"{}",
        b'{"_meta":{}}',
    ],
)
def test_no_token(backend: ModuleType, params: bytes) -> None:
    assert backend.value_span(_request(params), TOKEN) is None


def test_other_paths_and_kinds(backend: ModuleType) -> None:
    note = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}'
    assert _value(backend, note, ("params", "progressToken")) == b"3"
    assert _value(backend, note, ("params",)) == b'{"progressToken":3,"progress":1}'
    error = b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}'
    assert _value(backend, error, ["error", "message"]) == b'"m"'
    assert backend.value_span(b'{"jsonrpc":"2.0","method":"m"}', ("params", "x")) is None


def test_a_bom_is_counted(backend: ModuleType) -> None:
    frame = b'\xef\xbb\xbf{"jsonrpc":"2.0","id":7,"method":"m"}'
    assert backend.value_span(frame, ("id",)) == (25, 26)


@pytest.mark.parametrize(
    ("frame", "path", "error", "message"),
    [
        (bytearray(b"{}"), ("id",), TypeError, "frame must be bytes, not bytearray"),
        (b"{}", "id", TypeError, "path must be a sequence of str, not a str"),
        (b"{}", (1,), TypeError, "path must be a sequence of str"),
        (b"{}", (), ValueError, "path must not be empty"),
        (b'{"id":1}', ("id",), ValueError, "frame is not a valid JSON-RPC message"),
        (b'[{"jsonrpc":"2.0","method":"m"}]', ("id",), ValueError, "frame is not a valid"),
        (b'{"jsonrpc":"2.0","method":"m"', ("id",), ValueError, "frame is not a valid"),
    ],
)
def test_refusals(
    backend: ModuleType, frame: object, path: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        backend.value_span(frame, path)


def test_a_spliced_frame_equals_the_original_but_the_token(backend: ModuleType) -> None:
    frame = _request(b'{"a":"progressToken","_meta":{"progressToken": "client-1" ,"k":1}}')
    start, end = backend.value_span(frame, TOKEN)
    spliced = frame[:start] + b"42" + frame[end:]
    assert spliced == _request(b'{"a":"progressToken","_meta":{"progressToken": 42 ,"k":1}}')
    assert json.loads(spliced)["params"]["_meta"]["progressToken"] == 42


_keys = st.sampled_from(["params", "_meta", "progressToken", "p\u00e9", 'q"'])
_json = st.recursive(
    st.none() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)


_MISSING = object()


def _lookup(value: object, keys: tuple[str, ...]) -> object:
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the backends are stateless
@given(params=st.dictionaries(_keys, _json, max_size=4), indent=st.sampled_from([None, 0, 2]))
def test_both_backends_agree(
    both_backends: tuple[ModuleType, ModuleType], params: dict[str, object], indent: int | None
) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": params}
    frame = json.dumps(message, indent=indent).encode()
    native, python = both_backends
    for path in (TOKEN, ("params", "_meta"), ("params", "progressToken")):
        span = native.value_span(frame, path)
        assert span == python.value_span(frame, path)
        found = _lookup(message, path)
        if span is None:
            assert found is _MISSING
        else:
            assert json.loads(frame[span[0] : span[1]]) == found
