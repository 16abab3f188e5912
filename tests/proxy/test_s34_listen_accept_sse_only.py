"""`proxy --listen` answers a POST whose `Accept` names `text/event-stream` alone (no `application/json`)
with SSE, in every response mode, as `serve --http` does (tests/streamable_http/test_accept_sse_only.py):
the initialize (held until the child answers, then given whole), a call on the lean server's fast path
and on the full path (uvicorn), and a 2026-07-28 stateless call. A JSON-only client still gets JSON."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.proxy._listen_support import JSON_ONLY, child_env, modern_call, modern_headers, rpc, serving_listen

from mcpframe.http.options import HttpOptions
from mcpframe.proxy import ProxyOptions

pytestmark = pytest.mark.anyio

PEER = [sys.executable, str(Path(__file__).with_name("peer.py"))]
EVERYTHING = [
    sys.executable,
    "-m",
    "mcpframe",
    "serve",
    str(Path(__file__).parents[2] / "examples" / "everything.py"),
]
SSE_ONLY = {"accept": "text/event-stream", "content-type": "application/json"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@contextlib.asynccontextmanager
async def _proxy(child: list[str], host: str, mode: str) -> AsyncIterator[str]:
    http = HttpOptions(response_mode=mode)  # type: ignore[arg-type]
    options = ProxyOptions(listen="http://127.0.0.1:0/mcp", command=child, env=child_env(), http=http)
    async with serving_listen(options, host) as url:
        yield url


def _sse_data(response: httpx.Response) -> list[Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    lines = response.text.splitlines()
    return [
        json.loads(line[len("data:") :]) for line in lines if line.startswith("data:") and line[5:].strip()
    ]


@pytest.mark.parametrize("mode", ["auto", "resumable", "sse"])
@pytest.mark.parametrize("host", ["mcpframe", "uvicorn"])
async def test_a_client_that_accepts_only_sse_gets_sse_through_the_proxy(host: str, mode: str) -> None:
    async with _proxy(PEER, host, mode) as url, httpx.AsyncClient(timeout=30) as http:
        init = await http.post(url, json=rpc(0, "initialize", INIT), headers=SSE_ONLY)
        (answer,) = _sse_data(init)
        assert answer["result"]["protocolVersion"] == "2025-11-25"
        headers = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(url, json=done, headers={**SSE_ONLY, **headers})).status_code == 202
        for rid in (1, 2):  # the second one after the session's plan was made (the fast path's)
            call = await http.post(url, json=rpc(rid, "echo", {"x": rid}), headers={**SSE_ONLY, **headers})
            (answer,) = _sse_data(call)
            assert answer == {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"params": {"x": rid}, "initializations": 1},
            }
        plain = await http.post(url, json=rpc(3, "echo", {}), headers={**JSON_ONLY, **headers})
        assert plain.headers["content-type"].startswith("application/json")
        assert plain.json()["id"] == 3


_REFUSER = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    error = {"code": -32602, "message": "unsupported"}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + "\\n")
    sys.stdout.flush()
"""


async def test_an_initialize_the_child_refuses_leaves_no_session_for_an_sse_only_client(
    tmp_path: Path,
) -> None:
    child = tmp_path / "refuser.py"
    child.write_text(_REFUSER)
    async with (
        _proxy([sys.executable, str(child)], "mcpframe", "auto") as url,
        httpx.AsyncClient(timeout=30) as http,
    ):
        response = await http.post(url, json=rpc(0, "initialize", INIT), headers=SSE_ONLY)
        assert "mcp-session-id" not in response.headers
        (answer,) = _sse_data(response)
        assert answer == {"jsonrpc": "2.0", "id": 0, "error": {"code": -32602, "message": "unsupported"}}


async def test_a_stateless_call_of_a_client_that_accepts_only_sse_gets_sse() -> None:
    async with _proxy(EVERYTHING, "mcpframe", "auto") as url, httpx.AsyncClient(timeout=30) as http:
        headers = {**modern_headers("test_simple_text"), "accept": "text/event-stream"}
        call = await http.post(url, json=modern_call("test_simple_text", 4, {}), headers=headers)
        (answer,) = _sse_data(call)
        assert answer["id"] == 4
        assert answer["result"]["content"][0]["type"] == "text"
