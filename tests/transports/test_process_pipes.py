"""spawn's pipes driven by FdTransport: large frames, a child dying mid-frame, back-pressure, closing races.

Every child is a tiny inline Python script; nothing here waits a fixed time (conditions are polled under
``fail_after``).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from tests._blocked import all_blocked

from mcpframe import core
from mcpframe.client import Client
from mcpframe.session import ConnectionClosed, Session
from mcpframe.transports import RECEIVE_CHUNK, ProcessTransport, TransportClosedError, spawn
from mcpframe.transports.fd import _READ_AHEAD

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
PATTERN = bytes(range(256))

# Answers the first request read from stdin with a result of `size` bytes of "x" (one frame), then waits
# for EOF. With argv[2] == "die", writes half of that frame and exits at once.
ANSWER_ONE = """
import json, os, sys
size, how = int(sys.argv[1]), sys.argv[2]
request = json.loads(sys.stdin.buffer.readline())
frame = ('{"jsonrpc":"2.0","id":%s,"result":{"blob":"' % json.dumps(request["id"])).encode()
frame += b"x" * size + b'"}}\\n'
out = sys.stdout.buffer
if how == "die":
    out.write(frame[: len(frame) // 2]); out.flush(); os._exit(3)
out.write(frame); out.flush()
sys.stdin.buffer.read()
"""
# Writes argv[1] bytes of PATTERN to stdout in 64 KiB writes, then exits.
WRITE_PATTERN = """
import sys
size, block = int(sys.argv[1]), bytes(range(256)) * 256
out = sys.stdout.buffer
for _ in range(size // len(block)):
    out.write(block)
out.flush()
"""
# mcpframe's own server with a size-parametrised tool.
BLOB_SERVER = """
from mcpframe.server import Server
server = Server("blob", version="1.0.0")

@server.tool
async def blob(size: int) -> str:
    return "x" * size

server.run()
"""


def child_env() -> dict[str, str]:
    path = [str(ROOT / "python"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in path if p)}


@asynccontextmanager
async def python(script: str, *args: str, grace: float = 5.0) -> AsyncIterator[ProcessTransport]:
    transport = await spawn(sys.executable, ["-c", script, *args], env=child_env(), grace=grace)
    try:
        yield transport
    finally:
        await transport.aclose()


async def read_all(transport: ProcessTransport) -> list[bytes]:
    chunks = []
    while chunk := await transport.receive():
        chunks.append(chunk)
    return chunks


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def blocked_writing(pid: int) -> None:
    """Return once ``pid`` sleeps in a pipe write (Linux: /proc/PID/wchan), i.e. nobody reads the pipe."""
    wchan = Path(f"/proc/{pid}/wchan")
    if not wchan.exists():
        pytest.skip("needs /proc/PID/wchan (Linux) to see the child block")
    while "pipe_write" not in wchan.read_text():
        await anyio.sleep(0.01)


async def test_the_transport_reads_through_fd_transport() -> None:
    async with python("import sys; sys.stdin.read()") as transport:
        assert transport.pump is not None
        assert transport.send_nowait is not None
        assert transport.send_nowait(b"\n") == 1  # an empty pipe takes a byte at once
        assert os.getpgid(transport.pid) == transport.pid  # a session (process group) of its own


async def test_the_child_stdout_pipe_is_widened_where_linux_allows() -> None:
    limit = Path("/proc/sys/fs/pipe-max-size")
    if not limit.exists() or int(limit.read_text()) < MiB:
        pytest.skip("needs Linux with pipe-max-size >= 1 MiB")
    async with python("import sys; sys.stdin.read()") as transport:
        assert fcntl.fcntl(transport._read_fd, fcntl.F_GETPIPE_SZ) == MiB


async def test_stderr_is_inherited(capfd: pytest.CaptureFixture[str]) -> None:
    with anyio.fail_after(30):
        async with python("import sys; sys.stderr.write('to the inherited stderr'); sys.stdin.read()"):
            pass
    assert "to the inherited stderr" in capfd.readouterr().err


async def test_an_8_mib_frame_split_across_reads_arrives_intact() -> None:
    size = 8 * MiB
    with anyio.fail_after(60):
        async with python(ANSWER_ONE, str(size), "ok") as transport:
            await transport.send(core.encode_request(7, "blob"))
            received = b""
            reads = 0
            while not received.endswith(b"\n"):
                received += await transport.receive()
                reads += 1
            assert reads > 1  # the frame came in pieces (at most RECEIVE_CHUNK per read)
            (message,) = core.decode(received)
            assert message.id == 7
            assert message.result == {"blob": "x" * size}


async def test_an_8_mib_result_through_a_session_uses_pump() -> None:
    with anyio.fail_after(60):
        async with python(ANSWER_ONE, str(8 * MiB), "ok") as transport, Session(transport) as session:
            assert await session.request("blob") == {"blob": "x" * (8 * MiB)}


async def test_a_child_dying_mid_frame_reads_as_eof() -> None:
    size = 2 * MiB
    with anyio.fail_after(30):
        async with python(ANSWER_ONE, str(size), "die") as transport:
            await transport.send(core.encode_request(1, "blob"))
            received = b"".join(await read_all(transport))
            assert received.startswith(b'{"jsonrpc":"2.0","id":1,"result":{"blob":"xxx')
            assert not received.endswith(b"\n")
            assert await transport.receive() == b""  # EOF stays EOF
            assert await transport.process.wait() == 3
            with pytest.raises(TransportClosedError):  # nobody reads the child's stdin any more
                await transport.send(b"{}\n")


async def test_a_session_sees_a_child_dying_mid_frame_as_a_closed_connection() -> None:
    with anyio.fail_after(30):
        async with python(ANSWER_ONE, str(MiB), "die") as transport, Session(transport) as session:
            with pytest.raises(ConnectionClosed):
                await session.request("blob")


async def test_a_slow_reader_holds_the_child_back_and_loses_nothing() -> None:
    size = 32 * MiB
    with anyio.fail_after(60):
        async with python(WRITE_PATTERN, str(size)) as transport:
            first = await transport.receive()  # reading has started
            await blocked_writing(transport.pid)  # the transport stopped reading ahead: the child waits
            assert transport.returncode is None
            chunks = [first, *await read_all(transport)]
            # what was read ahead while nobody asked comes as one chunk, a bounded one
            assert max(map(len, chunks)) <= _READ_AHEAD * RECEIVE_CHUNK
            assert b"".join(chunks) == PATTERN * (size // len(PATTERN))
            assert await transport.process.wait() == 0


async def test_closing_while_a_receive_is_pending_ends_it() -> None:
    received: list[bytes] = []

    async def reader(transport: ProcessTransport) -> None:
        received.append(await transport.receive())

    with anyio.fail_after(30):
        async with python("import sys; sys.stdin.read()") as transport, anyio.create_task_group() as tg:
            tg.start_soon(reader, transport)
            await all_blocked()
            await transport.aclose()
        assert received == [b""]
        assert transport.returncode == 0  # it exited on EOF, no signal needed


async def test_closing_while_a_pump_is_pending_ends_it() -> None:
    with anyio.fail_after(30):
        async with python("import sys; sys.stdin.read()") as transport:
            assert transport.pump is not None
            pump = transport.pump
            async with anyio.create_task_group() as tg:
                tg.start_soon(pump, lambda data: None)
                await all_blocked()
                await transport.aclose()
            assert await transport.receive() == b""


async def test_closing_while_a_send_waits_on_a_full_pipe_fails_that_send() -> None:
    errors: list[BaseException] = []

    async def writer(transport: ProcessTransport) -> None:
        try:
            await transport.send(b"x" * (8 * MiB))
        except TransportClosedError as exc:
            errors.append(exc)

    never_reads = "import signal; signal.pause()"  # and ignores EOF: SIGTERM ends it
    with anyio.fail_after(30):
        async with python(never_reads, grace=0.2) as transport, anyio.create_task_group() as tg:
            tg.start_soon(writer, transport)
            await all_blocked()
            await transport.aclose()
        assert len(errors) == 1
        assert transport.returncode == -signal.SIGTERM


async def test_closed_transport_refuses_sends_and_reads_nothing() -> None:
    with anyio.fail_after(30):
        async with python("import sys; sys.stdin.read(); print('after')") as transport:
            pass
        assert transport.returncode == 0
        assert await transport.receive() == b""  # 'after' was written but the transport is closed
        with pytest.raises(TransportClosedError):
            await transport.send(b"{}\n")
        assert transport.send_nowait is not None
        with pytest.raises(TransportClosedError):
            transport.send_nowait(b"{}\n")
        await transport.aclose()  # idempotent


async def test_closing_stdin_first_keeps_reading_and_refuses_sends() -> None:
    with anyio.fail_after(30):
        async with python("import sys; sys.stdin.read(); print('after')") as transport:
            await transport._stdin.aclose()
            with pytest.raises(TransportClosedError):
                await transport.send(b"{}\n")
            assert transport.send_nowait is not None
            assert transport.send_nowait(b"{}\n") == 0  # takes nothing; send would refuse it
            assert b"".join(await read_all(transport)) == b"after\n"


async def test_no_descriptor_outlives_the_transport() -> None:
    before = open_fds()
    with anyio.fail_after(30):
        async with python("import sys; sys.stdin.read()"):
            assert len(open_fds() - before) >= 2  # our ends of the two pipes
    assert open_fds() <= before


async def test_a_command_that_cannot_start_leaves_no_descriptor_behind(tmp_path: Path) -> None:
    before = open_fds()
    with pytest.raises(FileNotFoundError):
        await spawn(str(tmp_path / "no-such-server"))
    assert open_fds() <= before


async def test_a_process_opened_elsewhere_uses_its_own_streams() -> None:
    process = await anyio.open_process(
        [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.readline())"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    transport = ProcessTransport(process, grace=5.0)
    with anyio.fail_after(30):
        assert transport.pump is None
        assert transport.send_nowait is None
        await transport.send(b"hello\n")
        assert b"".join(await read_all(transport)) == b"hello\n"
        await transport.aclose()
    assert transport.returncode == 0
    with pytest.raises(TransportClosedError):
        await transport.send(b"x\n")


async def test_the_client_gets_large_tool_results_from_an_mcpframe_server() -> None:
    with anyio.fail_after(60):
        async with Client.stdio(sys.executable, ["-c", BLOB_SERVER], env=child_env(), timeout=30) as client:
            for size in (1, MiB, 8 * MiB):
                result = await client.call_tool("blob", {"size": size})
                assert result["content"][0]["text"] == "x" * size
