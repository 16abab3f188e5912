"""`Client.stdio` to a server that dies says how it died: exit status or signal, and its stderr's last lines.

A newcomer's server that crashes at import used to end in a bare "the peer closed the connection". The
child's stderr still reaches ours as it comes; only a bounded tail of it is kept for the error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

import mcpframe
from mcpframe.client import Client
from mcpframe.session import ConnectionClosed

pytestmark = pytest.mark.anyio

# children import this checkout's mcpframe, whether or not it is installed in the interpreter
SOURCE = str(Path(mcpframe.__file__).resolve().parents[1])
CHILD_ENV = {"PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))}
GUARD = 60  # seconds: a guard against a hang, not a timing assertion


def _script(tmp_path: Path, source: str) -> str:
    path = tmp_path / "server.py"
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return str(path)


async def _connect_error(command: list[str], **kwargs: object) -> ConnectionClosed:
    with anyio.fail_after(GUARD), pytest.raises(ConnectionClosed) as caught:
        async with Client.stdio(command[0], command[1:], env=CHILD_ENV, **kwargs):  # type: ignore[arg-type]
            pass
    return caught.value


async def test_a_server_raising_at_import_names_its_status_and_exception(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = _script(
        tmp_path,
        """
        from mcpframe.server import Server

        server = Server("broken")
        raise RuntimeError("no config file at ./settings.toml")
        """,
    )
    error = await _connect_error([sys.executable, script])
    message = str(error)
    assert message.startswith("the peer closed the connection: the server process (")
    assert "exited with status 1; the last lines of its stderr:\n" in message
    assert message.endswith("\n    RuntimeError: no config file at ./settings.toml")
    assert "Traceback (most recent call last):" in message
    assert isinstance(error.__cause__, ConnectionClosed)
    # the child's stderr still reached ours, whole
    assert "RuntimeError: no config file at ./settings.toml" in capfd.readouterr().err


async def test_a_server_exiting_at_once_says_status_0_and_no_stderr() -> None:
    error = await _connect_error([sys.executable, "-c", "pass"])
    assert str(error).endswith(") exited with status 0, writing nothing on stderr")


async def test_a_server_killed_by_a_signal_names_the_signal(tmp_path: Path) -> None:
    script = _script(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    error = await _connect_error([sys.executable, script])
    assert ") was killed by signal 9 (SIGKILL), writing nothing on stderr" in str(error)


async def test_the_tail_is_bounded_to_the_last_20_lines(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = _script(
        tmp_path,
        """
        import sys

        sys.stderr.write("x" * 1_000_000 + "\\n")
        for n in range(100):
            print(f"line {n}", file=sys.stderr)
        sys.exit(7)
        """,
    )
    error = await _connect_error([sys.executable, script])
    head, tail = str(error).split("the last lines of its stderr:\n")
    assert "exited with status 7" in head
    assert tail.splitlines() == [f"    line {n}" for n in range(80, 100)]
    assert capfd.readouterr().err.count("x") >= 1_000_000  # passed on, not kept


async def test_a_given_stderr_is_not_read_the_status_is_still_named() -> None:
    script = "import sys; print('secret', file=sys.stderr); sys.exit(2)"
    error = await _connect_error([sys.executable, "-c", script], stderr=subprocess.DEVNULL)
    assert str(error).endswith(") exited with status 2")


async def test_a_server_dying_mid_session_says_so_at_the_call(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        import os
        import sys

        from mcpframe.server import Server

        server = Server("fragile")


        @server.tool()
        def die() -> str:
            print("giving up", file=sys.stderr, flush=True)
            os._exit(3)


        server.run()
        """,
    )
    with anyio.fail_after(GUARD), pytest.raises(ConnectionClosed) as caught:
        async with Client.stdio(sys.executable, [script], env=CHILD_ENV) as client:
            await client.call_tool("die", {})
    message = str(caught.value)
    assert "exited with status 3; the last lines of its stderr:\n    giving up" in message
