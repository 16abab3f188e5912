"""Edges of a handler's first step that the eager start (``session/eager.py``) must not carry over to the
next handler: one that cancels its own task and uncancels it again, then finishes or suspends; and a
``SuspendRule`` whose ``names`` raises while the Session checks it inline. Each runs with and without the
eager start; the next request is always answered.

No test here waits for time to pass: the handlers only yield to the loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
import pytest
from tests.session._support import raw_session, settled

from mcpframe.session import Request, Session, SuspendRule

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=[True, False], ids=["eager", "tasks"])
def eager(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """With the eager start (where there is one) and without: `Session.eager_handlers` for the test."""
    monkeypatch.setattr(Session, "eager_handlers", request.param)
    return bool(request.param)


def _undo() -> asyncio.Task[Any]:
    """Cancel and uncancel the current task; the task."""
    task = asyncio.current_task()
    assert task is not None
    task.cancel()
    task.uncancel()
    return task


async def _undo_then_yield() -> tuple[str, int]:
    """``_undo``, then yield to the loop (catching a cancellation that lands there, as 3.11 and 3.12
    deliver it): whether one did, and ``cancelling()`` after."""
    task = _undo()
    try:
        await asyncio.sleep(0)
    except asyncio.CancelledError:
        return ("cancelled", task.cancelling())
    return ("waited", task.cancelling())


async def _handler(request: Request) -> Any:
    """``undo``: cancel and uncancel its own task, then finish; ``undo-wait``: ``_undo_then_yield``;
    ``next``: suspend."""
    if request.method == "undo":
        _undo()
        return "undone"
    if request.method == "undo-wait":
        return await _undo_then_yield()
    await asyncio.sleep(0)  # suspends: an eager start hands it to a host task
    await asyncio.sleep(0)
    return "next"


@pytest.mark.parametrize("answered_first", [True, False])
@pytest.mark.parametrize("first", ["undo", "undo-wait"])
async def test_the_request_after_a_cancel_and_uncancel_is_answered(
    eager: bool, answered_first: bool, first: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="mcpframe"), anyio.fail_after(10):
        async with raw_session(_handler) as (session, peer):
            await peer.request(1, first)
            seen: list[Any] = []
            if answered_first:  # the loop turns between the two: the host (if any) wakes before 2 comes
                reply, _ = await peer.until(1)
                seen.append(reply)
            await peer.request(2, "next")
            reply, before = await peer.until(2)
            assert reply.result == "next"
            seen.extend(before)
            if not seen:
                first_reply, _ = await peer.until(1)
                seen.append(first_reply)
            assert [m.id for m in seen] == [1]
            assert seen[0].result == ("undone" if first == "undo" else await _in_a_task_of_its_own())
            await settled(session)
    assert [r.getMessage() for r in caplog.records] == []


async def _in_a_task_of_its_own() -> list[Any]:
    """``undo-wait``'s answer (as JSON gives it back) where it runs in a task of its own (3.13's
    ``uncancel`` to 0 drops the pending cancel; 3.11 and 3.12 still deliver it where the task waits next,
    ``cancelling()`` at 0)."""
    return list(await asyncio.get_running_loop().create_task(_undo_then_yield()))


class _Raising:
    """A ``names`` container whose membership test raises (not ``TypeError``)."""

    def __contains__(self, key: object) -> bool:
        raise KeyError(key)


async def test_a_rule_whose_names_raise_logs_and_the_request_is_still_answered(
    eager: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="mcpframe.session"), anyio.fail_after(10):
        async with raw_session(_handler) as (session, peer):
            session.suspends = SuspendRule("next", "name", _Raising())  # before its run starts
            await peer.request(1, "next", {"name": "t"})
            reply, _ = await peer.until(1)
            assert reply.result == "next"
            await peer.request(2, "next", {"name": "t"})  # id 1 is free again; 2 goes the same way
            reply, _ = await peer.until(2)
            assert reply.result == "next"
            await settled(session)
            assert 1 not in session._incoming
            checked = session._eager is not None
    failures = [r for r in caplog.records if "Session.suspends failed" in r.getMessage()]
    # Only where the rule is checked at all: an eager start to skip (without one, every request is a task).
    assert len(failures) == (2 if checked else 0)
