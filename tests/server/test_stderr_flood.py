"""A server whose parent pipes its stderr and never reads it keeps answering a flood of bad lines: the
rejection warnings are rate-limited (``session/rejections.py``), so the pipe never fills. Before, about 320
bad lines filled it and the server blocked in the logging write, silent on stdout."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from tests.server._children import BOUND, child_env

from mcpframe import core

pytestmark = pytest.mark.anyio

SERVER = "from mcpframe.server import Server\nServer('flood').run()\n"


async def test_a_flood_of_bad_lines_with_stderr_never_read_is_answered() -> None:
    count = 3000  # ~10 times what filled the 64 KiB pipe
    command = [sys.executable, "-c", SERVER]
    process = await anyio.open_process(command, stderr=subprocess.PIPE, env=child_env())
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        stdout = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(BOUND):
            await process.stdin.send(b"this is not json, it is a line of text to be rejected\n" * count)
            await process.stdin.send(core.encode_request("last", "ping"))
            answers = 0
            while b'"id":"last"' not in (line := await stdout.receive_until(b"\n", 1 << 20)):
                answers += 1
        assert answers == count
        assert b'"result":{}' in line
    finally:
        process.kill()
        await process.wait()
