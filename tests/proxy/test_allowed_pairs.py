"""The (Host, Origin) pairs the lean server's hot path remembers as allowed (`http/security.py`'s
`AllowedPairs`), shared by the direct server (`StreamableHTTPServer.wire_fast`) and the listening proxy
(`ListenServer.wire_fast`): both refuse and allow the same pairs, on the first POST and on every later one,
and remember only the pairs they allowed, up to their bound."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import httpx
import pytest
from tests.proxy._listen_support import JSON_ONLY, in_process_proxy, rpc
from tests.proxy._listen_support import open_session as open_proxy_session
from tests.proxy.conftest import PEER
from tests.streamable_http._server_support import make_server, open_session, served

from mcpframe.http.options import HttpOptions
from mcpframe.http.security import LOOPBACK_HOSTS, AllowedPairs, HostGuard
from mcpframe.http.server import StreamableHTTPServer

pytestmark = pytest.mark.anyio


CASES = [  # (Host, Origin, status): `None` Host is the client's own (127.0.0.1:port), `None` Origin none
    (None, None, 200),
    ("good.example:8080", None, 200),
    ("GOOD.example:8080", None, 200),
    ("good.example:9", None, 421),
    ("evil.example", None, 421),
    (None, "http://good.example", 200),
    (None, "http://good.example:1234", 200),  # an origin allowed without a port is allowed on every port
    (None, "http://evil.example", 403),
    ("good.example:8080", "http://evil.example", 403),
    ("evil.example", "http://good.example", 421),
]


def _options() -> HttpOptions:
    return HttpOptions(
        allowed_hosts=[*LOOPBACK_HOSTS, "good.example:8080"], allowed_origins=["http://good.example"]
    )


Served = tuple[str, StreamableHTTPServer, dict[str, str]]
"""(URL, app, the headers of a request in a session)."""


@contextlib.asynccontextmanager
async def _direct(client: httpx.AsyncClient) -> AsyncIterator[Served]:
    """The direct server, on the lean server."""
    server = make_server()
    opts = _options()
    app = StreamableHTTPServer(server, opts)
    async with served(server, options=opts, http_server="mcpframe", app=app) as url:
        yield url, app, await open_session(client, url)


@contextlib.asynccontextmanager
async def _proxied(client: httpx.AsyncClient) -> AsyncIterator[Served]:
    """The listening proxy in front of the scripted peer, on the lean server."""
    async with in_process_proxy(PEER, http=_options()) as proxy:
        yield proxy.url, proxy.app, {**JSON_ONLY, **await open_proxy_session(client, proxy.url)}


@pytest.mark.parametrize("where", [_direct, _proxied], ids=["direct", "proxy"])
async def test_both_hot_paths_refuse_and_allow_the_same_pairs_every_time(
    where: Callable[[httpx.AsyncClient], AbstractAsyncContextManager[Served]],
) -> None:
    async with httpx.AsyncClient(timeout=20) as client, where(client) as (url, app, headers):
        own = (f"127.0.0.1:{httpx.URL(url).port}", None)
        assert app._allowed == {own}  # the session's own POSTs went through the hot path
        for rid, (host, origin, status) in enumerate(CASES * 2):  # the second round, after remembering
            sent = dict(headers)
            if host is not None:
                sent["host"] = host
            if origin is not None:
                sent["origin"] = origin
            got = await client.post(url, json=rpc(rid, "tools/list"), headers=sent)
            assert (host, origin, got.status_code) == (host, origin, status)
        allowed = {(h or own[0], o) for h, o, status in CASES if status == 200}
        assert app._allowed == allowed  # only the allowed pairs, each once


def test_only_allowed_pairs_are_remembered_and_no_more_than_the_bound() -> None:
    allowed = AllowedPairs(HostGuard.create(), bound=2)
    assert not allowed.admit(("evil.example", None))
    assert not allowed.admit(("localhost", "http://evil.example"))
    assert allowed == set()
    pairs = [("localhost", None), ("127.0.0.1:1", None), ("[::1]", "http://localhost:3000")]
    assert all(allowed.admit(pair) for pair in pairs)  # the third is allowed, not remembered
    assert allowed == set(pairs[:2])
    assert allowed.admit(pairs[2])
    assert len(allowed) == 2
