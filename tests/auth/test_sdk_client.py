"""The official Python SDK's OAuth client (mcp 2.3.0) against `mcpframe serve --http --auth-jwks`.

Interop proof for the server side: the SDK's own discovery (the 401 challenge, mcpframe's protected
resource metadata), registration, PKCE and token use, against the in-test authorization server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest
from tests.conformance.harness import serve_everything_http

from ._authserver import AUDIENCE, AuthServer

pytestmark = pytest.mark.anyio

mcp_auth = pytest.importorskip("mcp.client.auth", reason="the official SDK (the sdk extra)")


@pytest.fixture(scope="module")
def authority() -> Iterator[AuthServer]:
    server = AuthServer()
    server.start()
    yield server
    server.stop()


class Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


async def test_the_sdk_client_authorizes_against_mcpframe_serve(authority: AuthServer) -> None:
    import httpx2  # noqa: PLC0415 - the SDK's HTTP client
    from mcp.client.session import ClientSession  # noqa: PLC0415
    from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata  # noqa: PLC0415

    found: list[AuthorizationCodeResult] = []

    async def redirect(url: str) -> None:
        async with httpx.AsyncClient() as http:
            location = (await http.get(url)).headers["location"]
        query = parse_qs(urlsplit(location).query)
        found.append(AuthorizationCodeResult(code=query["code"][0], state=query["state"][0]))

    async def callback() -> AuthorizationCodeResult:
        return found[-1]

    flags = ["--auth-jwks", authority.url + "/jwks", "--auth-issuer", authority.url]
    flags += ["--auth-audience", AUDIENCE, "--auth-scope", "mcp"]
    with serve_everything_http(flags) as url:
        metadata = OAuthClientMetadata(redirect_uris=["http://127.0.0.1:1/callback"], client_name="sdk")
        auth = mcp_auth.OAuthClientProvider(url, metadata, Memory(), redirect, callback)
        with anyio.fail_after(30):
            async with (
                httpx2.AsyncClient(auth=auth) as http,
                streamable_http_client(url, http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                tools = await session.list_tools()
    assert tools.tools
    assert len(found) == 1
    [asked] = [form for form in authority.forms("/authorize")]
    assert asked["resource"] == url  # the SDK took mcpframe's resource metadata as is
    assert asked["scope"] == "mcp"
