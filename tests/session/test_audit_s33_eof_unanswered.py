"""At the end of the input, requests still running after `drain_timeout` are cancelled unanswered: the
session says so on stderr, with how many, instead of dropping them silently.

`printf '...300 slow calls...' | mcpframe serve server.py` answered the calls that finished within 5 s
(`SessionOptions.drain_timeout`) and exited with status 0 and nothing on stderr for the ~220 others.
"""

from __future__ import annotations

import logging

import anyio
import pytest

from mcpframe import core
from mcpframe.session import Request, Session, SessionOptions

pytestmark = pytest.mark.anyio

RUNNING = 3


class HalfClosed:
    """A transport whose input ends after `data` while its output stays open (a shell pipe's half-close)."""

    def __init__(self, data: bytes) -> None:
        self.chunks = [data]
        self.sent: list[bytes] = []

    async def receive(self) -> bytes:
        return self.chunks.pop() if self.chunks else b""

    async def send(self, data: bytes) -> None:
        self.sent.append(data)

    async def aclose(self) -> None:
        pass


async def test_requests_cut_at_the_end_of_the_input_are_reported(caplog: pytest.LogCaptureFixture) -> None:
    never = anyio.Event()

    async def handler(request: Request) -> object:
        if request.method == "quick":
            return {}
        await never.wait()
        return {}

    data = core.encode_request(0, "quick") + b"".join(
        core.encode_request(rid, "forever") for rid in range(1, RUNNING + 1)
    )
    transport = HalfClosed(data)
    session = Session(transport, request_handler=handler, options=SessionOptions(drain_timeout=0.05))
    with caplog.at_level(logging.WARNING, logger="mcpframe.session"), anyio.fail_after(10):
        await session.run()
    assert b'"id":0' in b"".join(transport.sent)  # the quick one answered
    cut = [record.getMessage() for record in caplog.records if "unanswered" in record.getMessage()]
    assert len(cut) == 1, caplog.text
    assert f"{RUNNING} requests" in cut[0]
    assert "drain_timeout" in cut[0]
