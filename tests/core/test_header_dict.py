"""`header_dict` (docs/core-contract.md): a request's headers as the HTTP host reads them, the same from both
backends, and the same as the comprehension `mcpframe.http.asgi.header_dict` falls back on."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import load

from mcpframe.http.asgi import header_dict


@pytest.fixture(scope="module")
def backends() -> tuple[Any, Any]:
    """Both backends (module-scoped: hypothesis runs the test many times with one fixture value)."""
    return load("native"), load("python")


def _reference(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(raw)}


_NAMES = st.sampled_from(
    [b"host", b"origin", b"accept", b"mcp-session-id", b"x-other", b"Host", b"\xe9t\xe9"]
)
_PAIRS = st.lists(st.tuples(st.one_of(_NAMES, st.binary(max_size=12)), st.binary(max_size=40)), max_size=12)


@given(raw=_PAIRS)
def test_both_backends_read_headers_as_the_comprehension_does(backends: Any, raw: list[Any]) -> None:
    expected = _reference(raw)
    for backend in backends:
        assert backend.header_dict(raw) == expected, backend.__name__
    assert header_dict(raw) == expected


def test_the_first_of_a_repeated_name_is_kept_and_nothing_is_changed(backend: Any) -> None:
    raw = [(b"host", b"a:1"), (b"Host", b" b "), (b"host", b"c"), (b"x", b"\xff\x00")]
    assert backend.header_dict(raw) == {"host": "a:1", "Host": " b ", "x": "\xff\x00"}
    assert backend.header_dict([]) == {}


@pytest.mark.parametrize(
    "raw",
    [
        ((b"host", b"a"),),
        [[b"host", b"a"]],
        [(b"host",)],
        [(b"host", b"a", b"b")],
        [(b"host", "a")],
        [("host", b"a")],
        [(b"host", b"a"), (b"origin", bytearray(b"b"))],
        None,
    ],
)
def test_another_shape_is_a_type_error(backend: Any, raw: Any) -> None:
    with pytest.raises(TypeError, match=r"^headers must be a list of \(bytes, bytes\) tuples$"):
        backend.header_dict(raw)


def test_the_host_reads_other_shapes_itself() -> None:
    """An ASGI server that gives each pair as a list (the native `header_dict` refuses it): read as before."""
    assert header_dict([[b"host", b"a"], [b"host", b"b"]]) == {"host": "a"}  # type: ignore[list-item]
