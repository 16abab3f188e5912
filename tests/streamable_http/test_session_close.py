"""`HttpSession.close` ends every stream, also when a stream's wake-up callback (run by `finish`) adds or
forgets a stream of the same session while the close walks them."""

from __future__ import annotations

import pytest

from mcpframe.http.sessions import HttpSession
from mcpframe.http.streams import Stream
from mcpframe.server import Server

pytestmark = pytest.mark.anyio


def _session() -> HttpSession:
    return HttpSession("s1", Server("close-test").connection(), None)


async def test_a_callback_that_forgets_streams_does_not_break_the_walk() -> None:
    session = _session()
    first, second, third = session.new_stream(), session.new_stream(), session.new_stream()

    def forget_the_others() -> None:  # what an exchange's end does: the session forgets its stream
        for stream in (first, second, third):
            stream.finished.set()
            session.stream_ended(stream)

    first.on_wake = forget_the_others
    await session.close()
    assert all(s.finished.is_set() for s in (session.get_stream, first, second, third))
    assert second.wake.is_set()
    assert third.wake.is_set()


async def test_a_stream_added_while_closing_is_finished_too() -> None:
    session = _session()
    added: list[Stream] = []
    first = session.new_stream()

    def add_one() -> None:  # e.g. a pipelined request started by a parked answer's end
        added.append(session.new_stream())

    first.on_wake = add_one
    await session.close()
    assert len(added) == 1
    assert added[0].finished.is_set()
    assert added[0].wake.is_set()
    late = session.new_stream()  # after the close: ends at once, nobody would ever finish it
    assert late.finished.is_set()
