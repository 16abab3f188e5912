"""A lone `def` tool call read by the Session's reader takes its first step (the hand-over to its worker
thread) once the chunk that carried it is read, in that loop iteration (``Intake.take``), not at the next
one; several in one chunk still start when scheduled, in order. A real Server on a memory pair.

The chunk is fed to the Session's intake directly (``Intake.feed``, what its reader calls), so "before the
loop ran again" is the moment right after ``feed`` returns, with no await in between. Nothing waits for
time to pass: tools wait on events the test sets, the test on conditions (bounded by ``anyio.fail_after``).
"""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import orjson
import pytest
from tests.server.test_stdio_suspends import Tools, answers_until_ping, call, cancel, serving, settled

from mcpframe._unstable.asyncio_tasks import CHOICE
from mcpframe.server import Server
from mcpframe.session import SessionOptions

pytestmark = pytest.mark.anyio

needs_step_now = pytest.mark.skipif(not CHOICE.private, reason="step_now steps nothing on the public path")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@needs_step_now
async def test_a_lone_def_call_starts_before_the_loop_runs_again() -> None:
    tools = Tools()
    async with serving(tools) as (peer, session):
        with anyio.fail_after(10):
            session._intake.feed(call(10, "hold"))
            request = session._incoming[10]
            assert request._started  # its first step ran inside `feed`
            assert await anyio.to_thread.run_sync(tools.entered.wait, 10)
            tools.gate.set()
            answer, before = await peer.until(10)
        assert before == []
        assert answer.result["content"] == [{"type": "text", "text": "hold"}]
        assert tools.ran == ["hold"]


async def test_two_def_calls_in_one_chunk_start_when_scheduled_and_both_answer() -> None:
    tools = Tools()
    async with serving(tools) as (peer, session):
        with anyio.fail_after(10):
            session._intake.feed(call(11, "x") + call(12, "y"))
            assert not session._incoming[11]._started  # neither is stepped out of its turn
            assert not session._incoming[12]._started
            got = {}
            while len(got) < 2:
                item = await peer.receive()
                got[item.id] = item.result
            await settled(session)
        assert got[11]["content"] == [{"type": "text", "text": "x"}]
        assert got[12]["content"] == [{"type": "text", "text": "y"}]
        assert sorted(tools.ran) == ["x", "y"]


async def test_a_cancel_later_in_the_chunk_is_read_before_the_first_step() -> None:
    tools = Tools()
    async with serving(tools) as (peer, session):
        with anyio.fail_after(10):
            session._intake.feed(call(13, "never") + cancel(13))
            await settled(session)
            assert await answers_until_ping(peer, 93) == []
        assert tools.ran == []


async def test_a_cancel_while_a_stepped_call_runs_in_its_worker_means_no_answer() -> None:
    tools = Tools()
    async with serving(tools) as (peer, session):
        with anyio.fail_after(10):
            session._intake.feed(call(14, "hold"))
            assert await anyio.to_thread.run_sync(tools.entered.wait, 10)
            session._intake.feed(cancel(14))
            await settled(session)
            tools.gate.set()
            assert await answers_until_ping(peer, 94) == []
            await peer.send(call(15, "after"))
            answer, _ = await peer.until(15)
        assert answer.result["content"] == [{"type": "text", "text": "after"}]
        assert tools.ran == ["hold", "after"]


class Failing:
    """A Server whose `def` tools fail or wait (``slow`` waits on ``gate``), counting what they ran."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.count = 0
        self.lock = threading.Lock()
        self.server = server = Server("stdio-def-step", version="1.0.0")

        @server.tool
        def boom(text: str) -> str:
            """A `def` tool that raises."""
            raise ValueError(f"no {text}")

        @server.tool
        def slow(text: str) -> str:
            """A `def` tool that waits for the gate (a slow handler)."""
            self.gate.wait(10)
            with self.lock:
                self.count += 1
            return text


def tool_call(rid: int, name: str, text: str) -> bytes:
    params = {"name": name, "arguments": {"text": text}}
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}) + b"\n"


async def test_a_def_tool_that_raises_answers_its_error_result() -> None:
    failing = Failing()
    async with serving(failing) as (peer, session):
        with anyio.fail_after(10):
            session._intake.feed(tool_call(20, "boom", "way"))
            answer, before = await peer.until(20)
            await settled(session)
    assert before == []
    assert answer.result["isError"] is True
    assert "no way" in answer.result["content"][0]["text"]


async def test_many_def_calls_one_per_chunk_all_answer_once() -> None:
    failing = Failing()
    failing.gate.set()
    async with serving(failing) as (peer, session):
        with anyio.fail_after(20):
            for rid in range(100, 160):
                await peer.send(tool_call(rid, "slow", f"t{rid}"))
            got: dict[int, str] = {}
            while len(got) < 60:
                item = await peer.receive()
                assert item.kind == "result", item
                assert item.id not in got  # answered once
                got[item.id] = item.result["content"][0]["text"]
            await settled(session)
    assert got == {rid: f"t{rid}" for rid in range(100, 160)}
    assert failing.count == 60


async def test_slow_def_calls_past_the_in_flight_bound_wait_and_all_answer() -> None:
    failing = Failing()
    async with serving(failing, SessionOptions(max_in_flight=2)) as (peer, session):
        with anyio.fail_after(20):
            for rid in range(200, 210):
                await peer.send(tool_call(rid, "slow", f"s{rid}"))
            while len(session._incoming) < 2 or session._intake.waiting == 0:
                await anyio.sleep(0)  # the bound reached: the rest wait in the backlog, not started
            assert len(session._incoming) == 2
            failing.gate.set()
            got: dict[int, str] = {}
            while len(got) < 10:
                item = await peer.receive()
                assert item.kind == "result", item
                got[item.id] = item.result["content"][0]["text"]
            await settled(session)
    assert got == {rid: f"s{rid}" for rid in range(200, 210)}
    assert failing.count == 10
