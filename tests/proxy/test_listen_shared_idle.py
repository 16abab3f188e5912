"""`--multiplex shared`: the shared child is ended once no session has been open for `--idle-timeout`
seconds, and the next session's `initialize` starts one again (its handshake redone). Ending it so is not
the child dying: `--on-upstream-exit exit` does not end the proxy for it. The proxy's clock is replaced
where the test decides when time has passed; elsewhere it waits for the proxy's count of reaped children."""

from __future__ import annotations

import anyio
import httpx
import pytest
from tests.proxy._listen_support import JSON_ONLY, in_process_proxy, rpc
from tests.proxy._shared_support import call, initialize, until
from tests.proxy.conftest import PEER

pytestmark = pytest.mark.anyio


async def test_the_idle_shared_child_is_ended_by_the_clock_and_started_again_on_the_next_session() -> None:
    async with (
        in_process_proxy(PEER, multiplex="shared", on_upstream_exit="exit", idle_timeout=60) as proxy,
        httpx.AsyncClient(timeout=20) as http,
    ):
        shared = proxy.app.shared
        assert shared is not None
        now = [1000.0]
        shared.clock = lambda: now[0]
        stopped = anyio.Event()
        proxy.app.on_stop = stopped.set
        with anyio.fail_after(20):
            a, _ = await initialize(http, proxy.url)
            b, _ = await initialize(http, proxy.url)
            first = shared.child
            assert first is not None
            assert (await call(http, proxy.url, a, rpc(1, "echo")))["result"]["initializations"] == 1
            assert (await http.delete(proxy.url, headers={"mcp-session-id": a["mcp-session-id"]})).is_success
            now[0] += 120
            assert not await shared.reap_idle()  # a session is still open
            assert (await http.delete(proxy.url, headers={"mcp-session-id": b["mcp-session-id"]})).is_success
            await until(lambda: not shared.sessions)
            now[0] += 59
            assert not await shared.reap_idle()  # not idle for long enough yet
            assert shared.child is first
            now[0] += 1
            assert await shared.reap_idle()
            assert shared.child is None
            await until(lambda: first.returncode is not None)
            c, _ = await initialize(http, proxy.url)
            again = await call(http, proxy.url, c, rpc(2, "echo"))
        assert again["result"]["initializations"] == 1  # a new child, initialized once
        assert shared.child is not first
        assert proxy.app.pool.spawned == 2
        assert shared.reaped == 1
        assert not stopped.is_set()  # an idle child ended is not a child that died
        assert proxy.app.exit_status is None


async def test_an_idle_timeout_ends_the_sessions_then_the_shared_child() -> None:
    async with (
        in_process_proxy(PEER, multiplex="shared", idle_timeout=0.2) as proxy,
        httpx.AsyncClient(timeout=20) as http,
    ):
        shared = proxy.app.shared
        assert shared is not None
        with anyio.fail_after(20):
            headers, _ = await initialize(http, proxy.url)
            first = shared.child
            assert first is not None
            assert (await call(http, proxy.url, headers, rpc(1, "echo")))["result"]["params"] == {}
            await until(lambda: shared.reaped == 1)  # the session ended idle, then the child
            await until(lambda: first.returncode is not None)
            gone = await http.post(proxy.url, json=rpc(2, "echo"), headers={**JSON_ONLY, **headers})
            assert gone.status_code == 404
            fresh, _ = await initialize(http, proxy.url)
            answer = await call(http, proxy.url, fresh, rpc(3, "echo"))
        assert answer["result"]["initializations"] == 1
        assert proxy.app.pool.spawned == 2
