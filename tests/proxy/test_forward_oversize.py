"""The stdio proxy answers a client's frame over its `max_frame` itself, as a Session would
(tests/session/test_oversize_answer.py): `-32600` with where it starts and the limit, and the request's id
when its first bytes show it. Nothing of it reaches the upstream."""

from __future__ import annotations

import json

import anyio
import pytest
from tests.proxy.test_forward import Client, MemoryUpstream

from mcpframe import core
from mcpframe.proxy.forward import Forwarder, UpstreamLink

pytestmark = pytest.mark.anyio

LIMIT = 200


async def test_an_oversize_frame_is_answered_with_the_limit_and_its_id() -> None:
    links: list[MemoryUpstream] = []

    async def connect() -> UpstreamLink:
        links.append(MemoryUpstream())
        return links[-1]

    forwarder = Forwarder(connect, max_frame=LIMIT, warn=lambda text: None)
    good = core.encode_request(1, "ping") + b"\n"
    big = core.encode_request(7, "echo", {"pad": "x" * 400}) + b"\n"
    async with anyio.create_task_group() as group:
        group.start_soon(forwarder.serve)
        client = Client(forwarder)
        await client.session.feed(good + big)
        assert await client.frame() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32600,
                "message": f"Invalid Request: frame exceeds the maximum size of {LIMIT} bytes",
                "data": {"offset": len(good), "limit": LIMIT},
            },
        }
        assert json.loads(await links[-1].line())["method"] == "ping"  # the good frame went on
        group.cancel_scope.cancel()
