"""`mcpframe serve --http` stopped by SIGTERM while a legacy SSE client waits for an answer: the answer still
comes on its stream (finished within the grace period, or -32000 at its end), then the stream ends and the
process exits 0."""

from __future__ import annotations

import json
import signal
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.server._children import PYTHON, Child, child

from ._server_support import init_body

pytestmark = pytest.mark.anyio

SERVER = """
    import logging
    import os
    import sys

    import anyio

    from mcpframe.server import Server

    log = logging.getLogger("mcpframe.server")
    log.setLevel(logging.INFO)
    log.addHandler(logging.StreamHandler(sys.stderr))

    server = Server("graceful-sse")


    @server.tool
    async def slow() -> str:
        print("slow: started", file=sys.stderr, flush=True)
        while not os.path.exists(os.environ["RELEASE"]):
            await anyio.sleep(0.01)
        return "finished"


    @server.tool
    async def stuck() -> str:
        print("slow: started", file=sys.stderr, flush=True)
        await anyio.sleep_forever()
        return "never"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text(textwrap.dedent(SERVER), encoding="utf-8")
    return tmp_path


@asynccontextmanager
async def calling(
    project: Path, tool: str, grace: str, http_server: str
) -> AsyncIterator[tuple[Child, list[dict[str, Any]]]]:
    """The server (on `http_server`), a legacy stream initialized, `tool` called and started; yields the
    child and the list the stream's messages go to (read until the stream ends); then the child's end is
    its `outcome`."""
    command = [PYTHON, "-m", "mcpframe", "serve", "server.py", "--http", "--port", "0"]
    command += ["--http-server", http_server]
    env = {"RELEASE": str(project / "release"), "MCPFRAME_SHUTDOWN_GRACE": grace}
    messages: list[dict[str, Any]] = []
    async with child(command, project, **env) as server, httpx.AsyncClient(timeout=60) as http:
        url = (await server.stderr_line("legacy HTTP+SSE on ")).rsplit(" ", 1)[-1]
        base = url.rsplit("/", 1)[0]
        async with http.stream("GET", url, headers={"accept": "text/event-stream"}) as stream:
            lines = stream.aiter_lines()
            endpoint = ""
            async for line in lines:
                if line.startswith("data: "):
                    endpoint = base + line.removeprefix("data: ")
                    break
            assert (await http.post(endpoint, json=init_body())).status_code == 202
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool}}
            assert (await http.post(endpoint, json=call)).status_code == 202
            await server.stderr_line("slow: started")
            yield server, messages
            with anyio.fail_after(30):
                async for line in lines:  # to the end of the stream
                    if line.startswith("data: "):
                        messages.append(json.loads(line.removeprefix("data: ")))
        server.outcome = await server.end()  # type: ignore[attr-defined]


SERVERS = pytest.mark.parametrize("http_server", ["uvicorn", "mcpframe"])


@SERVERS
async def test_a_request_in_flight_is_answered_on_its_stream(project: Path, http_server: str) -> None:
    async with calling(project, "slow", "30", http_server) as (server, messages):
        server.signal(signal.SIGTERM)
        await server.stderr_line("shutting down")  # the stop began while the tool waits
        (project / "release").touch()
    status, _rest, stderr = server.outcome  # type: ignore[attr-defined]
    assert [m.get("id") for m in messages] == [1, 2]
    assert messages[1]["result"]["content"][0]["text"] == "finished"
    assert status == 0
    assert "Traceback" not in stderr


@SERVERS
async def test_a_request_cut_at_the_end_of_the_grace_period_gets_its_error(
    project: Path, http_server: str
) -> None:
    async with calling(project, "stuck", "0", http_server) as (server, messages):
        server.signal(signal.SIGTERM)
    status, _rest, stderr = server.outcome  # type: ignore[attr-defined]
    assert [m.get("id") for m in messages] == [1, 2]
    assert messages[1]["error"]["code"] == -32000
    assert status == 0
    assert "Traceback" not in stderr
