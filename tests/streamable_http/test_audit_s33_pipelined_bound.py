"""The lean HTTP server reads no further ahead of a pipelining client than `MAX_PIPELINED` requests.

Reading stops once more than `MAX_PIPELINED` parsed requests wait; it used to start again after every
answer, whatever still waited, so a client that pipelines and does not read its answers had the server
parse a whole read's worth of requests per answer: 30,000 pipelined `tools/call` left ~28,000 parsed
requests queued and the server's RSS grew by ~70 MB (unbounded in the number of requests).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import urlsplit

import anyio
import pytest

from mcpframe.http import wire as wire_module
from mcpframe.http.wire_plain import MAX_PIPELINED

from ._live_support import GatedTools, serving

pytestmark = pytest.mark.anyio

CALLS = 200  # one socket write, fewer bytes than one read of the server (64 KiB)


def _where(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def _pipelined(url: str, headers: dict[str, str], calls: int) -> bytes:
    """`calls` POSTs of the `echo` tool, ids 0 up, answered as JSON."""
    parts = urlsplit(url)
    headers = {**headers, "accept": "application/json"}  # answers as JSON bodies, one per request
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    requests = b""
    for rid in range(calls):
        call = {"name": "echo", "arguments": {"text": str(rid)}}
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": call}).encode()
        requests += (
            f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\n{head}content-length: {len(body)}\r\n\r\n"
        ).encode() + body
    return requests


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the lean server is asyncio's


async def test_reading_resumes_only_below_the_pipelining_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    waiting_at_resume: list[int] = []  # requests parsed and not answered, at each resume_reading
    real_made = wire_module._Connection.connection_made

    def connection_made(self: wire_module._Connection, transport: object) -> None:
        real_made(self, transport)  # type: ignore[arg-type]
        resume: Callable[[], None] = transport.resume_reading  # type: ignore[attr-defined]

        def resume_reading() -> None:
            waiting_at_resume.append(len(self.pending))
            resume()

        transport.resume_reading = resume_reading  # type: ignore[attr-defined]

    monkeypatch.setattr(wire_module._Connection, "connection_made", connection_made)
    tools = GatedTools("pipelined")
    async with serving(tools) as (url, _app, _client, headers):
        requests = _pipelined(url, headers, CALLS)
        with anyio.fail_after(30):
            async with await anyio.connect_tcp(*_where(url)) as stream:
                await stream.send(requests)
                got = b""
                while got.count(b'"result"') < CALLS:
                    got += await stream.receive()
        ids = [json.loads(part.split(b"\r\n\r\n", 1)[1])["id"] for part in got.split(b"HTTP/1.1 ")[1:]]
        assert ids == list(range(CALLS))  # every one answered, in order
    assert waiting_at_resume, "reading never paused: the test did not pipeline enough"
    assert max(waiting_at_resume) <= MAX_PIPELINED


async def test_uvicorn_reads_only_below_the_pipelining_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bound on uvicorn (`uvicorn_host.bounded_heads`): it resumed reading after every answer."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415 - httptools' only

    waiting_at_read: list[int] = []  # requests parsed and not started, at each read
    real_received = HttpToolsProtocol.data_received

    def data_received(self: HttpToolsProtocol, data: bytes) -> None:
        waiting_at_read.append(len(self.pipeline))
        real_received(self, data)

    monkeypatch.setattr(HttpToolsProtocol, "data_received", data_received)
    calls = 2000  # ~700 KB: many reads
    tools = GatedTools("pipelined")
    async with serving(tools, http_server="uvicorn") as (url, _app, _client, headers):
        requests = _pipelined(url, headers, calls)
        with anyio.fail_after(60):
            async with await anyio.connect_tcp(*_where(url)) as stream:
                got = bytearray()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(stream.send, requests)
                    while got.count(b'"result"') < calls:
                        got += await stream.receive()
    assert len(waiting_at_read) > 1
    assert max(waiting_at_read) <= MAX_PIPELINED
