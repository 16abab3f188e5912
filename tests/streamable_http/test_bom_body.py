"""An HTTP body follows the stdio rule for a UTF-8 byte order mark (tests/session/test_bom_lines.py): one
right before the message is dropped, one more is refused with a -32700 that says so in plain words."""

from __future__ import annotations

import pytest

from ._server_support import asgi_client, initialize, session_headers

pytestmark = pytest.mark.anyio

BOM = b"\xef\xbb\xbf"
PING = b'{"jsonrpc":"2.0","id":5,"method":"ping"}'
PLAIN = "a UTF-8 byte order mark (EF BB BF) is allowed only right before a message, not in it"


async def test_one_bom_before_the_body_is_dropped_and_a_second_is_refused_with_where() -> None:
    async with asgi_client() as (client, _):
        headers = {**session_headers(await initialize(client)), "accept": "application/json"}
        answered = await client.post("/mcp", content=BOM + PING, headers=headers)
        assert answered.status_code == 200, answered.text
        assert answered.json() == {"jsonrpc": "2.0", "id": 5, "result": {}}
        refused = await client.post("/mcp", content=BOM + BOM + PING, headers=headers)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == {
            "code": -32700,
            "message": "Parse error: invalid JSON",
            "data": {"offset": 3, "at": 0, "detail": PLAIN},
        }
