"""A POST body that is not JSON says where (`error.data`): its 400 carries the body's first byte (`offset`),
the byte where the JSON breaks (`at`) and why (`detail`); `message` is unchanged. Other refusals have no data.
"""

from __future__ import annotations

import pytest

from mcpframe import jsonrpc

from ._server_support import JSON_AND_SSE, MODERN, asgi_client, initialize, session_headers

pytestmark = pytest.mark.anyio

MODERN_HEADERS = {**JSON_AND_SSE, "mcp-protocol-version": MODERN, "mcp-method": "ping"}
BAD = b'{"jsonrpc": "2.0", "id": 1, "method": "ping" x}'  # no comma (worded alike by 3.11 to 3.13's json)


async def test_a_body_that_is_not_json_gets_400_with_where() -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        for where in (headers, MODERN_HEADERS, JSON_AND_SSE):  # a session, stateless, no session yet
            response = await client.post("/mcp", content=BAD, headers=where)
            assert response.status_code == 400, response.text
            assert response.content == (
                b'{"jsonrpc":"2.0","id":1,"error":{"code":-32700,"message":"Parse error: invalid JSON",'
                b'"data":{"offset":0,"at":%d,"detail":"Expecting \',\' delimiter"}}}'
                % (BAD.index(b" x}") + 1)
            )


async def test_a_body_that_is_not_utf8_gets_the_byte() -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        response = await client.post("/mcp", content=b'{"a": "\xc3\xa9\xff"}', headers=headers)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == jsonrpc.PARSE_ERROR
        assert error["message"] == "Parse error: invalid UTF-8 at byte 9 of the frame"
        assert error["data"] == {"offset": 0, "at": 9, "detail": "invalid UTF-8: invalid start byte"}


async def test_an_invalid_request_body_says_it_starts_at_0() -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        response = await client.post("/mcp", content=b'{"id": 3, "method": "ping"}', headers=headers)
        assert response.status_code == 400, response.text
        assert response.json() == {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {
                "code": jsonrpc.INVALID_REQUEST,
                "message": 'Invalid Request: missing "jsonrpc"',
                "data": {"offset": 0},
            },
        }
