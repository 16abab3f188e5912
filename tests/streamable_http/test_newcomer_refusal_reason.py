"""A notification or response the server refuses is logged with its method and the server's reason.

The log said only "the server refused a notification: HTTP 400". `mcpframe proxy URL` in front of a
client that writes `notifications/initialized` before the answer to `initialize` came back (so before the
session id is known) printed that and nothing a newcomer could act on; the server's body said why.
"""

from __future__ import annotations

import json
import logging

import anyio
import pytest
from tests.streamable_http._client_support import Reply, Scripted, Seen, json_reply, serve_asgi

from mcpframe.http.client import HttpClientOptions, StreamableHTTPTransport

pytestmark = pytest.mark.anyio

NO_SESSION = "Bad Request: the Mcp-Session-Id header is required"
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {}}  # an answer to a server's request (sampling, roots)


async def refuse(seen: Seen) -> Reply:
    if seen.method is not None:  # the notification: a JSON-RPC error body, as mcpframe and the SDK send
        error = {"code": -32600, "message": NO_SESSION}
        return json_reply({"jsonrpc": "2.0", "id": None, "error": error}, 400)
    return Reply(403, {"content-type": "text/plain"}, b"  not for\n  you \n")  # any other body: its text


class Refusals(logging.Handler):
    """Collects the transport's warnings; `arrived` once `wanted` of them have."""

    def __init__(self, wanted: int) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self.wanted = wanted
        self.arrived = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if len(self.lines) >= self.wanted:
            self.arrived.set()


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (INITIALIZED, f"the server refused notifications/initialized: HTTP 400 ({NO_SESSION})"),
        (ANSWER, "the server refused a result: HTTP 403 (not for you)"),
    ],
    ids=["notification", "response"],
)
async def test_the_refusal_says_what_and_why(message: dict[str, object], expected: str) -> None:
    refusals = Refusals(1)
    logger = logging.getLogger("mcpframe.http")
    logger.addHandler(refusals)
    try:
        async with serve_asgi(Scripted(refuse)) as url:
            options = HttpClientOptions(get_stream=False)
            async with StreamableHTTPTransport(url, options=options) as transport:
                with anyio.fail_after(10):
                    await transport.send(json.dumps(message).encode() + b"\n")
                    await refusals.arrived.wait()
    finally:
        logger.removeHandler(refusals)
    assert refusals.lines == [expected]
