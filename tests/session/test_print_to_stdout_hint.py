"""A line that is not JSON at all is logged with the likely cause (a print() to the protocol's stdout), and
an error answer with no id says what it most likely means; JSON that is merely broken gets no such hint."""

from __future__ import annotations

import logging

import anyio
import pytest

from mcpframe import core
from mcpframe.session import Session
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio

HINT = "does the other side print() to the stdout that carries the protocol? log to stderr"


async def _log_of(data: bytes, caplog: pytest.LogCaptureFixture) -> str:
    peer, ours = memory_pair()
    session = Session(ours)
    caplog.set_level(logging.WARNING, logger="mcpframe.session")
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run)
        with anyio.fail_after(10):
            await peer.send(data + core.encode_request(1, "ping"))
            decoder = core.Decoder()
            answered: list[object] = []
            while not any(getattr(item, "id", None) == 1 for item in answered):
                answered.extend(decoder.feed(await peer.receive()))
        await session.aclose()
    await peer.aclose()
    return caplog.text


@pytest.mark.parametrize("line", [b"loading my server...\n", b"  Hello world\n", b"\x1b[32mready\x1b[0m\n"])
async def test_a_plain_text_line_is_blamed_on_a_print(line: bytes, caplog: pytest.LogCaptureFixture) -> None:
    text = await _log_of(line, caplog)
    assert "rejected frame at stream byte 0: Parse error" in text
    assert HINT in text


@pytest.mark.parametrize("line", [b'{"jsonrpc": "2.0", "id": 7, "method": oops}\n', b"[1, 2\n"])
async def test_broken_json_gets_no_print_hint(line: bytes, caplog: pytest.LogCaptureFixture) -> None:
    text = await _log_of(line, caplog)
    assert "rejected frame at stream byte 0" in text
    assert HINT not in text


async def test_an_error_answer_with_no_id_says_what_it_means(caplog: pytest.LogCaptureFixture) -> None:
    error = b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}\n'
    text = await _log_of(error, caplog)
    assert "the peer answered an error with no id (it could not read a line we sent" in text
    assert "Parse error" in text
