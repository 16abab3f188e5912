"""A ``Session.suspends`` hook that raises is logged, and its request (registered before the hook is asked)
starts in a task of its own: it is answered, and its id is free again after. Both places that ask the
hook: ``start_inline`` (what Streamable HTTP uses) and the Session's own reader.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from tests.session._support import RawPeer
from tests.session.test_inline import Wire, message, running

from mcpframe.session import Request, Session
from mcpframe.session.eager import AVAILABLE as EAGER
from mcpframe.session.inline import start_inline
from mcpframe.transports import memory_pair

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not EAGER, reason="no eager start: the hook is never asked"),
]


def broken(request: Request) -> bool:
    raise LookupError("a bug in the hook")


async def echo(request: Request) -> Any:
    return {"echo": request.id}


async def test_start_inline_answers_a_request_whose_hook_raised_and_frees_its_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wire = Wire()
    caplog.set_level(logging.ERROR, logger="mcpframe.session")
    async with running(Session(wire, request_handler=echo)) as session:
        session.suspends = broken
        start_inline(session, message(1, "echo"), wire.deliver)
        assert wire.log == []  # not run in this step: in a task of its own, the safe guess
        assert session._incoming[1]._task is not None
        with anyio.fail_after(5):
            while len(wire.log) < 1:
                await anyio.lowlevel.checkpoint()
        start_inline(session, message(1, "echo"), wire.deliver)  # the same id again: not "in flight"
        with anyio.fail_after(5):
            while len(wire.log) < 2:
                await anyio.lowlevel.checkpoint()
        assert session._incoming == {}
    assert [(m.kind, m.id, m.result) for m in wire.messages()] == [("result", 1, {"echo": 1})] * 2
    failures = [r for r in caplog.records if "Session.suspends failed" in r.getMessage()]
    assert len(failures) == 2  # once per request asked
    assert failures[0].exc_info is not None
    assert failures[0].exc_info[0] is LookupError


async def test_the_session_reader_answers_a_request_whose_hook_raised_and_frees_its_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ours, theirs = memory_pair()
    peer = RawPeer(theirs)
    caplog.set_level(logging.ERROR, logger="mcpframe.session")
    async with Session(ours, request_handler=echo) as session:
        session.suspends = broken
        with anyio.fail_after(5):
            for _ in range(2):  # the same id twice, each after the other's answer
                await peer.request(7, "echo")
                answer, before = await peer.until(7)
                assert (answer.kind, answer.result, before) == ("result", {"echo": 7}, [])
        assert session._incoming == {}
    failures = [r for r in caplog.records if "Session.suspends failed" in r.getMessage()]
    assert len(failures) == 2
