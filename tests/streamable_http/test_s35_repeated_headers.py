"""A header that must come once, repeated (two `Host`s, two `Mcp-Session-Id`s, ...), gets 400 with a JSON-RPC
error naming it, on the lean server (its kept-alive fast path and the ASGI path) and under uvicorn; a
repeated header that may repeat (`Accept`) is served. (Two `Content-Length`s, equal or not, httptools refuses
under both servers before the app sees them; `repeated_header` lets two equal ones pass, RFC 9112 §6.3.)"""

from __future__ import annotations

import pytest

from mcpframe.http.headers import repeated_header

from ._repeated_support import PING, refused, served_once
from ._server_support import make_server, served

pytestmark = pytest.mark.anyio

SERVERS = ["mcpframe", "uvicorn"]

CASES = [
    ("POST", ("host", "evil.com"), "Host"),
    ("POST", ("mcp-session-id", "other"), "Mcp-Session-Id"),
    ("POST", ("origin", "http://127.0.0.1"), "Origin"),
    ("POST", ("mcp-protocol-version", "2025-06-18"), "MCP-Protocol-Version"),
    ("GET", ("last-event-id", "1"), "Last-Event-ID"),
    ("DELETE", ("host", "evil.com"), "Host"),
]


@pytest.mark.parametrize("http_server", SERVERS)
@pytest.mark.parametrize(("method", "line", "name"), CASES)
async def test_a_header_repeated_is_refused(
    http_server: str, method: str, line: tuple[str, str], name: str
) -> None:
    extra = [line, line] if line[0] in ("origin", "last-event-id") else [line]  # these the session has not
    async with served(make_server(), http_server=http_server) as url:
        body = PING if method == "POST" else None
        assert await refused(url, method, extra, body) == f"Bad Request: repeated {name} header"


@pytest.mark.parametrize("http_server", SERVERS)
async def test_headers_that_may_repeat_are_served(http_server: str) -> None:
    async with served(make_server(), http_server=http_server) as url:
        accept, json_body = ("accept", "application/json"), ("content-type", "application/json")
        assert (
            await served_once(url, "POST", [json_body, accept, ("accept", "text/event-stream")], PING) == 200
        )


def test_repeated_header_names_the_first_repeated() -> None:
    assert repeated_header([(b"accept", b"a"), (b"accept", b"b"), (b"host", b"h")]) is None
    assert repeated_header([(b"host", b""), (b"host", b"")]) == "Host"  # the same (empty) value too
    assert repeated_header([(b"content-length", b"3"), (b"content-length", b"3")]) is None
    assert repeated_header([(b"content-length", b"3"), (b"content-length", b"4")]) == "Content-Length"
    assert repeated_header([(b"origin", b"o"), (b"last-event-id", b"1"), (b"origin", b"o")]) == "Origin"
