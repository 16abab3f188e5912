"""`plain_call` (docs/core-contract.md): the listening proxy's read of a POST body that is one plain request,
the same from both backends, and what each part of its rule declines."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import load


@pytest.fixture(scope="module")
def backends() -> tuple[Any, Any]:
    """Both backends (module-scoped: hypothesis runs the test many times with one fixture value)."""
    return load("native"), load("python")


PLAIN = [
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"-0"}}', 7, "tools/call"),
    (b'{"jsonrpc":"2.0","id":"x-1","method":"echo"}', "x-1", "echo"),
    (b'{"jsonrpc":"2.0","id":0,"method":"m\\u00e9"}', 0, "m\u00e9"),  # an escaped method: decoded
    (b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"m"}', 2**64 + 1, "m"),
    (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"t":"a\\"progressToken"}}', 1, "m"),
    (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"other":1}}}', 1, "m"),
]

NOT_PLAIN = [
    b'{"jsonrpc":"2.0","id":-0,"method":"m"}',
    b'{"jsonrpc":"2.0","id":"\\u0041","method":"m"}',
    b'{"jsonrpc":"2.0","id":"a\\/b","method":"m"}',
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    b'{"jsonrpc":"2.0","id":1,"result":{}}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}',
    b'[{"jsonrpc":"2.0","id":1,"method":"m"}]',
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":1}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progress\\u0054oken":"t"}}}',
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"m"}',
    b'{"jsonrpc":"2.0","id":1,',
    b'{"jsonrpc":"1.0","id":1,"method":"m"}',
    b"  \n",
    b"",
]


@pytest.mark.parametrize(("body", "rid", "method"), PLAIN)
def test_a_plain_call_gives_its_id_method_and_line(backends: Any, body: bytes, rid: Any, method: str) -> None:
    for backend in backends:
        found = backend.plain_call(body, 1 << 20)
        assert found == (rid, method, body + b"\n"), backend.__name__
        assert type(found[0]) is type(rid)


@pytest.mark.parametrize("body", NOT_PLAIN)
def test_what_is_not_a_plain_call_is_none(backends: Any, body: bytes) -> None:
    for backend in backends:
        assert backend.plain_call(body, 1 << 20) is None, backend.__name__


def test_the_line_is_one_ndjson_line_and_the_frame_limit_holds(backends: Any) -> None:
    body = b'{\r\n "jsonrpc":"2.0",\n"id":1,"method":"m"}\r\n \t'
    for backend in backends:
        assert backend.plain_call(body, 1 << 20) == (1, "m", b'{   "jsonrpc":"2.0", "id":1,"method":"m"}\n')
        assert backend.plain_call(body, len(body)) is not None
        assert backend.plain_call(body, len(body) - 1) is None
        with pytest.raises(TypeError):
            backend.plain_call(bytearray(body), 1 << 20)


_IDS = st.one_of(st.integers(), st.text(max_size=8))
_PARAMS = st.dictionaries(
    st.sampled_from(["a", "_meta", "progressToken", "b"]), st.integers() | st.text(max_size=6)
)


@given(call=st.tuples(_IDS, st.text(max_size=8), _PARAMS), meta=st.booleans(), ascii_only=st.booleans())
def test_both_backends_agree(
    backends: Any, call: tuple[Any, str, dict[str, Any]], meta: bool, ascii_only: bool
) -> None:
    rid, method, params = call
    if meta:
        params = {"_meta": dict(params)}
    body = json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, ensure_ascii=ascii_only
    ).encode()
    native, python = (backend.plain_call(body, 1 << 20) for backend in backends)
    assert native == python
