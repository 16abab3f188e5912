"""`mcpframe serve --http` on a real child: the URL line, bearer auth, Host/Origin allow-lists, session cap.

The flags' mapping onto `HttpOptions` (idle timeout, session cap, defaults) is checked in-process.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpframe.cli.http_flags import add_http_flags, http_options, http_warnings
from mcpframe.http import connect

from .conftest import SERVE, child_env, write_project

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
APP = """
    from mcpframe.server import Server

    server = Server("over-http")


    @server.tool
    def add(a: int, b: int) -> int:
        return a + b
"""

SDK_APP = """
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("sdk-over-http")


    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b
"""


@asynccontextmanager
async def serving(
    project: Path, *flags: str, target: str = "app.py", **env: str
) -> AsyncIterator[tuple[str, list[str]]]:
    """`mcpframe serve TARGET --http --port 0 FLAGS`: its URL (from its stderr line) and its stderr so far."""
    command = [*SERVE, target, "--http", "--port", "0", *flags]
    async with await anyio.open_process(command, cwd=project, env=child_env(**env)) as child:
        assert child.stderr is not None
        lines: list[str] = []
        buffered = b""
        try:
            with anyio.fail_after(60):
                while not any("Streamable HTTP on " in line for line in lines):
                    chunk = await child.stderr.receive()
                    buffered += chunk
                    *done, rest = buffered.split(b"\n")
                    lines += [line.decode() for line in done]
                    buffered = rest
            url = next(line for line in lines if "Streamable HTTP on " in line).rsplit(" ", 1)[-1]
            yield url, lines
        finally:
            child.terminate()
            with anyio.fail_after(30):
                await child.wait()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path, {"app.py": APP, "sdk_app.py": SDK_APP})


async def test_url_auth_allow_lists_and_session_cap(project: Path) -> None:
    flags = ["--allowed-host", "127.0.0.1", "--allow-host", "mcp.example"]
    flags += ["--allowed-origin", "https://app.example", "--max-sessions", "1"]
    async with serving(project, *flags, MCPFRAME_AUTH_TOKEN=TOKEN) as (url, lines):
        assert lines[-1] == f"mcpframe serve: Streamable HTTP on {url}"
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")
        assert not url.endswith(":0/mcp")  # the port actually bound
        auth = {"authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(timeout=20) as http:
            refused = await http.post(url, json=INIT, headers=ACCEPT)
            wrong = await http.post(url, json=INIT, headers={**ACCEPT, "authorization": "Bearer nope"})
            foreign = await http.post(url, json=INIT, headers={**ACCEPT, **auth, "host": "evil.example"})
            allowed_host = await http.post(url, json=INIT, headers={**ACCEPT, "host": "mcp.example"})
            bad_origin = await http.post(
                url, json=INIT, headers={**ACCEPT, **auth, "origin": "https://x.example"}
            )
            metadata = await http.get(url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))
        assert (refused.status_code, wrong.status_code) == (401, 401)
        assert "resource_metadata=" in refused.headers["www-authenticate"]
        assert foreign.status_code == 421
        assert allowed_host.status_code == 401  # past the Host check, stopped by auth
        assert bad_origin.status_code == 403
        assert metadata.json()["resource"] == url

        with anyio.fail_after(30):
            async with connect(url, headers=auth, mode="legacy") as client:
                result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["content"][0]["text"] == "5"

        async with httpx.AsyncClient(timeout=20) as http:  # the client above ended its session (DELETE)
            origin = {"origin": "https://app.example"}
            first = await http.post(url, json=INIT, headers={**ACCEPT, **auth, **origin})
            second = await http.post(url, json=INIT, headers={**ACCEPT, **auth})
        assert first.status_code == 200
        assert second.status_code == 503  # --max-sessions 1


async def test_an_sdk_app_over_http_takes_the_same_flags(project: Path) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    async with serving(project, "--auth-token", TOKEN, target="sdk_app.py") as (url, lines):
        assert lines[0] == (
            "mcpframe serve: sdk_app.py:mcp is an MCPServer app: serving it on mcpframe's engine "
            "(the mcpframe.compat drop-in)"
        )
        assert lines[-1] == f"mcpframe serve: Streamable HTTP on {url}"
        async with httpx.AsyncClient(timeout=20) as http:
            assert (await http.post(url, json=INIT, headers=ACCEPT)).status_code == 401
        with anyio.fail_after(30):
            async with connect(url, headers={"authorization": f"Bearer {TOKEN}"}) as client:
                result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"result": 5}


def test_an_exposed_address_is_warned_about(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPFRAME_AUTH_TOKEN", raising=False)
    _, exposed = options("--host", "0.0.0.0")
    assert http_warnings(exposed) == [
        "listening on 0.0.0.0, but only loopback Host names are accepted (DNS-rebinding protection): add "
        "--allow-host with the name clients use, or --allow-host '*'",
        "listening on 0.0.0.0 with no authentication: anyone who reaches it can call its tools "
        "(set MCPFRAME_AUTH_TOKEN or --auth-token)",
    ]
    _, guarded = options("--host", "10.1.2.3", "--allow-host", "mcp.example", "--auth-token", "t")
    assert http_warnings(guarded) == []
    for loopback in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"):
        assert http_warnings(options("--host", loopback)[1]) == []


def options(*argv: str) -> Any:
    parser = argparse.ArgumentParser()
    add_http_flags(parser)
    args = parser.parse_args(list(argv))
    return http_options(args), args


def test_flags_map_onto_http_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPFRAME_AUTH_TOKEN", raising=False)
    defaults, args = options()
    assert (defaults.idle_timeout, defaults.max_sessions, defaults.auth) == (1800.0, 10_000, None)
    assert (defaults.allowed_hosts, defaults.allowed_origins) == (None, None)
    assert http_warnings(args) == []
    tuned, _ = options("--idle-timeout", "60", "--max-sessions", "50", "--path", "/x")
    assert (tuned.idle_timeout, tuned.max_sessions, tuned.path) == (60.0, 50, "/x")
    never, _ = options("--idle-timeout", "0")
    assert never.idle_timeout is None
    monkeypatch.setenv("MCPFRAME_AUTH_TOKEN", "from-env")
    from_env, _ = options("--port", "9000")
    assert from_env.auth.resource == "http://127.0.0.1:9000/mcp"
    assert from_env.auth.metadata()["authorization_servers"] == []


async def test_the_token_is_compared_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPFRAME_AUTH_TOKEN", raising=False)
    opts, _ = options("--auth-token", TOKEN)
    assert await opts.auth.authenticate(f"Bearer {TOKEN}") is not None
    assert await opts.auth.authenticate(f"bearer  {TOKEN} ") is not None  # the scheme is case-insensitive
    for header in (None, f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", "Bearer "):
        assert await opts.auth.authenticate(header) is None


@pytest.mark.parametrize(
    ("flags", "server", "media"),
    [
        (("--response-mode", "sse"), "uvicorn", "text/event-stream"),  # uvicorn: the default server
        (("--http-server", "mcpframe", "--response-mode", "auto"), "mcpframe", "application/json"),
    ],
)
async def test_the_http_server_and_response_mode_flags(
    project: Path, flags: tuple[str, ...], server: str, media: str
) -> None:
    client = {"name": "t", "version": "1"}
    init = {**INIT, "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}}
    environment = {"MCPFRAME_HTTP_SERVER": ""}  # the flags decide, not the caller's environment
    async with serving(project, *flags, **environment) as (url, _), httpx.AsyncClient(timeout=20) as http:
        answer = await http.post(url, json=init, headers=ACCEPT)
    assert answer.status_code == 200
    assert answer.headers["server"] == server
    assert answer.headers["content-type"].startswith(media)
    assert "mcp-session-id" in answer.headers
