"""A pipelined request's head that waits behind an earlier request still being answered is not a slow-loris.

The head timeout (`HttpOptions.head_timeout`) runs from a head's first byte. Behind a request the server is
still answering (a slow tool, or a client that pipelines and does not read its answers yet: the server
stops reading then), the rest of the next head may come late through no fault of the client's. Both
servers used to close the connection there, losing the answer under way and every pipelined one after it;
the head's time now starts again while an earlier request is being answered.

Whether the timeout would have passed depends on the clock (the test waits several timeouts, far above
the sweep's lateness); on a machine so slow that it had not, the test passes without proving anything,
never fails.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import anyio
import pytest

from ._live_support import GatedTools, serving

pytestmark = pytest.mark.anyio

SHORT = 0.2  # the head timeout under test: seconds


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _post(url: str, headers: dict[str, str], rid: int, tool: str) -> bytes:
    parts = urlsplit(url)
    head = "".join(
        f"{name}: {value}\r\n" for name, value in {**headers, "accept": "application/json"}.items()
    )
    call = {"name": tool, "arguments": {"text": f"answer {rid}"}}
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": call}).encode()
    return (
        f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\n{head}content-length: {len(body)}\r\n\r\n"
    ).encode() + body


@pytest.mark.parametrize("http_server", ["mcpframe", "uvicorn"])
async def test_a_head_waiting_behind_an_answer_under_way_is_not_cut(http_server: str) -> None:
    tools = GatedTools("head-behind")
    async with serving(tools, http_server=http_server, head_timeout=SHORT) as (url, _app, _client, headers):
        first, second = _post(url, headers, 1, "hold"), _post(url, headers, 2, "echo")
        parts = urlsplit(url)
        with anyio.fail_after(30):
            async with await anyio.connect_tcp(parts.hostname or "127.0.0.1", parts.port or 80) as stream:
                await stream.send(first + second[:40])  # the second head begun, behind the held call
                await tools.entered.wait()
                await anyio.sleep(10 * SHORT)  # well past the head timeout (see the module's docstring)
                tools.gate.set()
                await stream.send(second[40:])
                got = b""
                while got.count(b'"result"') < 2:
                    got += await stream.receive()
    assert b"408" not in got.split(b"\r\n", 1)[0]
    assert got.index(b"answer 1") < got.index(b"answer 2")
