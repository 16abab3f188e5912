"""`mcpframe proxy --listen`: an upstream answer larger than the HTTP body limit still reaches its client.

The body limit (`HttpOptions.max_body`, 4 MiB) bounds what a client may POST; the child's answers are
frames of the stdio server, bounded by the frame limit (`SessionOptions.max_frame`, 64 MiB) as on the
stdio proxy and on `mcpframe serve --http`. An answer between the two was dropped as "malformed" and its
POST waited forever.
"""

from __future__ import annotations

import contextlib
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.proxy._listen_support import (
    JSON_ONLY,
    Proxy,
    in_process_proxy,
    modern_call,
    modern_headers,
    open_session,
    rpc,
)

from mcpframe.http import connect_sse
from mcpframe.http.options import HttpOptions
from mcpframe.session import JSONRPCError, SessionOptions

pytestmark = pytest.mark.anyio

BIG = 5_000_000  # over the 4 MiB body limit, under the 64 MiB frame limit
LIMIT = 1 << 20  # the frame limit of the tests that go over it

_PEER = textwrap.dedent(
    """
    import json, sys

    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        params = message.get("params") or {}
        if message["method"] == "initialize":
            info = {"name": "big", "version": "1"}
            version = params["protocolVersion"]
            result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
        elif message["method"] == "tools/call":
            result = {"content": [{"type": "text", "text": "x" * params["arguments"]["n"]}]}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
        sys.stdout.flush()
    """
)


@pytest.fixture
def peer(tmp_path: Path) -> list[str]:
    path = tmp_path / "big_peer.py"
    path.write_text(_PEER)
    return [sys.executable, str(path)]


@contextlib.asynccontextmanager
async def _limited(peer: list[str]) -> AsyncIterator[tuple[Proxy, httpx.AsyncClient]]:
    """The proxy in front of `peer` with a frame limit of `LIMIT`, and an HTTP client."""
    http_options = HttpOptions(session_options=SessionOptions(max_frame=LIMIT))
    async with (
        in_process_proxy(peer, http=http_options) as proxy,
        httpx.AsyncClient(timeout=60) as http,
    ):
        yield proxy, http


def _assert_dropped(body: dict[str, Any]) -> None:
    """`body` is the error answering request 1, whose answer was over `LIMIT`."""
    assert body["id"] == 1
    assert body["error"]["code"] == -32603
    assert str(LIMIT) in body["error"]["message"]


def _text(body: dict[str, Any]) -> str:
    assert "result" in body, body
    text = body["result"]["content"][0]["text"]
    assert isinstance(text, str)
    return text


async def test_a_session_gets_an_answer_larger_than_the_body_limit(peer: list[str]) -> None:
    async with in_process_proxy(peer) as proxy, httpx.AsyncClient(timeout=60) as http:
        headers = await open_session(http, proxy.url)
        with anyio.fail_after(30):
            call = rpc(1, "tools/call", {"name": "big", "arguments": {"n": BIG}})
            response = await http.post(proxy.url, json=call, headers={**JSON_ONLY, **headers})
            assert response.status_code == 200
            assert len(_text(response.json())) == BIG
            # the session goes on
            call = rpc(2, "tools/call", {"name": "big", "arguments": {"n": 3}})
            response = await http.post(proxy.url, json=call, headers={**JSON_ONLY, **headers})
            assert _text(response.json()) == "xxx"


async def test_a_2026_request_gets_an_answer_larger_than_the_body_limit(peer: list[str]) -> None:
    async with in_process_proxy(peer) as proxy, httpx.AsyncClient(timeout=60) as http:
        with anyio.fail_after(30):
            call = modern_call("big", 1, {"n": BIG})
            headers = {**modern_headers("big"), "accept": "application/json"}
            response = await http.post(proxy.url, json=call, headers=headers)
            assert response.status_code == 200
            assert len(_text(response.json())) == BIG


async def test_an_answer_over_the_frame_limit_ends_its_request_with_an_error(peer: list[str]) -> None:
    """Over the frame limit the answer is dropped, and its POST gets an error (it used to wait forever)."""
    async with _limited(peer) as (proxy, http):
        headers = await open_session(http, proxy.url)
        with anyio.fail_after(30):
            call = rpc(1, "tools/call", {"name": "big", "arguments": {"n": 2 * LIMIT}})
            response = await http.post(proxy.url, json=call, headers={**JSON_ONLY, **headers})
            _assert_dropped(response.json())
            call = rpc(2, "tools/call", {"name": "big", "arguments": {"n": 3}})  # the session goes on
            response = await http.post(proxy.url, json=call, headers={**JSON_ONLY, **headers})
            assert _text(response.json()) == "xxx"


async def test_a_2026_answer_over_the_frame_limit_ends_its_request_with_an_error(peer: list[str]) -> None:
    async with _limited(peer) as (proxy, http):
        with anyio.fail_after(30):
            headers = {**modern_headers("big"), "accept": "application/json"}
            response = await http.post(
                proxy.url, json=modern_call("big", 1, {"n": 2 * LIMIT}), headers=headers
            )
            _assert_dropped(response.json())
            response = await http.post(proxy.url, json=modern_call("big", 2, {"n": 3}), headers=headers)
            assert _text(response.json()) == "xxx"  # the shared child goes on


async def test_a_legacy_sse_answer_over_the_frame_limit_ends_its_request_with_an_error(
    peer: list[str],
) -> None:
    http_options = HttpOptions(session_options=SessionOptions(max_frame=LIMIT))
    async with in_process_proxy(peer, http=http_options) as proxy:
        sse_url = proxy.url.rsplit("/", 1)[0] + "/sse"
        with anyio.fail_after(30):
            async with connect_sse(sse_url) as client:
                with pytest.raises(JSONRPCError) as raised:
                    await client.call_tool("big", {"n": 2 * LIMIT})
                assert raised.value.code == -32603
                assert str(LIMIT) in raised.value.message
                result = await client.call_tool("big", {"n": 3})  # the session goes on
                assert result["content"][0]["text"] == "xxx"
