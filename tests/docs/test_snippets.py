"""Every Python block of the README and the guides runs as its marker says (see `_snippets.py`).

Servers run as real child processes and a client drives them; client blocks run with top-level `await`
against the page's server block, in memory or over a real `mcpframe serve --http` child. Cheap shell blocks
(`mcpframe --version`, `mcpframe serve --help`) run too; the set-up commands are proven by `test_install.py`.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpframe.client import Client

from ._children import CHILD_TIMEOUT, ROOT, child_env, has_module, wait_for_line
from ._snippets import Block, blocks

pytestmark = pytest.mark.anyio

DESIGN_DOCS = {"architecture.md", "core-contract.md", "fuzzing.md", "session-api.md"}
"""Pages for people working on mcpframe: their blocks are excerpts of its code, not programs to run."""

PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in DESIGN_DOCS)]
ALL = [block for page in PAGES for block in blocks(page, ROOT)]
PYTHON = [block for block in ALL if block.language == "python"]
SHELL = [block for block in ALL if block.language == "sh" and block.mode == "sh" and not block.needs]

DOC_URL = "http://127.0.0.1:8000/mcp"
"""The URL the pages' HTTP clients use; the test serves the page's server elsewhere and substitutes it."""
DOC_TOKEN = "s3cret"

SDK_APP = '''\
from mcp.server.mcpserver import MCPServer

app = MCPServer("demo")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

'''


def test_the_pages_have_blocks_to_run() -> None:
    pages = {block.page for block in PYTHON}
    assert {"README.md", "docs/index.md", "docs/quickstart.md"} <= pages


def test_every_python_block_says_how_it_runs() -> None:
    unmarked = [block.id for block in PYTHON if block.mode == "unmarked"]
    assert not unmarked, (
        "these python blocks have no `<!-- run: ... -->` marker on the line above them "
        f"(tests/docs/_snippets.py lists the kinds): {unmarked}"
    )


def _text(result: dict[str, Any]) -> str:
    assert not result.get("isError"), result
    text: str = result["content"][0]["text"]
    return text


def _write_server(block: Block, where: Path) -> None:
    assert block.server is not None, f"{block.id}: no server block above it on its page"
    (where / "server.py").write_text(block.server, encoding="utf-8")


async def run_server(block: Block, where: Path) -> None:
    call = block.call
    assert call is not None, f"{block.id}: a server marker says which tool to call"
    (where / "server.py").write_text(block.source, encoding="utf-8")
    async with Client.stdio(sys.executable, ["server.py"], cwd=where, env=child_env()) as client:
        assert _text(await client.call_tool(call.name, call.arguments)) == call.expected


async def run_script(block: Block, where: Path) -> None:
    if block.server is not None:
        _write_server(block, where)
    (where / "snippet.py").write_text(block.source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "snippet.py"],
        cwd=where,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    expected = block.stdout_has
    assert expected is not None, f"{block.id}: a script marker says what it prints"
    assert expected in done.stdout, done.stdout


async def _run_await(source: str, namespace: dict[str, Any], name: str) -> None:
    """Run `source` as a module body that may `await` (as `python -m asyncio` does)."""
    code = compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    outcome = eval(code, namespace)  # the block is the documentation under test
    if inspect.iscoroutine(outcome):
        await outcome


def _serve_http(where: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "mcpframe", "serve", "server.py", "--http", "--port", "0"]
    return subprocess.Popen(
        [*command, "--auth-token", DOC_TOKEN],
        cwd=where,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def run_async(block: Block, where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a real module, so what the server block defines (a dataclass, a pydantic model) can find it
    module = types.ModuleType("snippet")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    source = block.source
    # what `Client.stdio("mcpframe", ...)` in a block finds: this interpreter's scripts, this backend
    env = child_env()
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]]))
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    monkeypatch.setenv("MCPFRAME_BACKEND", env["MCPFRAME_BACKEND"])
    monkeypatch.chdir(where)
    if "server" in block.needs or "http" in block.needs:
        _write_server(block, where)
    if "server" in block.needs:
        assert block.server is not None
        await _run_await(block.server, namespace, "server.py")
    server = None
    try:
        if "http" in block.needs:
            if not (has_module("uvicorn") and has_module("httpx")):
                pytest.skip("needs the http extra")
            assert DOC_URL in source, f"{block.id}: an http block calls {DOC_URL}"
            server = _serve_http(where)
            line = wait_for_line(server, "Streamable HTTP on")
            source = source.replace(DOC_URL, line.rsplit(" ", 1)[1].strip())
        await _run_await(source, namespace, block.id)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=CHILD_TIMEOUT)


async def run_core(block: Block) -> None:
    class Writer:
        def __init__(self) -> None:
            self.lines: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.lines.append(data)

    writer = Writer()
    chunk = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}\n{not json\n'
    chunk += b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    await _run_await(block.source, {"chunk": chunk, "writer": writer}, block.id)
    assert writer.lines[0] == b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n'
    assert b'"code":-32700' in writer.lines[1]
    assert len(writer.lines) == 2  # nothing for the notification


async def run_child(block: Block, where: Path) -> None:
    if not has_module("mcp"):
        pytest.skip("needs the sdk extra")
    (where / "snippet.py").write_text(block.source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "snippet.py"],
        cwd=where,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def run_sdk_app(block: Block, where: Path) -> None:
    if not has_module("mcp"):
        pytest.skip("needs the sdk extra")
    call = block.call
    assert call is not None, f"{block.id}: an sdk-app marker says which tool to call"
    (where / "app.py").write_text(SDK_APP + block.source, encoding="utf-8")
    async with Client.stdio(sys.executable, ["app.py"], cwd=where, env=child_env()) as client:
        assert _text(await client.call_tool(call.name, call.arguments)) == call.expected


def _skip_unless_runnable(block: Block) -> None:
    """Skip, saying why, a block whose extra is not installed or that needs fastmcp's private path."""
    for package in re.findall(r"^(?:from|import) (mcp|fastmcp)\b", block.source, re.MULTILINE):
        if not has_module(package):
            pytest.skip("needs the sdk extra")
    if "private-fastmcp" in block.needs:
        from mcpframe._unstable import mcp_sdk  # noqa: PLC0415 - needs mcp, which fastmcp brings

        if not mcp_sdk.FASTMCP_CHOICE.private:  # the child inherits this environment: it chooses the same
            pytest.skip(
                "serves a FastMCP app on the engine, through fastmcp's private names, off here: "
                + mcp_sdk.FASTMCP_CHOICE.reason
            )


