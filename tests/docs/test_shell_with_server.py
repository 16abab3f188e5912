"""The README's `mcpframe tap`, `probe` and `proxy` command lines run as written against its server block.

A block marked `<!-- run: sh (server) -->` (see `_snippets.py`) runs line by line in a directory holding the
page's last server block as `server.py`, the way a reader who saved it would: each line gets a handshake and
a `tools/list` on stdin (a client's first words; `probe` makes its own), must end with status 0 and print
the server's tool. A path under /tmp in a line (the tap's `--log`) is moved into the test's own directory,
and the file must then hold the frames.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ._children import CHILD_TIMEOUT, child_env
from ._snippets import Block
from .test_snippets import ALL

SHELL_WITH_SERVER = [block for block in ALL if block.language == "sh" and "server" in block.needs]

CLIENT_WORDS = b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "docs-test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)


def test_the_readme_has_such_blocks() -> None:
    assert {block.page for block in SHELL_WITH_SERVER} >= {"README.md"}


@pytest.mark.parametrize("block", SHELL_WITH_SERVER, ids=[block.id for block in SHELL_WITH_SERVER])
def test_shell_block_against_the_server_runs(block: Block, tmp_path: Path) -> None:
    assert block.server is not None, f"{block.id}: no server block above it on its page"
    (tmp_path / "server.py").write_text(block.server, encoding="utf-8")
    env = child_env()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    for line in block.source.splitlines():
        command = line.split("#", 1)[0].strip()
        if not command:
            continue
        logs = [word for word in command.split() if word.startswith("/tmp/")]
        for log in logs:
            command = command.replace(log, str(tmp_path / Path(log).name))
        done = subprocess.run(
            command,
            shell=True,
            cwd=tmp_path,
            env=env,
            input=CLIENT_WORDS,
            capture_output=True,
            timeout=CHILD_TIMEOUT,
            check=False,
        )
        assert done.returncode == 0, f"{block.id}: {command}\n{done.stderr.decode()}"
        assert b"add" in done.stdout, f"{block.id}: {command} did not list the tool\n{done.stdout.decode()}"
        for log in logs:
            rows = [json.loads(row) for row in (tmp_path / Path(log).name).read_text().splitlines()]
            sent = [row["method"] for row in rows if row["dir"] == "c2s"]
            assert sent == ["initialize", "notifications/initialized", "tools/list"], rows
            assert {row.get("id") for row in rows if row["dir"] == "s2c" and row["kind"] == "result"} == {
                1,
                2,
            }
