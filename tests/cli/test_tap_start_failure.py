"""`mcpframe tap` with a command that cannot be started: one line naming it, status 127, and nothing else.

The per-method table is for traffic that passed; with no child there was none, so an empty table under the
error line would only look like a run that happened.
"""

from __future__ import annotations

import sys

import anyio
import pytest

from .conftest import child_env

pytestmark = pytest.mark.anyio


async def test_a_command_that_cannot_start_prints_one_line_and_no_table() -> None:
    command = [sys.executable, "-m", "mcpframe", "tap", "--", "/nonexistent/server"]
    with anyio.fail_after(60):
        result = await anyio.run_process(command, env=child_env(), check=False)
    assert result.returncode == 127
    assert result.stderr.decode().splitlines() == [
        "mcpframe tap: cannot run '/nonexistent/server': No such file or directory"
    ]
    assert result.stdout == b""
