"""The listening proxy's fast path and a request's progress token (`listen_fast._plain`): a request naming
one is the full path's, however its key is spelled (JSON escapes included); a request that merely carries
the word elsewhere is still the fast path's."""

from __future__ import annotations

import httpx
import pytest
from tests.proxy._listen_support import JSON_ONLY, Proxy, open_session

pytestmark = pytest.mark.anyio


async def test_a_progress_token_sends_the_request_the_full_way_however_its_key_is_spelled(
    proxy: Proxy,
) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        headers = {**JSON_ONLY, **await open_session(http, proxy.url)}
        for rid, key in ((1, b"progressToken"), (2, b"progress\\u0054oken"), (3, b"\\u0070rogressToken")):
            body = b'{"jsonrpc":"2.0","id":%d,"method":"progress","params":{"_meta":{"%s":"t"}}}' % (rid, key)
            response = await http.post(proxy.url, content=body, headers=headers)
            assert response.json()["result"] == {"token_seen": "t"}
        assert proxy.app.fast.taken == 0
        # the word as a value, or as a key outside `_meta`, or an escape elsewhere: no token, taken
        for rid, params in (
            (4, b'{"text":"progressToken"}'),
            (5, b'{"progressToken":"t"}'),
            (6, b'{"_meta":{"k":"\\u0041"}}'),
        ):
            body = b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":%s}' % (rid, params)
            response = await http.post(proxy.url, content=body, headers=headers)
            assert response.status_code == 200
            assert response.json()["id"] == rid
        assert proxy.app.fast.taken == 3
