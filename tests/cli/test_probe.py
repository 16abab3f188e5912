"""`mcpframe probe`: the report over stdio and HTTP, `--json`'s shape, and each one-line failure reason."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from mcpframe import protocol

from .conftest import SERVE, child_env

pytestmark = pytest.mark.anyio

EVERYTHING = str(Path(__file__).resolve().parents[2] / "examples" / "everything.py")
PROBE = [sys.executable, "-m", "mcpframe", "probe"]
TOKEN = "probe-test-token"
# a server that answers every request with an error: the handshake is refused
REFUSER = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    m = json.loads(line)\n"
    "    if 'id' in m:\n"
    "        e = {'code': -32602, 'message': 'no revision in common'}\n"
    "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'error': e}), flush=True)\n"
)


async def _probe(*args: str) -> tuple[int, str, str]:
    with anyio.fail_after(120):
        result = await anyio.run_process([*PROBE, *args], env=child_env(), check=False)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("mcpframe probe: ")
    return lines[0].removeprefix("mcpframe probe: ")


def _check_report(report: dict[str, object], transport: str) -> None:
    assert report["transport"] == transport
    assert report["revision"] in (*protocol.LEGACY_VERSIONS, *protocol.MODERN_VERSIONS)
    assert report["server_info"] == {"name": "mcpframe-everything", "version": "1.0.0"}
    assert {"tools", "resources", "prompts"} <= set(report["capabilities"])  # type: ignore[arg-type]
    tools = report["tools"]
    assert isinstance(tools, dict)
    assert tools["count"] == len(tools["names"]) > 0
    assert "test_simple_text" in tools["names"]
    assert "test://static-text" in report["resources"]["names"]  # type: ignore[index]
    assert "test_simple_prompt" in report["prompts"]["names"]  # type: ignore[index]
    steps = [step["step"] for step in report["steps"]]  # type: ignore[attr-defined]
    lists = ["tools/list", "resources/list", "resources/templates/list", "prompts/list"]
    assert steps[-5:] == ["handshake", *lists]
    assert "test://template/{id}/data" in report["templates"]["names"]  # type: ignore[index]
    assert all(step["ms"] >= 0 for step in report["steps"])  # type: ignore[attr-defined]


async def test_stdio_json() -> None:
    status, out, err = await _probe("--json", "--", *SERVE, EVERYTHING)
    assert status == 0, err
    report = json.loads(out)
    _check_report(report, "stdio")
    assert report["steps"][0]["step"] == "spawn"


async def test_stdio_text() -> None:
    status, out, err = await _probe("--", *SERVE, EVERYTHING)
    assert status == 0, err
    lines = dict(line.split(":", 1) for line in out.splitlines())
    assert lines["server"].split() == ["mcpframe-everything", "1.0.0"]
    assert lines["tools"].split()[1].rstrip(",") == "test_simple_text"
    assert "handshake" in lines["steps"]


@asynccontextmanager
async def _serving() -> AsyncIterator[str]:
    """`mcpframe serve everything.py --http --port 0` requiring TOKEN: its URL."""
    command = [*SERVE, EVERYTHING, "--http", "--port", "0"]
    async with await anyio.open_process(command, env=child_env(MCPFRAME_AUTH_TOKEN=TOKEN)) as child:
        assert child.stderr is not None
        seen = b""
        try:
            with anyio.fail_after(60):
                while b"Streamable HTTP on " not in seen or not seen.endswith(b"\n"):
                    seen += await child.stderr.receive()
            line = next(x for x in seen.decode().splitlines() if "Streamable HTTP on " in x)
            yield line.rsplit(" ", 1)[-1]
        finally:
            child.terminate()
            with anyio.fail_after(30):
                await child.wait()


async def test_http_json_and_auth_required() -> None:
    pytest.importorskip("httpx")
    async with _serving() as url:
        status, out, err = await _probe("--json", "--header", f"Authorization: Bearer {TOKEN}", url)
        assert status == 0, err
        _check_report(json.loads(out), "http")
        status, out, err = await _probe(url)
    assert (status, out) == (1, "")
    assert _one_line(err).startswith("auth required: HTTP 401 during handshake")


async def test_nothing_listening() -> None:
    pytest.importorskip("httpx")
    with socket.socket() as sock:  # a port that was free a moment ago, now closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    status, _, err = await _probe("--timeout", "30", f"http://127.0.0.1:{port}/mcp")
    assert status == 1
    assert _one_line(err).startswith("connection refused")


async def test_garbage_on_stdout_one_line() -> None:
    code = "import sys; print('Starting server v2...', flush=True); sys.stdin.read()"
    status, _, err = await _probe("--", sys.executable, "-c", code)
    assert status == 1
    assert _one_line(err).startswith(
        "non-JSON on the server's stdout during handshake: 'Starting server v2...'"
    )


async def test_child_exits() -> None:
    status, _, err = await _probe("--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert status == 1
    assert _one_line(err) == "the server exited (status 3) during handshake"


async def test_handshake_refused() -> None:
    status, _, err = await _probe("--", sys.executable, "-c", REFUSER)
    assert status == 1
    line = _one_line(err)
    assert line.startswith("handshake refused: ")
    assert "no revision in common" in line


async def test_timeout() -> None:
    status, _, err = await _probe(
        "--timeout", "0.5", "--", sys.executable, "-c", "import sys; sys.stdin.read()"
    )
    assert status == 1
    assert _one_line(err) == "timeout: no answer to handshake within 0.5 s"


async def test_usage_errors() -> None:
    for args in ([], ["--header", "nocolon", "http://x/mcp"], ["--timeout", "0", "--", "x"]):
        status, _, err = await _probe(*args)
        assert status == 2, args
        assert err.startswith("mcpframe probe: ")


async def test_wrong_path_is_one_line() -> None:
    pytest.importorskip("httpx")
    async with _serving() as url:
        status, _, err = await _probe("--header", f"Authorization: Bearer {TOKEN}", url + "-nothing")
    assert status == 1
    assert "HTTP 404" in _one_line(err)
