"""A suspended handler's JSON answer on the lean server (`Pending`) keeps its session busy while it runs.

The full path counts an open POST in `HttpSession.open_requests` (`touch(+1)`/`touch(-1)`), which is what
the idle reaper reads; `Pending` did not, so a `def` tool running longer than `idle_timeout` had its session
closed under it (and its answer lost). Now the reaper leaves the session alone until the answer is given,
and the count is back to zero after it.
"""

from __future__ import annotations

import anyio
import pytest

from mcpframe.http.fast_pending import Pending
from mcpframe.http.sessions import HttpSession

from ._live_support import serving
from ._server_support import call
from .test_deferred_light import LONG, Tools, _posting

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_reaper_leaves_a_session_with_a_pending_answer_alone() -> None:
    tools = Tools()
    async with serving(tools, response_mode="auto", stream_after=LONG) as (url, app, client, headers):
        session = app.sessions.find(headers, None)
        assert isinstance(session, HttpSession)
        async with _posting(client, url, headers, call("hold", {"text": "long"}, rid=5)) as got:
            await tools.entered.wait()
            [pending] = session.exchanges()
            assert isinstance(pending, Pending)
            assert session.open_requests == 1
            app.sessions.idle_timeout = 0.0  # everything idle is past its time now
            assert await app.sessions.reap() == 0  # but this session has a request open
            assert not session.closed
            tools.gate.set()
        assert got[0].status_code == 200
        assert got[0].json()["result"]["content"] == [{"type": "text", "text": "long"}]
        assert session.open_requests == 0
        with anyio.fail_after(10):
            assert await app.sessions.reap() == 1  # idle now: reaped as any other
        assert session.closed
