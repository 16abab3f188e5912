"""Fixtures for the OAuth tests: the in-test authorization server, and an MCP server it protects.

`auth_server` (module scope) is one `AuthServer` on 127.0.0.1, reset before each test that takes
`authsrv`. `protected(authsrv)` serves a small MCP server in this event loop whose endpoint requires a JWT
from it (`JwtVerifier` against its JWKS) with the scope `mcp`; it yields the endpoint's URL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence

import anyio
import pytest

from mcpframe.http.security import ListeningBearerAuth
from mcpframe.http.server import HttpOptions, serve_http
from mcpframe.http.verify import JwtVerifier
from mcpframe.server import Server

from ._authserver import AUDIENCE, AuthServer


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    """The authorization server, for the whole module."""
    server = AuthServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def authsrv(auth_server: AuthServer) -> AuthServer:
    """The module's authorization server with its record and knobs reset."""
    auth_server.requests.clear()
    auth_server.grantable = None
    auth_server.expires_in = 3600
    return auth_server


def echo_server() -> Server:
    """One tool."""
    server = Server("protected", version="1.0.0")

    @server.tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return server


@contextlib.asynccontextmanager
async def protected(authsrv: AuthServer, scopes: Sequence[str] = ("mcp",)) -> AsyncIterator[str]:
    """An MCP server requiring a token of `authsrv` with `scopes`; yields its endpoint URL."""
    verifier = JwtVerifier(authsrv.url + "/jwks", issuer=authsrv.url, audience=AUDIENCE)
    auth = ListeningBearerAuth(verifier, "http://127.0.0.1/mcp", [authsrv.url], list(scopes))
    ready = anyio.Event()

    def on_ready(url: str) -> None:
        auth.listening.append(url)
        ready.set()

    async with anyio.create_task_group() as tg:
        options = HttpOptions(auth=auth, legacy_sse=False)
        tg.start_soon(lambda: serve_http(echo_server(), port=0, options=options, ready=on_ready))
        with anyio.fail_after(10):
            await ready.wait()
        yield auth.listening[-1]
        tg.cancel_scope.cancel()
