"""The listening proxy's children get a stdin pipe of the proxy's own (`proxy/listen_input.py`), public
asyncio on every path: the fast path writes in the caller's loop turn also with `MCPFRAME_PUBLIC_ONLY=1`,
a child that does not read holds its writers back with at most one write beyond the transport's mark
buffered, and a child that dies fails the writes (waiting or new) at once and the call it had."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from tests._blocked import all_blocked
from tests.proxy._listen_support import child_env

from mcpframe import core
from mcpframe.proxy.pool import Child, ChildPool

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]

_ECHO_CHILD = r"""
import sys
for line in sys.stdin.buffer:
    sys.stdout.buffer.write(line)
    sys.stdout.flush()
"""

_HELD_CHILD = r"""
import hashlib, json, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "ready"}) + "\n")
sys.stdout.flush()
signal.sigwait({signal.SIGUSR1})  # reads nothing until told
data = sys.stdin.buffer.read()
params = {"n": len(data), "sha": hashlib.sha256(data).hexdigest()}
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "seen", "params": params}) + "\n")
sys.stdout.flush()
"""

_PUBLIC_ONLY_SCRIPT = r"""
import json, sys
import anyio, httpx
from mcpframe._unstable import choices
from mcpframe.proxy.listen_input import ChildInput
from tests.proxy._listen_support import JSON_ONLY, in_process_proxy, open_session, rpc
from tests.proxy.conftest import PEER

assert not any(choice.private for choice in choices().values()), choices()
left = []  # bytes left for the loop to write after each fast write (0: written in the caller's turn)
write_now = ChildInput.write_now

def recording(self, data):
    taken = write_now(self, data)
    if taken:
        left.append(self.buffered)
    return taken

ChildInput.write_now = recording

async def main():
    async with in_process_proxy(PEER) as proxy, httpx.AsyncClient(timeout=20) as http:
        headers = {**JSON_ONLY, **await open_session(http, proxy.url)}
        answers = [(await http.post(proxy.url, json=rpc(i, "echo", {"i": i}), headers=headers)).json()
                   for i in range(3)]
        crashed = (await http.post(proxy.url, json=rpc(9, "crash", {"status": 3}), headers=headers)).json()
        seen = {"taken": proxy.app.fast.taken, "left": left, "answers": answers, "crashed": crashed}
        print(json.dumps(seen))

anyio.run(main)
"""


async def _first_frame(child: Child) -> core.Message:
    async for item in child.frames(max_frame=1 << 20):
        assert isinstance(item, core.Message)
        return item
    raise AssertionError("the child's stdout ended")


def test_the_fast_path_writes_in_the_callers_turn_with_public_only() -> None:
    env = child_env(MCPFRAME_PUBLIC_ONLY="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env["PYTHONPATH"]])
    done = subprocess.run(
        [sys.executable, "-c", _PUBLIC_ONLY_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["taken"] == 4  # three echoes and the crash, all on the fast path
    assert seen["left"] == [0, 0, 0, 0]  # each frame went to the pipe at once, none through the loop
    assert [a["result"]["params"] for a in seen["answers"]] == [{"i": 0}, {"i": 1}, {"i": 2}]
    error = seen["crashed"]["error"]  # the dead child's pending call failed with the usual error
    assert error["code"] == -32000
    assert "status 3" in error["message"]


async def test_write_now_leaves_nothing_for_the_loop_and_write_follows_in_order() -> None:
    pool = ChildPool([sys.executable, "-c", _ECHO_CHILD], env=child_env())
    child = await pool.spawn()
    try:
        with anyio.fail_after(20):
            first = b'{"jsonrpc":"2.0","method":"one"}\n'
            assert child.write_now(first)
            assert child.input.buffered == 0  # the pipe took it in this turn
            await child.write(b'{"jsonrpc":"2.0","method":"two"}\n')
            methods = []
            async for item in child.frames(max_frame=1 << 20):
                assert isinstance(item, core.Message)
                methods.append(item.method)
                if len(methods) == 2:
                    break
            assert methods == ["one", "two"]
    finally:
        with anyio.fail_after(10):
            assert await child.close() == 0  # its stdin closed: it read to the end and left


async def test_a_child_that_does_not_read_holds_its_writer_back() -> None:
    pool = ChildPool([sys.executable, "-c", _HELD_CHILD], env=child_env())
    child = await pool.spawn()
    chunk = bytes(range(256)) * 256  # 64 KiB
    count = 64  # 4 MiB in all: far more than the pipe and the transport's mark hold
    done: list[int] = []

    async def writer() -> None:
        for n in range(count):
            await child.write(chunk)
            done.append(n)

    try:
        with anyio.fail_after(30):
            assert (await _first_frame(child)).method == "ready"  # (its signal mask is set)
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer)
                await all_blocked()
                transport = child.input.transport
                assert transport is not None
                high = transport.get_write_buffer_limits()[1]
                assert len(done) < count // 4  # held back, not run to the end
                assert 0 < child.input.buffered <= high + len(chunk)  # bounded: one write past the mark
                assert not child.write_now(b"x\n")  # never ahead of bytes waiting to be written
                os.kill(child.pid, signal.SIGUSR1)  # it reads now: the writer goes on to the end
            assert len(done) == count
            child.input.close()  # EOF after the rest: it reports what it read
            seen = await _first_frame(child)
    finally:
        with anyio.fail_after(10):
            await child.close()
    sent = chunk * count
    assert seen.params == {"n": len(sent), "sha": hashlib.sha256(sent).hexdigest()}
    assert child.returncode == 0


async def test_a_dead_child_fails_a_waiting_write_and_every_later_one() -> None:
    pool = ChildPool([sys.executable, "-c", "import time; time.sleep(60)"], env=child_env())
    child = await pool.spawn()
    failed: list[BaseException] = []

    async def writer() -> None:
        try:
            while True:
                await child.write(b"y" * 65536)
        except anyio.BrokenResourceError as exc:
            failed.append(exc)

    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer)
                await all_blocked()  # the pipe is full: the writer waits for the child to read
                assert not failed
                child.process.kill()
            assert len(failed) == 1  # woken by the broken pipe, not left waiting
            with pytest.raises(anyio.BrokenResourceError, match="exited"):
                await child.write(b"z\n")
            assert not child.write_now(b"z\n")
    finally:
        with anyio.fail_after(10):
            status = await child.close()
    assert status == -signal.SIGKILL
    assert pool.running == 0


async def test_a_closed_input_refuses_writes() -> None:
    pool = ChildPool([sys.executable, "-c", _ECHO_CHILD], env=child_env())
    child = await pool.spawn()
    try:
        with anyio.fail_after(20):
            child.input.close()
            with pytest.raises(anyio.ClosedResourceError):
                await child.write(b"late\n")
            assert not child.write_now(b"late\n")
            assert await child.process.wait() == 0  # EOF reached it: it left on its own
    finally:
        with anyio.fail_after(10):
            await child.close()
