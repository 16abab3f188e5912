"""The parts of a suspended POST's answer on the lean server, alone: the `Parked` answer the wire server waits
on, the shared timeouts (`http/deadlines.py`) with an SSE reply's keep-alive on them, and the lean
server's `receive` that tells of a client leaving. The whole path: test_server_deferred.py."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mcpframe.http import wire as wire_module
from mcpframe.http.deadlines import Deadlines
from mcpframe.http.responses import SseReply
from mcpframe.http.streams import KEEPALIVE, Stream
from mcpframe.http.wire_parts import Parked

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_a_parked_answer_gives_its_first_answer_once_whichever_comes_first() -> None:
    got: list[tuple[str, Any]] = []
    early = Parked()
    early.deliver((200, b"", b"early"))
    early.deliver((500, b"", b"ignored"))
    early.park(lambda answer: got.append(("a", answer)))  # delivered before it was parked: given now
    late = Parked()
    late.park(lambda answer: got.append(("b", answer)))
    assert len(got) == 1
    late.deliver((200, b"", b"late"))
    late.deliver((200, b"", b"again"))
    assert got == [("a", (200, b"", b"early")), ("b", (200, b"", b"late"))]


def test_a_parked_answer_given_up_cancels_once_and_drops_what_comes_after() -> None:
    got: list[Any] = []
    cancels: list[str] = []

    class Counted(Parked):
        __slots__ = ()

        def cancel(self) -> None:
            cancels.append("cancel")

    parked = Counted()
    parked.park(got.append)
    parked.give_up()  # the server closes
    parked.deliver((200, b"", b"too late"))
    assert (got, cancels) == ([], ["cancel"])
    delivered_first = Counted()
    delivered_first.give_up()
    delivered_first.park(got.append)  # nothing to give: it was given up
    assert got == []


class _FakeLoop:
    """A loop clock the test moves, with `call_at` recorded (the deadlines' one timer)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None]) -> object:
        self.timers.append((when, callback))
        return object()

    def fire(self) -> None:
        when, callback = self.timers.pop(0)
        self.now = max(self.now, when)
        callback()


def test_the_deadlines_fire_in_order_on_one_timer_and_skip_the_cancelled() -> None:
    loop = _FakeLoop()
    deadlines = Deadlines(loop, 1.0)  # type: ignore[arg-type]
    fired: list[str] = []
    first = deadlines.add(lambda: fired.append("first"))
    loop.now += 0.5
    second = deadlines.add(lambda: fired.append("second"))
    deadlines.add(lambda: fired.append("third"))
    assert [when for when, _ in loop.timers] == [101.0]  # one timer, for the oldest
    assert first[0] == 101.0
    assert second[0] == 101.5
    second[1] = None  # answered in time
    loop.fire()
    assert fired == ["first"]
    assert [when for when, _ in loop.timers] == [101.5]  # re-armed for the next one still waiting
    loop.fire()
    assert fired == ["first", "third"]
    assert loop.timers == []
    cancelled = deadlines.add(lambda: fired.append("never"))
    cancelled[1] = None
    loop.fire()
    assert fired == ["first", "third"]
    assert loop.timers == []


def test_a_deadline_callback_that_adds_another_keeps_one_timer() -> None:
    loop = _FakeLoop()
    deadlines = Deadlines(loop, 1.0)  # type: ignore[arg-type]
    fired: list[int] = []

    def again() -> None:  # as an SSE keep-alive does: each one waits for the next
        fired.append(len(fired))
        deadlines.add(again)

    deadlines.add(again)
    for rounds in range(1, 4):
        loop.fire()
        assert fired == list(range(rounds))
        assert len(loop.timers) == 1  # one live timer, however many rounds
        assert len(deadlines._queue) == 1


def test_a_deadline_callback_that_raises_loses_neither_the_others_nor_the_timer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = _FakeLoop()
    deadlines = Deadlines(loop, 1.0)  # type: ignore[arg-type]
    fired: list[str] = []

    def broken() -> None:
        raise RuntimeError("boom")

    def interrupted() -> None:
        raise KeyboardInterrupt

    deadlines.add(broken)
    deadlines.add(lambda: fired.append("after the failure"))
    loop.now += 0.5
    deadlines.add(interrupted)
    deadlines.add(lambda: fired.append("after the interrupt"))
    loop.fire()
    assert fired == ["after the failure"]
    assert "callback failed" in caplog.text
    with pytest.raises(KeyboardInterrupt):  # what is no `Exception` goes on up, to the loop
        loop.fire()
    assert [when for when, _ in loop.timers] == [101.5]  # the one still waiting keeps its timer
    loop.fire()
    assert fired == ["after the failure", "after the interrupt"]
    assert loop.timers == []


async def test_the_deadlines_are_per_loop_and_length() -> None:
    one = Deadlines.of(1.0)
    assert Deadlines.of(1.0) is one
    other = Deadlines.of(2.0)
    assert other is not one
    assert other.wait == 2.0
    assert Deadlines.of(1.0) is one  # lengths used in turn keep their own

    def elsewhere() -> Deadlines:
        async def there() -> Deadlines:
            return Deadlines.of(1.0)

        return asyncio.run(there())

    theirs = await anyio.to_thread.run_sync(elsewhere)
    assert theirs is not one
    assert theirs.loop is not one.loop
    fired = anyio.Event()
    zero = Deadlines.of(0.0)
    zero.add(fired.set)
    with anyio.fail_after(10):
        await fired.wait()


async def test_a_callback_that_fails_does_not_keep_the_others_waiting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deadlines = Deadlines.of(0.0)
    fired = anyio.Event()

    def broken() -> None:
        raise RuntimeError("boom")

    deadlines.add(broken)
    deadlines.add(fired.set)
    with anyio.fail_after(10):
        await fired.wait()
    assert "callback failed" in caplog.text


async def test_a_quiet_sse_reply_writes_keepalives_on_the_shared_timer_and_ends_with_its_stream() -> None:
    stream = Stream(None, None)
    pipe = await stream.attach(retry_ms=None)
    reply = SseReply(stream, pipe, keepalive=0.001)
    sent: list[dict[str, Any]] = []
    quiet = anyio.Event()

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if sum(m.get("body") == KEEPALIVE for m in sent) >= 2:
            quiet.set()

    async def receive() -> dict[str, Any]:
        await anyio.sleep_forever()  # the client stays
        raise AssertionError

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reply, receive, send)
            await quiet.wait()
            await stream.emit(b'{"jsonrpc":"2.0","id":1,"result":{}}', response=True)
            stream.finish()
    bodies = [m["body"] for m in sent if m["type"] == "http.response.body"]
    assert bodies[:2] == [KEEPALIVE, KEEPALIVE]
    assert b'"id":1' in b"".join(bodies[2:])
    assert sent[-1]["more_body"] is False
    assert all(entry[1] is None for entry in Deadlines.of(0.001)._queue)  # no wake-up left behind


def test_the_lean_receive_tells_of_a_client_that_left_already_at_once() -> None:
    cycle = wire_module.Cycle("POST", b"/mcp", "1.1", [], True)
    gone = types.SimpleNamespace(lost=True)
    told: list[str] = []
    wire_module._Receive(gone, cycle).on_disconnect(lambda: told.append("left"))  # type: ignore[arg-type]
    assert told == ["left"]
    assert cycle.on_lost is None
    here = types.SimpleNamespace(lost=False)
    receive = wire_module._Receive(here, cycle)  # type: ignore[arg-type]
    receive.on_disconnect(lambda: told.append("later"))
    assert cycle.on_lost is not None
    receive.on_disconnect(None)
    assert cycle.on_lost is None
