"""A graceful stop's tracking, mended (issues 11/9): no wrapper per connection, the requests in flight found
in the Sessions they came on.

- Two requests whose handlers run with no current task (a handler stepped from a loop callback) are both
  tracked: the stop once keyed its running requests by `current_task()`, so the second overwrote the first
  and the first's end removed the second, and `settle` returned while the second still ran.
- A server started under a stop that already began (`Stop.follower`) refuses every request, saying why.
- At the end of the grace period a request still running is cut (`Request.abort`): its handler sees one
  cancellation and the client gets the -32000 error; a request the client cancelled gets no answer.
- A stop lets go of the Sessions that ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import anyio
import orjson
import pytest

from mcpframe import core, jsonrpc
from mcpframe.server import Server
from mcpframe.server.eras import PROTOCOL_VERSION_KEY
from mcpframe.server.lifecycle import Stop
from mcpframe.session import JSONRPCError, Session, inline
from mcpframe.transports.memory import memory_pair

from ._driver import connect, legacy

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


def modern_call(rid: int, name: str, arguments: dict[str, Any]) -> Any:
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": {PROTOCOL_VERSION_KEY: MODERN}},
    }
    (decoded,) = core.Decoder().feed(orjson.dumps(body) + b"\n")
    return decoded


def step_outside_any_task(coro: Coroutine[Any, Any, None]) -> None:
    """Drive `coro` from loop callbacks only: no task is current while its steps run."""
    loop = asyncio.get_running_loop()

    def step() -> None:
        assert asyncio.current_task() is None
        try:
            waited = coro.send(None)
        except StopIteration:
            return
        waited.add_done_callback(lambda _: loop.call_soon(step))

    loop.call_soon(step)


async def test_two_requests_running_with_no_current_task_are_both_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the handler is awaited directly, as the default path does: an anyio cancel scope needs a task
    monkeypatch.setattr(inline, "IN_SCOPE", False)
    loop = asyncio.get_running_loop()
    gates = {1: loop.create_future(), 2: loop.create_future()}
    server = Server("t")

    @server.tool
    async def hold(n: int) -> str:
        """Answers once its gate opens."""
        await gates[n]
        return f"held {n}"

    conn = server.connection()
    stop = Stop(30.0)
    stop.track_connection(conn)
    session = Session(memory_pair()[0], request_handler=conn.handle_request)
    answers: dict[Any, bytes] = {}
    both_ran = anyio.Event()

    async def deliver(rid: Any, frame: bytes) -> None:
        answers[rid] = frame

    for rid in (1, 2):
        step_outside_any_task(inline.answer_inline(session, modern_call(rid, "hold", {"n": rid}), deliver))
    with anyio.fail_after(5):
        while len(stop._running) < 2:
            await anyio.lowlevel.checkpoint()
        both_ran.set()
        gates[1].set_result(None)
        while 1 not in answers:
            await anyio.lowlevel.checkpoint()
    assert [r.id for r in stop._running] == [2]  # the first's end left the second tracked
    settled = anyio.Event()

    async def settle() -> None:
        await stop.settle()
        settled.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(settle)
        with anyio.fail_after(5):
            while not stop.refusing:
                await anyio.lowlevel.checkpoint()
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        assert not settled.is_set()  # it waits for the second
        gates[2].set_result(None)
        with anyio.fail_after(5):
            await settled.wait()
    assert orjson.loads(answers[2])["result"]["content"][0]["text"] == "held 2"
    assert not stop._running


async def test_a_server_started_after_the_shutdown_began_says_why_it_refuses() -> None:
    outer = Stop(1.0)
    outer.request()
    with outer.follower() as stop:
        assert stop.refusing
        async with connect(Server("late"), stops=(stop,)) as driver:
            with pytest.raises(JSONRPCError) as refused:
                await driver.modern("tools/list")
    assert refused.value.code == jsonrpc.CONNECTION_CLOSED
    assert refused.value.message == (
        "Server shutting down: request not started: this server was started after the shutdown began"
    )


async def test_a_stop_that_began_on_its_own_says_only_that_the_request_did_not_start() -> None:
    stop = Stop(1.0)
    async with connect(Server("t"), stops=(stop,)) as driver:
        await stop.settle()
        with pytest.raises(JSONRPCError) as refused:
            await driver.modern("tools/list")
    assert refused.value.code == jsonrpc.CONNECTION_CLOSED
    assert refused.value.message == "Server shutting down: request not started"


async def test_a_request_running_past_the_grace_period_is_cut_and_answered() -> None:
    server = Server("t")
    entered = anyio.Event()
    seen: list[str] = []

    @server.tool
    async def stuck() -> str:
        """Never answers by itself."""
        entered.set()
        try:
            await anyio.sleep_forever()
        except BaseException as exc:
            seen.append(type(exc).__name__)
            raise
        return "never"

    stop = Stop(0.0)
    async with legacy(server, stops=(stop,)) as driver, anyio.create_task_group() as tg:
        got: list[BaseException] = []

        async def call() -> None:
            try:
                await driver.request("tools/call", {"name": "stuck", "arguments": {}})
            except JSONRPCError as exc:
                got.append(exc)

        tg.start_soon(call)
        with anyio.fail_after(5):
            await entered.wait()
            assert len(stop._running) == 1
            await stop.settle()
    assert seen == ["CancelledError"]  # cut once
    (error,) = got
    assert isinstance(error, JSONRPCError)
    assert error.code == jsonrpc.CONNECTION_CLOSED
    assert error.message == "Server shutting down: the request did not finish in the 0 s grace period"
    assert not stop._running


async def test_a_request_the_client_cancelled_is_not_answered_when_the_stop_cuts_it() -> None:
    server = Server("t")
    entered = anyio.Event()

    @server.tool
    async def stuck() -> str:
        """Never answers by itself."""
        entered.set()
        await anyio.sleep_forever()
        return "never"

    stop = Stop(0.0)
    async with connect(server, stops=(stop,)) as driver:
        await driver.initialize()
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(driver.request, "tools/call", {"name": "stuck", "arguments": {}})
                await entered.wait()
                (request,) = stop._running
                request.cancel()  # as notifications/cancelled does
                request.abort(JSONRPCError(jsonrpc.CONNECTION_CLOSED, "too late"))
                await request.wait_done()
                # answered after anything sent for the call (whose answer would fail this task group)
                assert (await driver.request("ping")) == {}
                tg.cancel_scope.cancel()  # no answer came: the client stops waiting
        assert not stop._running


async def test_a_stop_lets_go_of_sessions_that_ended() -> None:
    stop = Stop(1.0)
    ended = []
    for _ in range(64):
        session = Session(memory_pair()[0])
        await session.aclose()
        stop.watch(session)
        ended.append(session)
    live = Session(memory_pair()[0])
    stop.watch(live)
    assert stop.sessions == {live}
    stop.watch(ended[0])  # watched again: nothing is dropped that still counts
    assert stop.sessions == {live, ended[0]}
