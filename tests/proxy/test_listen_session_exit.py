"""`--on-upstream-exit` with a child per session (`--listen`, `--multiplex session`): `exit` ends the proxy
with the status of a session's child that died; `restart` (the default) ends that session alone, and the
next `initialize` starts a child. A child that ends with its session (DELETE) ends nothing more."""

from __future__ import annotations

import anyio
import httpx
import pytest
from tests.proxy._listen_support import in_process_proxy, rpc
from tests.proxy._shared_support import call, initialize
from tests.proxy.conftest import PEER

pytestmark = pytest.mark.anyio


async def test_exit_ends_the_proxy_with_the_status_of_a_sessions_child_that_died() -> None:
    async with (
        in_process_proxy(PEER, multiplex="session", on_upstream_exit="exit") as proxy,
        httpx.AsyncClient(timeout=20) as http,
    ):
        stopped = anyio.Event()
        proxy.app.on_stop = stopped.set
        with anyio.fail_after(20):
            left, _ = await initialize(http, proxy.url)
            deleted = await http.delete(proxy.url, headers={"mcp-session-id": left["mcp-session-id"]})
            assert deleted.status_code in (200, 204)
            headers, _ = await initialize(http, proxy.url)
            # the first session's child ended with its session: that stopped nothing
            assert not stopped.is_set()
            assert proxy.app.exit_status is None
            crashed = await call(http, proxy.url, headers, rpc(1, "crash", {"status": 3}))
            await stopped.wait()
        assert crashed["error"]["code"] == -32000
        assert proxy.app.exit_status == 3


async def test_restart_ends_that_session_alone_and_a_new_one_gets_a_child() -> None:
    async with (
        in_process_proxy(PEER, multiplex="session") as proxy,
        httpx.AsyncClient(timeout=20) as http,
    ):
        stopped = anyio.Event()
        proxy.app.on_stop = stopped.set
        with anyio.fail_after(20):
            other, _ = await initialize(http, proxy.url)
            headers, _ = await initialize(http, proxy.url)
            crashed = await call(http, proxy.url, headers, rpc(1, "crash", {"status": 3}))
            assert crashed["error"]["code"] == -32000
            again, _ = await initialize(http, proxy.url)
            answer = await call(http, proxy.url, again, rpc(2, "echo", {"n": 2}))
            kept = await call(http, proxy.url, other, rpc(3, "echo", {"n": 3}))
        assert answer["result"]["params"] == {"n": 2}
        assert kept["result"]["params"] == {"n": 3}  # the other session's child was not touched
        assert not stopped.is_set()
        assert proxy.app.exit_status is None
        assert proxy.app.pool.spawned == 3
