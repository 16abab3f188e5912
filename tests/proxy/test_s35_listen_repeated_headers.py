"""`proxy --listen` refuses a header that must come once, repeated (two `Host`s, two `Mcp-Session-Id`s, ...),
with 400 and a JSON-RPC error naming it, as `serve --http` does: on the lean server's fast path (a kept-alive
POST), its full path, and under uvicorn."""

from __future__ import annotations

import pytest
from tests.proxy._listen_support import in_process_proxy
from tests.proxy.conftest import PEER
from tests.streamable_http._repeated_support import PING, refused

pytestmark = pytest.mark.anyio

CASES = [
    ("POST", ("host", "evil.com"), "Host"),
    ("POST", ("mcp-session-id", "other"), "Mcp-Session-Id"),
    ("POST", ("mcp-protocol-version", "2025-06-18"), "MCP-Protocol-Version"),
    ("GET", ("last-event-id", "1"), "Last-Event-ID"),
]


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
@pytest.mark.parametrize(("method", "line", "name"), CASES)
async def test_listen_refuses_a_header_repeated(
    http_server: str, method: str, line: tuple[str, str], name: str
) -> None:
    extra = [line, line] if line[0] == "last-event-id" else [line]  # (sessions send the others)
    async with in_process_proxy(PEER, pool_size=1, http_server=http_server) as proxy:
        body = PING if method == "POST" else None
        assert await refused(proxy.url, method, extra, body) == f"Bad Request: repeated {name} header"
