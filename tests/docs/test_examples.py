"""Every program in `examples/` runs and says what its docstring promises (real child processes)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import pytest

from mcpframe.client import Client

from ._children import CHILD_TIMEOUT, ROOT, child_env, free_port, has_module, run_program, wait_for_line

pytestmark = pytest.mark.anyio


def test_quickstart_client_drives_the_quickstart_server() -> None:
    done = run_program("examples/quickstart_client.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("connected to quickstart 1.0.0 (")
    assert lines[1:] == [
        "tools: add, word_count",
        "add(2, 3) = 5",
        "add('two', 3) is an error: True",
        "notes://shopping: eggs, flour, milk",
        "prompt: Summarize what you know about MCP in three sentences.",
    ]


def test_custom_transport_serves_over_tcp_to_a_raw_decoder_client() -> None:
    done = run_program("examples/custom_transport.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("serving on tcp://127.0.0.1:")
    assert lines[1:] == ["initialized: tcp-demo 2025-06-18", "reverse('stressed') = desserts"]


@pytest.mark.skipif(not (has_module("uvicorn") and has_module("httpx")), reason="needs the http extra")
def test_http_server_wants_its_token_and_the_client_sends_it() -> None:
    port = free_port()
    env = child_env(MCP_TOKEN="s3cret")
    server = subprocess.Popen(
        [sys.executable, "examples/http_server.py", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        assert wait_for_line(server, "listening on").strip() == f"listening on {url}"
        done = run_program("examples/http_client.py", url, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[1:] == ["shout: HELLO OVER HTTP"]
        refused = run_program("examples/http_client.py", url, env=child_env(MCP_TOKEN="wrong"))
        assert refused.returncode == 1
        assert refused.stdout == ""
        # one line, no traceback: the endpoint and the server's reason
        assert refused.stderr.splitlines() == [
            f"http_client.py: {url}: HTTP 401 from the server: Unauthorized: "
            "a valid bearer token is required (code -32600)"
        ]
    finally:
        server.terminate()
        server.wait(timeout=CHILD_TIMEOUT)


@pytest.mark.skipif(not has_module("mcp"), reason="needs the sdk extra")
@pytest.mark.parametrize("extra", [[], ["--transport"]], ids=["engine", "transport"])
async def test_sdk_app_runs_on_each_drop_in(extra: list[str]) -> None:
    progress: list[float] = []
    all_progress = anyio.Event()

    def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)
        if done == total:
            all_progress.set()

    with anyio.fail_after(CHILD_TIMEOUT):
        program = ["examples/sdk_app.py", *extra]
        async with Client.stdio(sys.executable, program, cwd=ROOT, env=child_env()) as c:
            assert [tool["name"] for tool in await c.list_tools()] == ["add", "countdown"]
            result: dict[str, Any] = await c.call_tool("add", {"a": 2, "b": 3})
            assert result["content"] == [{"type": "text", "text": "5"}]
            result = await c.call_tool("countdown", {"n": 3}, on_progress=on_progress)
            assert result["content"] == [{"type": "text", "text": "liftoff"}]
            await all_progress.wait()  # progress callbacks may still be queued when the result arrives
            assert progress == [1, 2, 3]
            contents = await c.read_resource("greeting://Ada")
            assert [item["text"] for item in contents] == ["Hello, Ada!"]
