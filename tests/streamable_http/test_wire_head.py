"""`core.plain_request`, the lean server's read of a plain request, against httptools, its oracle: what it
reads, httptools parses to the same request, ending at the same byte; what it declines goes to httptools.
Both backends; the native one must also give the python one's answer (its reference), byte for byte."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import httptools
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import load, selected_backends
from tests.streamable_http.test_wire_server import exchange, post, server

from mcpframe._pycore import http_head as reference
from mcpframe._pycore.http_head import MAX_PLAIN_HEAD


class _Recorder:
    """httptools' callbacks, as the lean server's connection reads them."""

    def __init__(self) -> None:
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = b""
        self.completed = 0

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.completed += 1


def _httptools(data: bytes) -> tuple[str, bytes, list[tuple[bytes, bytes]], bytes, bool] | None:
    """httptools' reading of `data` as exactly one complete request; `None` if it refuses it or reads
    something else (no request, an incomplete one, more than one)."""
    recorder = _Recorder()
    parser = httptools.HttpRequestParser(recorder)
    try:
        parser.feed_data(data)
    except httptools.HttpParserError:
        return None
    if recorder.completed != 1:
        return None
    keep_alive = parser.should_keep_alive() and parser.get_http_version() == "1.1"
    return parser.get_method().decode(), recorder.url, recorder.headers, recorder.body, keep_alive


def _agrees(core: ModuleType, data: bytes, start: int = 0) -> Any:
    """`core.plain_request(data, start)`, checked against httptools when it reads a request, and against
    the reference (the python backend) always."""
    got = core.plain_request(data, start)
    assert got == reference.plain_request(data, start)
    if got is not None:
        method, target, headers, body, end = got
        assert _httptools(data[start:end]) == (method, target, headers, body, True)
    return got


PLAIN = [
    b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}",
    b"GET /mcp?x=%20y HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n",
    b"DELETE / HTTP/1.1\r\nMcp-Session-Id: abc\r\n\r\n",
    # blanks and obs-text as llhttp keeps them
    b"POST /mcp HTTP/1.1\r\nA: x \r\nB:\r\nC:  \r\nD:\ta\tb\t\r\nE: \x80\xff\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nConnection: Keep-Alive\r\ncontent-length: 0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nContent-Length: 000000000000003\r\n\r\nabc",
]

NOT_PLAIN = [
    b"POST /mcp HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",  # HTTP/1.0
    b"PUT /mcp HTTP/1.1\r\n\r\n",  # another method
    b"POST http://a/mcp HTTP/1.1\r\n\r\n",  # absolute form
    b'POST /a"b HTTP/1.1\r\n\r\n',  # a character outside the URL set (httptools takes it)
    b"POST  /mcp HTTP/1.1\r\n\r\n",  # two spaces (httptools takes them)
    b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",  # duplicate (httptools: 400)
    b"POST /mcp HTTP/1.1\r\nContent-Length: +2\r\n\r\n{}",
    b"POST /mcp HTTP/1.1\r\nContent-Length: 2 \r\n\r\n{}",  # trailing blank (httptools takes it)
    b"POST /mcp HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n",  # 16 digits
    b"POST /mcp HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",  # overflow (httptools: 400)
    b"POST /mcp HTTP/1.1\r\nContent-Length: 5\r\n\r\n{}",  # body not all here
    b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
    b"GET /mcp HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nConnection: close\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nProxy-Connection: close\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nA: x\r\n b\r\n\r\n",  # obs-fold (httptools: 400)
    b"POST /mcp HTTP/1.1\nA: x\n\n",  # bare LF (httptools: 400)
    b"POST /mcp HTTP/1.1\r\nA: x\rb\r\n\r\n",  # bare CR
    b"POST /mcp HTTP/1.1\r\nA: x\x00\r\n\r\n",  # a control character
    b"POST /mcp HTTP/1.1\r\nA: x\x7f\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nA : x\r\n\r\n",  # blank before the colon (httptools: 400)
    b"POST /mcp HTTP/1.1\r\n: x\r\n\r\n",  # no name
    b"POST /mcp HTTP/1.1\r\nA: x\r\n",  # head not complete
    b"POST /mcp HTTP/1.1\r\n" + b"A: %s\r\n" % (b"x" * MAX_PLAIN_HEAD) + b"\r\n",  # too long for here
    b"",
]


@pytest.mark.parametrize("data", PLAIN)
def test_a_plain_request_is_read_as_httptools_reads_it(backend: ModuleType, data: bytes) -> None:
    got = _agrees(backend, data)
    assert got is not None
    assert got[4] == len(data)


@pytest.mark.parametrize("data", NOT_PLAIN)
def test_what_is_not_plain_is_left_to_httptools(backend: ModuleType, data: bytes) -> None:
    assert _agrees(backend, data) is None


def test_pipelined_requests_are_read_one_after_the_other(backend: ModuleType) -> None:
    first, second = PLAIN[0], PLAIN[1]
    data = first + second + b"POST /mcp HTTP/1.1\r\nContent-Le"
    one = _agrees(backend, data)
    assert one is not None
    assert one[4] == len(first)
    two = _agrees(backend, data, one[4])
    assert two is not None
    assert (two[0], two[1], two[4]) == ("GET", b"/mcp?x=%20y", len(first) + len(second))
    assert _agrees(backend, data, two[4]) is None  # the rest is httptools'
    assert _agrees(backend, data, len(data)) is None


def test_arguments_are_checked(backend: ModuleType) -> None:
    with pytest.raises(TypeError, match=r"^data must be bytes, not bytearray$"):
        backend.plain_request(bytearray(PLAIN[0]), 0)
    for start in (-1, len(PLAIN[0]) + 1):
        with pytest.raises(ValueError, match=r"^start is out of range$"):
            backend.plain_request(PLAIN[0], start)


def _mostly(common: list[bytes], hostile: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """One of `common` most of the time, else something from `hostile` (so that both sides are tried)."""
    return st.one_of(st.sampled_from(common), st.sampled_from(common), st.sampled_from(common), hostile)


_METHODS = _mostly([b"GET", b"POST", b"DELETE"], st.sampled_from([b"PUT", b"post", b"CONNECT", b"HEAD"]))
_TARGETS = _mostly(
    [b"/mcp", b"/", b"/a?b=c&d=%41", b"/a/b;c=d"],
    st.one_of(
        st.sampled_from([b"*", b"http://x/", b"/a b", b"/#f", b"/\\"]),
        st.binary(min_size=1, max_size=12).map(lambda b: b"/" + b),
    ),
)
_VERSIONS = _mostly([b"HTTP/1.1"], st.sampled_from([b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1 ", b"http/1.1"]))
_NAMES = _mostly(
    [b"Content-Length", b"content-length", b"Host", b"Accept", b"X-A", b"Connection"],
    st.one_of(
        st.sampled_from(
            [b"Transfer-Encoding", b"Expect", b"Upgrade", b"Proxy-Connection", b"", b"A B", b"A:", b"\xff"]
        ),
        st.binary(min_size=0, max_size=6),
    ),
)
_VALUES = _mostly(
    [b"0", b"2", b"02", b"keep-alive", b"Keep-Alive", b"x", b"a b", b"", b" y", b"z  "],
    st.one_of(
        st.sampled_from(
            [
                b"+2",
                b" 2",
                b"2 ",
                b"-1",
                b"99999999999999999999",
                b"close",
                b"chunked",
                b"100-continue",
                b"\t",
                b"a\tb",
                b"x\r\n y",
                b"\x80",
                b"\x7f",
                b"\x00",
            ]
        ),
        st.binary(min_size=0, max_size=8),
    ),
)
_LINE_ENDS = _mostly([b"\r\n"], st.sampled_from([b"\n", b"\r", b"\r\n ", b"\r\n\t"]))
_SEPARATORS = _mostly([b": ", b":"], st.sampled_from([b":\t", b" : ", b":  ", b" :"]))


@st.composite
def _requests(draw: st.DrawFn) -> bytes:
    line = draw(_METHODS) + b" " + draw(_TARGETS) + b" " + draw(_VERSIONS) + draw(_LINE_ENDS)
    fields = draw(st.lists(st.tuples(_NAMES, _SEPARATORS, _VALUES, _LINE_ENDS), max_size=4))
    head = line + b"".join(name + sep + value + end for name, sep, value, end in fields)
    return head + draw(_LINE_ENDS) + draw(st.binary(max_size=4))


@given(_requests())
def test_random_and_hostile_heads_are_read_as_httptools_reads_them_or_left_to_it(data: bytes) -> None:
    for name in selected_backends():
        _agrees(load(name), data)


@given(st.binary(max_size=64), st.binary(max_size=8))
def test_random_bytes_after_a_plain_start_are_read_as_httptools_reads_them_or_left_to_it(
    rest: bytes, tail: bytes
) -> None:
    for name in selected_backends():
        _agrees(load(name), b"POST /mcp HTTP/1.1\r\n" + rest + tail)


def _chunked(body: bytes) -> bytes:
    return b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (
        len(body),
        body,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the server is built on asyncio Protocols
async def test_plain_and_other_requests_pipelined_on_one_connection_are_answered_in_order(
    anyio_backend: str,
) -> None:
    data = (
        post("/", b"one")
        + _chunked(b"two")
        + post("/", b"three")
        + post("/", b"four", b"Expect: 100-continue\r\n")
    )
    async with server() as port:
        got = await exchange(port, data, b"HTTP/1.1 200", count=4)
    assert got.count(b"HTTP/1.1 200 OK") == 4
    assert got.index(b"one") < got.index(b"two") < got.index(b"three") < got.index(b"four")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_request_after_connection_close_is_not_read(anyio_backend: str) -> None:
    data = post("/", b"one", b"Connection: close\r\n") + post("/", b"two")
    async with server() as port:
        got = await exchange(port, data, b"never", count=1)  # read until the server closes
    assert b"two" not in got
