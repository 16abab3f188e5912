"""Which POST path the Streamable HTTP client takes by default: the lean one for plain `http://` URLs, httpx
wherever the lean path cannot do what was asked (`https://`, `auth`, a caller's `http_client`, a proxy, no
asyncio), and
httpx everywhere with the opt-out (`HttpClientOptions(lean=False)` or `MCPFRAME_HTTP_LEAN=0`)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mcpframe.http import connect
from mcpframe.http.client import StreamableHTTPTransport
from mcpframe.http.client_lean import lean_applicable
from mcpframe.http.client_sse_auto import AutoTransport
from mcpframe.http.options import HttpClientOptions

from .test_client_lean import Scripted, handshake, result, sse_answer

pytestmark = pytest.mark.anyio

QUIET = {"get_stream": False, "terminate_on_close": False}
URL = "http://127.0.0.1:9/mcp"  # never connected to: entering a transport opens no connection


class _NoAuth(httpx.Auth):
    pass


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_lean_is_the_default_and_the_environment_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPFRAME_HTTP_LEAN", raising=False)
    assert HttpClientOptions().lean is True
    monkeypatch.setenv("MCPFRAME_HTTP_LEAN", "0")
    assert HttpClientOptions().lean is False
    assert HttpClientOptions(lean=True).lean is True  # an explicit value wins over the environment
    monkeypatch.setenv("MCPFRAME_HTTP_LEAN", "1")
    assert HttpClientOptions().lean is True


async def _uses_lean(url: str, **kwargs: Any) -> bool:
    options = kwargs.pop("options", HttpClientOptions(**QUIET))
    async with StreamableHTTPTransport(url, options=options, **kwargs) as transport:
        return transport._lean is not None


async def test_a_plain_http_url_posts_over_the_lean_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPFRAME_HTTP_LEAN", raising=False)
    assert await _uses_lean(URL)


@pytest.mark.parametrize(
    ("case", "url"),
    [
        ("https", "https://127.0.0.1:9/mcp"),
        ("user info", "http://me:secret@127.0.0.1:9/mcp"),
        ("auth", URL),
        ("caller's client", URL),
        ("opt-out", URL),
    ],
)
async def test_what_the_lean_path_cannot_do_stays_with_httpx(
    case: str, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPFRAME_HTTP_LEAN", raising=False)
    if case == "auth":
        assert not await _uses_lean(url, auth=_NoAuth())
    elif case == "caller's client":
        async with httpx.AsyncClient() as mine:
            assert not await _uses_lean(url, http_client=mine)
    elif case == "opt-out":
        assert not await _uses_lean(url, options=HttpClientOptions(lean=False, **QUIET))
    else:
        assert not await _uses_lean(url)


async def test_a_proxy_in_the_environment_keeps_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:3128")
    assert not await _uses_lean(URL)


def test_only_asyncio_runs_the_lean_path() -> None:
    # trio (not installed here) is told apart the same way: sniffio names no "asyncio"
    assert not lean_applicable(URL, has_client=False, has_auth=False)


async def test_the_auto_transport_posts_over_the_lean_path_unless_told_not_to() -> None:
    async with AutoTransport(URL, options=HttpClientOptions(**QUIET)) as auto:
        assert auto.streamable._lean is not None
    async with AutoTransport(URL, options=HttpClientOptions(lean=False, **QUIET)) as auto:
        assert auto.streamable._lean is None


async def _agents(monkeypatch: pytest.MonkeyPatch, lean: str | None) -> set[str]:
    if lean is None:
        monkeypatch.delenv("MCPFRAME_HTTP_LEAN", raising=False)
    else:
        monkeypatch.setenv("MCPFRAME_HTTP_LEAN", lean)

    async def script(body: dict[str, Any], conn: int) -> bytes | None:
        if body.get("method") == "tools/call":
            return sse_answer(result(body["id"], {"content": []}))
        return await handshake(body)

    async with (
        Scripted(script) as server,
        connect(server.url, http_options=HttpClientOptions(**QUIET)) as client,
    ):
        await client.call_tool("echo", {})
    return server.agents


async def test_connect_posts_with_the_lean_client_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _agents(monkeypatch, None) == {"mcpframe"}


async def test_mcpframe_http_lean_0_posts_with_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    agents = await _agents(monkeypatch, "0")
    assert len(agents) == 1
    assert next(iter(agents)).startswith("python-httpx/")


async def test_requests_after_initialized_wait_for_the_get_stream_to_open() -> None:
    # a server may send what belongs to no request only on the GET stream: it must be open first
    async def script(body: dict[str, Any], conn: int) -> bytes | None:
        if body.get("method") == "tools/call":
            return sse_answer(result(body["id"], {"content": []}))
        return await handshake(body)

    options = HttpClientOptions(terminate_on_close=False)
    async with Scripted(script) as server, connect(server.url, http_options=options, mode="legacy") as client:
        await client.call_tool("echo", {})
    assert server.order == ["initialize", "notifications/initialized", "GET", "tools/call"]
