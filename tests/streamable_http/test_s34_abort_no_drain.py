"""An aborted exchange (its session deleted, its client gone) ends its lane's Session without waiting for
writes held behind a client that reads nothing: a DELETE while a producer waits for room on a full SSE
socket returns at once, whatever `drain_timeout` (here an hour: the guard, not the timeout, would end a
wait; `Session.aclose(drain=False)`)."""

from __future__ import annotations

import anyio
import pytest

from mcpframe.http import sse_wire
from mcpframe.session import SessionOptions

from ._live_support import flooding, serving, until
from .test_sse_wire import _LOGS, Tools, writers

__all__ = ["writers"]  # the fixture, used by name

pytestmark = pytest.mark.anyio

HOUR = 3600.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_delete_while_a_producer_waits_for_room_does_not_wait_for_the_drain(
    writers: list[sse_wire.SseWriter],
) -> None:
    tools = Tools()
    options = SessionOptions(drain_timeout=HOUR)
    async with (
        serving(tools, response_mode="sse", session_options=options) as (url, _, client, headers),
        flooding(url, headers, writers),
    ):
        with anyio.fail_after(30):  # a hang guard: the drain would take an hour
            assert (await client.delete(url, headers=headers)).status_code in (200, 204)
            await until(lambda: writers[0].closed)
    assert tools.logged < _LOGS  # the producer was cancelled where it waited