@pytest.mark.parametrize("block", PYTHON, ids=[block.id for block in PYTHON])
async def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mode = block.mode
    if mode in ("unmarked", "no"):
        pytest.skip(f"not run: {block.marker or 'no marker'}")
    _skip_unless_runnable(block)
    with anyio.fail_after(CHILD_TIMEOUT):
        if mode == "server":
            await run_server(block, tmp_path)
        elif mode == "script":
            await run_script(block, tmp_path)
        elif mode == "async":
            await run_async(block, tmp_path, monkeypatch)
        elif mode == "core":
            await run_core(block)
        elif mode == "child":
            await run_child(block, tmp_path)
        elif mode == "sdk-app":
            await run_sdk_app(block, tmp_path)
        else:
            pytest.fail(f"{block.id}: unknown marker {block.marker!r}")


@pytest.mark.parametrize("block", SHELL, ids=[block.id for block in SHELL])
def test_cheap_shell_block_runs(block: Block) -> None:
    env = child_env()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    for line in block.source.splitlines():
        command = line.split("#", 1)[0].strip()
        if not command:
            continue
        done = subprocess.run(
            command,
            shell=True,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 0, f"{block.id}: {command}\n{done.stderr}"
        assert done.stdout.strip(), f"{block.id}: {command} printed nothing"
