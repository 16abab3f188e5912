"""SIGTERM and SIGINT stop a server gracefully on every entry point, each a real child process.

`python server.py` (`server.run()`), `mcpframe serve server.py` (stdio and `--http`) and
`mcpframe.compat.serve(app)` with an SDK app: a tool is in flight when the signal comes; the child says
it is shutting down (a stderr line), a new request is refused with -32000, the tool is released (a file
appears) and answers, the lifespan's teardown writes its marker, the exit status is 0 and stderr has no
traceback. Past the grace period the request still running is answered with -32000; a second signal exits
at once with 128 + its number; a lifespan that fails at start-up is one line and status 1.
"""

from __future__ import annotations

import signal
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpframe.server.lifecycle import GRACE_ENV

from ._children import INITIALIZE, PYTHON, child

pytestmark = pytest.mark.anyio

# What the children share: the lifespan writes TEARDOWN_MARK on its way out; `slow` says it started and
# waits for RELEASE to exist; mcpframe.server logs at INFO to stderr (the "shutting down" line).
COMMON = """
    import logging
    import os
    import sys
    from contextlib import asynccontextmanager

    import anyio

    log = logging.getLogger("mcpframe.server")
    log.setLevel(logging.INFO)
    log.addHandler(logging.StreamHandler(sys.stderr))


    @asynccontextmanager
    async def lifespan(server):
        if os.environ.get("FAIL_START"):
            raise RuntimeError("database unreachable")
        yield {"greeting": "hello"}
        with open(os.environ["TEARDOWN_MARK"], "w") as mark:
            mark.write("torn down")


    async def wait_for_release():
        print("slow: started", file=sys.stderr, flush=True)
        while not os.path.exists(os.environ["RELEASE"]):
            await anyio.sleep(0.01)
"""

SERVER = """
    from mcpframe.server import Context, Server

    server = Server("graceful", lifespan=lifespan)


    @server.tool
    async def slow(ctx: Context) -> str:
        await wait_for_release()
        return f"{ctx.lifespan_context['greeting']}, finished"


    @server.tool
    async def stuck() -> str:
        print("slow: started", file=sys.stderr, flush=True)
        await anyio.sleep_forever()
        return "never"


    if __name__ == "__main__":
        server.run()
"""

SDK_APP = """
    from mcp.server.mcpserver import Context, MCPServer

    import mcpframe.compat

    app = MCPServer("graceful-sdk", lifespan=lifespan)


    @app.tool()
    async def slow(ctx: Context) -> str:
        await wait_for_release()
        return f"{ctx.request_context.lifespan_context['greeting']}, finished"


    @app.tool()
    async def stuck() -> str:
        print("slow: started", file=sys.stderr, flush=True)
        await anyio.sleep_forever()
        return "never"


    if __name__ == "__main__":
        mcpframe.compat.serve(app)
"""

