"""The client's default request timeout, what its expiry says, and a client session that dies on an error."""

from __future__ import annotations

import logging
import math
from typing import Any

import anyio
import pytest

from mcpframe.client import Client
from mcpframe.session import Request, RequestTimeout, Session, SessionOptions
from mcpframe.transports import Transport

pytestmark = pytest.mark.anyio


class SilentServer:
    """Answers the handshake, never answers ``tools/call``."""

    async def handle(self, req: Request) -> Any:
        if req.method == "initialize":
            return {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"},
            }
        if req.method == "tools/call":
            await anyio.sleep_forever()
        raise RequestTimeout("not this one")  # server/discover: an error, so the client falls back

    async def serve(self, transport: Transport) -> None:
        await Session(transport, request_handler=self.handle).run()


async def test_requests_wait_60_s_by_default() -> None:
    seen: list[Any] = []
    with anyio.fail_after(10):
        async with Client(SilentServer()) as client:
            assert client.timeout == 60.0
            real = client.session.request

            async def spy(method: str, params: Any = None, **options: Any) -> Any:
                seen.append((method, options["timeout"]))
                return {}

            client.session.request = spy  # type: ignore[method-assign]
            await client.call_tool("t", {})
            await client.call_tool("t", {}, timeout=2.5)
            client.session.request = real  # type: ignore[method-assign]
    assert seen == [("tools/call", 60.0), ("tools/call", 2.5)]


async def test_an_expired_request_says_which_method_after_how_long_and_how_to_wait_longer() -> None:
    with anyio.fail_after(10):
        async with Client(SilentServer(), timeout=0.2) as client:
            with pytest.raises(RequestTimeout) as raised:
                await client.call_tool("t", {})
    message = raised.value.message
    assert message.startswith("Request timed out: tools/call (no response after 0.2")
    assert "pass timeout=<seconds> to this call (math.inf: no limit), or Client(timeout=<seconds>)" in message


async def test_none_means_no_limit_for_the_client_and_the_clients_value_for_a_call() -> None:
    seen: list[Any] = []
    with anyio.fail_after(10):
        async with Client(SilentServer(), timeout=None) as client:
            real = client.session.request

            async def spy(method: str, params: Any = None, **options: Any) -> Any:
                seen.append(options["timeout"])
                return {}

            client.session.request = spy  # type: ignore[method-assign]
            await client.call_tool("t", {}, timeout=None)  # the client's: no limit
            await client.call_tool("t", {}, timeout=math.inf)
            await client.call_tool("t", {}, timeout=3)
            client.session.request = real  # type: ignore[method-assign]
    assert seen == [math.inf, math.inf, 3]


def test_the_session_options_cannot_carry_a_second_request_timeout() -> None:
    with pytest.raises(ValueError, match=r"Client\(timeout=\.\.\.\); leave SessionOptions.timeout unset"):
        Client(SilentServer(), session_options=SessionOptions(timeout=0.1))
    with pytest.raises(ValueError, match="timeout must be None or not negative"):
        Client(SilentServer(), timeout=-1)


class BrokenTransport:
    """Reading raises something no transport should."""

    async def receive(self) -> bytes:
        raise RuntimeError("the transport fell over")

    async def send(self, data: bytes) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def test_a_client_whose_session_dies_on_an_error_logs_why_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with anyio.fail_after(10), pytest.raises(ExceptionGroup) as raised:
        async with Client(transport=BrokenTransport()):
            pass
    assert raised.group_contains(RuntimeError, match="fell over", depth=None)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].name == "mcpframe.session"
    assert "unexpected error" in errors[0].getMessage()
