"""`mcpframe.compat.serve(app, "http")` says where it listens, in the lines `mcpframe serve --http` prints.

A `ready` callback given to `serve` is called instead (the command line passes its own), so nothing is
printed twice and a caller can say it its own way.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from ._support import child_env

pytest.importorskip("uvicorn")
pytest.importorskip("mcp.server.mcpserver")

pytestmark = pytest.mark.anyio

SCRIPT = """
    import sys

    import mcpframe.compat
    from mcp.server.mcpserver import MCPServer
    from mcpframe.http.options import HttpOptions

    app = MCPServer("lines")


    @app.tool()
    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b


    def mine(url):
        print(f"mine: {url}", file=sys.stderr, flush=True)


    extra = {"ready": mine} if sys.argv[1] == "mine" else {}
    legacy = sys.argv[2] == "legacy"
    mcpframe.compat.serve(app, "http", port=0, http_options=HttpOptions(legacy_sse=legacy), **extra)
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _lines_until(script: Path, *args: str, last: str) -> list[str]:
    """The child's stderr lines up to the first containing `last`; the child is then stopped."""
    command = [sys.executable, str(script), *args]
    async with await anyio.open_process(command, cwd=script.parent, env=child_env()) as child:
        assert child.stderr is not None
        lines: list[str] = []
        buffered = b""
        try:
            with anyio.fail_after(60):
                while not any(last in line for line in lines):
                    chunk = await child.stderr.receive()
                    *done, buffered = (buffered + chunk).split(b"\n")
                    lines += [line.decode() for line in done]
        finally:
            child.terminate()
            with anyio.fail_after(30):
                await child.wait()
    return [line for line in lines if line.startswith(("mcpframe", "mine"))]  # not the engine's log


@pytest.mark.parametrize("legacy", [True, False])
async def test_serve_over_http_prints_the_cli_lines(tmp_path: Path, legacy: bool) -> None:
    script = tmp_path / "serve_app.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    lines = await _lines_until(script, "default", "legacy" if legacy else "plain", last="Streamable HTTP on")
    url = lines[-1].rsplit(" ", 1)[-1]
    assert url.startswith("http://127.0.0.1:")
    assert not url.endswith(":0/mcp")
    expected = [f"mcpframe serve: Streamable HTTP on {url}"]
    if legacy:
        expected.insert(0, f"mcpframe serve: legacy HTTP+SSE on {url.removesuffix('/mcp')}/sse")
    assert lines == expected


async def test_a_ready_callback_is_called_instead(tmp_path: Path) -> None:
    script = tmp_path / "serve_app.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    lines = await _lines_until(script, "mine", "legacy", last="mine: ")
    assert len(lines) == 1
    assert lines[0].startswith("mine: http://127.0.0.1:")
    assert lines[0].endswith("/mcp")