ENTRY_POINTS = {
    "server.run()": [PYTHON, "server.py"],
    "mcpframe serve": [PYTHON, "-m", "mcpframe", "serve", "server.py"],
    "compat.serve": [PYTHON, "sdk_app.py"],
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text(textwrap.dedent(COMMON) + textwrap.dedent(SERVER), encoding="utf-8")
    (tmp_path / "sdk_app.py").write_text(textwrap.dedent(COMMON) + textwrap.dedent(SDK_APP), encoding="utf-8")
    return tmp_path


def _env(project: Path, **extra: str) -> dict[str, str]:
    return {"TEARDOWN_MARK": str(project / "torn-down"), "RELEASE": str(project / "release"), **extra}


def _no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr


def _text(answer: dict[str, Any]) -> str:
    text: str = answer["result"]["content"][0]["text"]
    return text


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
async def test_a_signal_lets_the_request_in_flight_finish(
    project: Path, entry: str, sig: signal.Signals
) -> None:
    if entry == "compat.serve":
        pytest.importorskip("mcp")
    async with child(ENTRY_POINTS[entry], project, **_env(project)) as server:
        await server.initialize()
        await server.call(2, "slow")
        await server.stderr_line("slow: started")
        server.signal(sig)
        await server.stderr_line("shutting down")
        await server.call(3, "slow")  # arrives during the grace period: refused, answered
        refused = await server.answer()
        assert refused["id"] == 3
        assert refused["error"]["code"] == -32000
        assert "shutting down" in refused["error"]["message"]
        (project / "release").touch()
        finished = await server.answer()
        assert finished["id"] == 2
        assert _text(finished) == "hello, finished"
        status, rest, stderr = await server.end()
    assert status == 0
    assert rest == b""
    assert (project / "torn-down").read_text() == "torn down"
    _no_traceback(stderr)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
async def test_an_idle_server_stops_at_once_with_its_teardown(project: Path, entry: str) -> None:
    if entry == "compat.serve":
        pytest.importorskip("mcp")
    async with child(ENTRY_POINTS[entry], project, **_env(project)) as server:
        await server.initialize()  # answered: the lifespan has started, signals are handled
        server.signal(signal.SIGTERM)
        status, rest, stderr = await server.end()
    assert status == 0
    assert rest == b""
    assert (project / "torn-down").read_text() == "torn down"
    _no_traceback(stderr)


GRACE_ZERO = {  # the grace period set to 0 by the environment, and by the CLI flag
    "server.run() with MCPFRAME_SHUTDOWN_GRACE=0": (ENTRY_POINTS["server.run()"], {GRACE_ENV: "0"}),
    "mcpframe serve --grace 0": ([*ENTRY_POINTS["mcpframe serve"], "--grace", "0"], {}),
}


@pytest.mark.parametrize("how", list(GRACE_ZERO))
async def test_a_request_past_the_grace_period_is_answered_with_an_error(project: Path, how: str) -> None:
    argv, extra = GRACE_ZERO[how]
    env = _env(project, **extra)
    async with child(argv, project, **env) as server:
        await server.initialize()
        await server.call(2, "stuck")
        await server.stderr_line("slow: started")
        server.signal(signal.SIGTERM)
        cut = await server.answer()
        status, _rest, stderr = await server.end()
    assert cut["id"] == 2
    assert cut["error"] == {
        "code": -32000,
        "message": "Server shutting down: the request did not finish in the 0 s grace period",
    }
    assert status == 0
    assert (project / "torn-down").exists()
    assert "1 request(s) still running after the 0 s grace period are cancelled" in stderr
    _no_traceback(stderr)


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
async def test_a_second_signal_exits_at_once(project: Path, sig: signal.Signals, status: int) -> None:
    async with child(ENTRY_POINTS["server.run()"], project, **_env(project)) as server:
        await server.initialize()
        await server.call(2, "slow")
        await server.stderr_line("slow: started")
        server.signal(sig)
        await server.stderr_line("shutting down")
        server.signal(sig)
        code, _rest, stderr = await server.end()
    assert code == status
    assert not (project / "torn-down").exists()  # at once: no teardown
    assert f"mcpframe: {sig.name} again: exiting now, without waiting" in stderr
    _no_traceback(stderr)


@pytest.mark.parametrize("entry", ["server.run()", "mcpframe serve"])
async def test_a_lifespan_failing_at_start_up_is_one_line_and_status_1(project: Path, entry: str) -> None:
    async with child(ENTRY_POINTS[entry], project, **_env(project, FAIL_START="1")) as server:
        status, rest, stderr = await server.end()
    assert status == 1
    assert rest == b""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("mcpframe: server 'graceful': its lifespan failed at start-up: ")
    source = (project / "server.py").read_text().splitlines()
    where = source.index('        raise RuntimeError("database unreachable")') + 1
    assert lines[0].endswith(f"server.py:{where}: RuntimeError: database unreachable")


async def test_mcpframe_serve_http_stops_gracefully(project: Path) -> None:
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    command = [*ENTRY_POINTS["mcpframe serve"], "--http", "--port", "0"]
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    answers: list[Any] = []
    async with child(command, project, **_env(project)) as server, httpx.AsyncClient(timeout=60) as http:
        url = (await server.stderr_line("Streamable HTTP on ")).rsplit(" ", 1)[-1]
        first = await http.post(url, json=INITIALIZE, headers=headers)
        headers = {
            **headers,
            "mcp-session-id": first.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow"}}

        async def post() -> None:
            answers.append(await http.post(url, json=call, headers=headers))

        async with anyio.create_task_group() as tg:
            tg.start_soon(post)
            await server.stderr_line("slow: started")
            server.signal(signal.SIGTERM)
            await server.stderr_line("shutting down")
            (project / "release").touch()
        status, _rest, stderr = await server.end()
    assert answers[0].status_code == 200
    assert '"text":"hello, finished"' in answers[0].text
    assert status == 0
    assert (project / "torn-down").read_text() == "torn down"
    _no_traceback(stderr)


@pytest.mark.parametrize("target", ["server.py", "sdk_app.py"])
async def test_mcpframe_serve_http_answers_a_request_cut_at_the_end_of_the_grace_period(
    project: Path, target: str
) -> None:
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    if target == "sdk_app.py":
        pytest.importorskip("mcp")
    command = [PYTHON, "-m", "mcpframe", "serve", target, "--http", "--port", "0"]
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    env = _env(project, MCPFRAME_SHUTDOWN_GRACE="0")
    answers: list[Any] = []
    async with child(command, project, **env) as server, httpx.AsyncClient(timeout=60) as http:
        url = (await server.stderr_line("Streamable HTTP on ")).rsplit(" ", 1)[-1]
        first = await http.post(url, json=INITIALIZE, headers=headers)
        headers = {
            **headers,
            "mcp-session-id": first.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "stuck"}}

        async def post() -> None:
            answers.append(await http.post(url, json=call, headers=headers))

        async with anyio.create_task_group() as tg:
            tg.start_soon(post)
            await server.stderr_line("slow: started")
            server.signal(signal.SIGTERM)
        status, _rest, stderr = await server.end()
    assert answers[0].status_code == 200
    assert '"code":-32000' in answers[0].text
    assert "did not finish in the 0 s grace period" in answers[0].text
    assert status == 0
    assert (project / "torn-down").read_text() == "torn down"
    _no_traceback(stderr)
