"""stdio: a real child process serving a Session on its stdio, driven through ProcessTransport."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from mcpframe import core
from mcpframe.session import Session
from mcpframe.transports import ProcessTransport, spawn

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("stdio_child.py")


def child_env() -> dict[str, str]:
    path = [str(ROOT / "python"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in path if p)}


@asynccontextmanager
async def child(mode: str, stderr_path: Path, grace: float = 5.0) -> AsyncIterator[ProcessTransport]:
    with stderr_path.open("wb") as stderr:
        transport = await spawn(
            sys.executable, [str(CHILD), mode], env=child_env(), stderr=stderr, grace=grace
        )
        try:
            yield transport
        finally:
            await transport.aclose()


def is_gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status  # a zombie nobody reaped yet has ended too


async def test_stdout_is_protected_while_serving(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    with anyio.fail_after(30):
        async with child("serve", stderr) as transport:
            async with Session(transport) as session:
                for i in range(3):
                    assert await session.request("echo", {"i": i}) == {"i": i}
            # the session closed the transport: the child saw EOF, restored stdout and exited
            assert transport.returncode == 0
    noise = stderr.read_text()
    assert noise.count("noise from print() while serving") == 3
    assert noise.count("noise from a grandchild") == 3
    assert noise.count("noise written to fd 1") == 3


async def test_stdout_is_restored_after_the_server_ends(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with child("serve", tmp_path / "stderr.txt") as transport:
            await transport.send(core.encode_request(1, "ping"))
            assert await transport.receive() == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
            assert transport._stdin is not None
            await transport._stdin.aclose()  # EOF on the child's stdin
            rest = b""
            while chunk := await transport.receive():
                rest += chunk
            assert rest == b"after\n"
            await transport.process.wait()
            assert transport.returncode == 0


async def test_large_frames_cross_the_pipe(tmp_path: Path) -> None:
    payload = {"blob": "x" * (5 * 1024 * 1024), "n": [1, 2, 3]}
    with anyio.fail_after(60):
        async with child("serve", tmp_path / "stderr.txt") as transport, Session(transport) as session:
            assert await session.request("echo", payload) == payload


async def test_closing_ends_the_whole_process_tree(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with child("stubborn", tmp_path / "stderr.txt", grace=0.3) as transport:
            async with Session(transport) as session:
                pids = await session.request("pid")
            assert pids["pid"] == transport.pid
        assert transport.returncode is not None
        assert transport.returncode < 0  # ended by a signal: it ignored EOF
        assert is_gone(pids["grandchild"])


async def test_bad_input_is_answered_and_logged_to_stderr_with_offset_and_preview(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    garbage = b'{"jsonrpc": "2.0", "id": 7, "method": oops}\n'
    with anyio.fail_after(30):
        async with child("serve", stderr) as transport:
            await transport.send(garbage + core.encode_request(8, "ping"))
            answers = b""
            while answers.count(b"\n") < 2:
                answers += await transport.receive()
    first, second = core.decode(answers.split(b"\n")[0]), core.decode(answers.split(b"\n")[1])
    assert first[0].kind == "error"
    where = {"offset": 0, "at": garbage.index(b"oops"), "detail": "Expecting value"}  # where it broke
    assert first[0].error == {"code": -32700, "message": "Parse error: invalid JSON", "data": where}
    assert second[0].id == 8  # the connection goes on
    assert second[0].result == {}
    log = stderr.read_text()
    assert "rejected frame at stream byte 0: Parse error: invalid JSON (code -32700)" in log
    assert repr(garbage.rstrip(b"\n")) in log  # the preview: the frame without its terminator
