"""A POST body that fails to parse but still shows a request's id gets its 400 with that id
(`jsonrpc.recover_id`), echoed exactly as sent; nesting past the core's limit and a lone surrogate escape
say where (`at`) and why (`detail`). The session serves on after each."""

from __future__ import annotations

import pytest

from mcpframe import jsonrpc

from ._server_support import asgi_client, initialize, session_headers
from .test_server_bodies import error_of, still_serves

pytestmark = pytest.mark.anyio

DEEP = b'{"jsonrpc":"2.0","id":11,"method":"ping","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
UTF8 = b'{"jsonrpc":"2.0","id":%d,"method":"p\xffng"}'
BODIES = [
    pytest.param(UTF8 % 2**64, 2**64, "invalid UTF-8", id="utf8"),
    pytest.param(UTF8 % -(10**400), -(10**400), "invalid UTF-8", id="huge"),
    pytest.param(b'{"jsonrpc":"2.0","id":"s","method":"\\ud800"}', "s", "lone surrogate", id="surrogate"),
    pytest.param(DEEP, 11, "nesting deeper than 128 levels", id="deep"),
    pytest.param(b'{"jsonrpc":"2.0","id":1.5,"method":"p\xff"}', None, "invalid UTF-8", id="float-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":7,"result":"\xff"}', None, "invalid UTF-8", id="a-response"),
]


@pytest.mark.parametrize(("body", "rid", "detail"), BODIES)
async def test_a_broken_body_keeps_the_id_it_shows(body: bytes, rid: int | str | None, detail: str) -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        answer = error_of(await client.post("/mcp", content=body, headers=headers), 400, jsonrpc.PARSE_ERROR)
        assert answer["id"] == rid
        assert answer["error"]["data"]["detail"].startswith(detail)
        assert 0 < answer["error"]["data"]["at"] < len(body)
        await still_serves(client, headers)
