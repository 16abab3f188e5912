"""A caller that pipelines the handshake (`initialize`, then `notifications/initialized` and a request without
waiting for the answer) has what follows `initialize` held until that answer brought the session id.

The scripted server is strict: it refuses with 400 any POST but `initialize` that lacks the session id it
gave, and it holds its answer to `initialize` until the test releases it, so whether anything went out
before that answer is decided by the transport alone (`all_blocked`), never by timing.
"""

from __future__ import annotations

import json

import anyio
import pytest
from tests._blocked import all_blocked
from tests.streamable_http._client_support import (
    Reply,
    Scripted,
    Seen,
    init_reply,
    init_request,
    json_reply,
    result,
    serve_asgi,
)

from mcpframe import core
from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport
from mcpframe.http.client_sse_auto import AutoTransport
from mcpframe.transports.base import TransportClosedError

pytestmark = pytest.mark.anyio

SESSION = "s-1"
INIT = init_request(1)
INITIALIZED = core.encode_notification("notifications/initialized") + b"\n"
LIST = core.encode_request(2, "tools/list") + b"\n"


class Strict:
    """Answers `initialize` (once `release` is set) with a session id; refuses what comes without it."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.init_seen = anyio.Event()
        self.app = Scripted(self.handle)

    async def handle(self, seen: Seen) -> Reply:
        if seen.verb != "POST":
            return Reply(405)
        body = seen.body
        if seen.method == "initialize":
            self.init_seen.set()
            await self.release.wait()
            return init_reply(seen, SESSION)
        if seen.headers.get("mcp-session-id") != SESSION:
            refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no session id"}}
            return json_reply(refusal, 400)
        if "id" not in body:
            return Reply(202)
        return json_reply(result(body["id"], {"tools": []}))

    def posts(self) -> list[tuple[str | None, str | None, str | None]]:
        """Each POST's method, session id and protocol version header, in arrival order."""
        return [
            (s.method, s.headers.get("mcp-session-id"), s.headers.get("mcp-protocol-version"))
            for s in self.app.seen
            if s.verb == "POST"
        ]


TRANSPORTS = [
    pytest.param(StreamableHTTPTransport, True, id="streamable-lean"),
    pytest.param(StreamableHTTPTransport, False, id="streamable-httpx"),
    pytest.param(AutoTransport, False, id="auto"),
]


@pytest.mark.parametrize("one_send", [False, True], ids=["sends", "one-send"])
@pytest.mark.parametrize(("kind", "lean"), TRANSPORTS)
async def test_what_follows_initialize_waits_for_its_session(kind: type, lean: bool, one_send: bool) -> None:
    server = Strict()
    options = HttpClientOptions(lean=lean, get_stream=False)
    async with serve_asgi(server.app) as url, kind(url, options=options) as transport:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                if one_send:
                    tg.start_soon(transport.send, INIT + INITIALIZED + LIST)
                else:
                    await transport.send(INIT)
                    tg.start_soon(transport.send, INITIALIZED + LIST)
                await server.init_seen.wait()
                await all_blocked()
                assert server.posts() == [("initialize", None, None)]  # nothing went before the answer
                server.release.set()
            answers = {}
            while len(answers) < 2:
                for line in (await transport.receive()).splitlines():
                    answer = json.loads(line)
                    answers[answer["id"]] = answer
    assert answers[2] == result(2, {"tools": []})
    assert server.posts() == [
        ("initialize", None, None),
        ("notifications/initialized", SESSION, "2025-11-25"),
        ("tools/list", SESSION, "2025-11-25"),
    ]


async def test_a_cancel_of_the_initialize_itself_is_not_held() -> None:
    server = Strict()
    options = HttpClientOptions(get_stream=False)
    cancel = core.encode_notification("notifications/cancelled", {"requestId": 1}) + b"\n"
    async with serve_asgi(server.app) as url, StreamableHTTPTransport(url, options=options) as transport:
        with anyio.fail_after(10):
            await transport.send(INIT)
            await server.init_seen.wait()
            await transport.send(cancel)  # returns with the answer still held: not waiting for it
            assert not server.release.is_set()
            server.release.set()


async def test_a_held_send_ends_when_the_transport_closes() -> None:
    server = Strict()
    options = HttpClientOptions(get_stream=False, terminate_on_close=False)
    async with serve_asgi(server.app) as url:
        transport = StreamableHTTPTransport(url, options=options)
        async with transport:
            with anyio.fail_after(10):
                await transport.send(INIT)
                await server.init_seen.wait()
                async with anyio.create_task_group() as tg:

                    async def held() -> None:
                        with pytest.raises(TransportClosedError):
                            await transport.send(INITIALIZED)

                    tg.start_soon(held)
                    await all_blocked()
                    await transport.aclose()
            server.release.set()
    assert [post[0] for post in server.posts()] == ["initialize"]
