"""A child command PATH does not have is named with the likely fix.

The README's client block runs `Client.stdio("mcpframe", ["serve", "server.py"])`; pasted into the venv's
Python without activating the venv, it failed with `[Errno 2] No such file or directory: 'mcpframe'`,
though the script sits beside that very Python. The error now says so and gives the path.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import anyio
import pytest

from mcpframe.client import Client
from mcpframe.transports.process import spawn

pytestmark = pytest.mark.anyio


@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there: every bare name is missing


@pytest.mark.usefixtures("empty_path")
async def test_a_command_beside_this_python_is_pointed_at() -> None:
    mine = os.path.join(sysconfig.get_path("scripts"), "python")
    assert os.access(mine, os.X_OK)  # a venv's bin, or the interpreter's own: python is there
    with anyio.fail_after(10), pytest.raises(FileNotFoundError) as caught:
        async with Client.stdio("python", ["-c", "pass"]):
            pass
    assert str(caught.value) == (
        "[Errno 2] No such file or directory: 'python' is not on PATH; "
        f"this Python's environment has it: pass {mine!r}, or activate that environment"
    )


@pytest.mark.usefixtures("empty_path")
async def test_a_command_nowhere_asks_for_its_path() -> None:
    with anyio.fail_after(10), pytest.raises(FileNotFoundError) as caught:
        await spawn("mcpframe-newcomer-no-such-command")
    assert caught.value.errno == 2
    assert caught.value.strerror == (
        "No such file or directory: 'mcpframe-newcomer-no-such-command' is not on PATH; "
        "pass its full path, or add its directory to PATH"
    )


async def test_a_path_or_a_missing_directory_keeps_the_system_words(tmp_path: Path) -> None:
    with anyio.fail_after(10), pytest.raises(FileNotFoundError) as by_path:
        await spawn(str(tmp_path / "absent"))
    assert by_path.value.strerror == "No such file or directory"
    assert by_path.value.filename == str(tmp_path / "absent")
    with anyio.fail_after(10), pytest.raises(FileNotFoundError) as by_cwd:
        await spawn("python", ["-c", "pass"], cwd=tmp_path / "no-such-dir")
    assert by_cwd.value.strerror == "No such file or directory"


async def test_a_command_on_path_whose_interpreter_is_gone_is_not_called_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a script of a moved or deleted venv: PATH has it, the kernel's ENOENT is about its #! line
    tool = tmp_path / "mcpframe-newcomer-orphan"
    tool.write_text("#!/nonexistent/venv/bin/python\nprint('never')\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with anyio.fail_after(10), pytest.raises(FileNotFoundError) as caught:
        await spawn("mcpframe-newcomer-orphan")
    assert caught.value.strerror == (
        f"No such file or directory: 'mcpframe-newcomer-orphan' is {str(tool)!r} on PATH but could not be "
        "started: its #! interpreter (or loader) is missing? (a moved or deleted virtual environment: "
        "reinstall it)"
    )
