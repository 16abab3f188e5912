"""``stdio_server(stdin, stdout)`` with explicit text streams, in process (no fd is claimed)."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from mcpframe.compat import mcp_sdk
from mcpframe.compat._messages import InvalidFrameError

pytestmark = pytest.mark.anyio


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, Any, Any]]:
    """``(input_writer_fd, output_reader_fd, stdin, stdout)``: text streams on two OS pipes."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(in_r, "rb"), encoding="utf-8"))
    stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(out_w, "wb"), encoding="utf-8"))
    yield in_w, out_r, stdin, stdout
    stdin.wrapped.close()
    stdout.wrapped.close()
    os.close(out_r)


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


async def test_explicit_streams_carry_messages_and_errors(pipes: tuple[int, int, Any, Any]) -> None:
    in_w, out_r, stdin, stdout = pipes
    os.write(
        in_w,
        b'{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":1}}\n'
        b"{broken\n" + b'{"jsonrpc":"2.0","method":"n","params":{"p":"' + b"z" * 100 + b'"}}\n'
        b'{"jsonrpc":"2.0","method":"tail"}',
    )
    os.close(in_w)
    saved_stdout = sys.stdout
    with anyio.fail_after(10):
        async with mcp_sdk.stdio_server(stdin, stdout, max_frame=64) as (read, write):
            assert sys.stdout is saved_stdout  # explicit streams: nothing is claimed
            # the SDK's context stream wraps an anyio one; the public fallback is that anyio one itself
            inner = getattr(read, "_inner", read)
            assert inner.statistics().max_buffer_size == 0
            items = [item async for item in read]
            async with write:
                reply = JSONRPCResponse(jsonrpc="2.0", id=1, result={"ok": True})
                await write.send(SessionMessage(reply))
    first, broken, oversize, tail = items
    assert isinstance(first, SessionMessage)
    assert first.message == JSONRPCRequest(jsonrpc="2.0", id=1, method="a", params={"x": 1})
    assert isinstance(broken, InvalidFrameError)
    assert broken.code == -32700
    assert isinstance(oversize, InvalidFrameError)
    assert str(oversize) == "Invalid Request: frame exceeds the maximum size of 64 bytes"
    assert isinstance(tail, SessionMessage)
    assert tail.message == JSONRPCNotification(jsonrpc="2.0", method="tail")
    stdout.wrapped.close()
    assert read_all(out_r) == b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}\n'


async def test_ready_responses_leave_in_one_write(pipes: tuple[int, int, Any, Any]) -> None:
    in_w, out_r, stdin, stdout = pipes
    writes: list[str] = []
    real_write = stdout.write

    async def counting_write(text: str) -> int:
        writes.append(text)
        written: int = await real_write(text)
        return written

    stdout.write = counting_write
    count = 20
    with anyio.fail_after(10):
        async with mcp_sdk.stdio_server(stdin, stdout) as (read, write):
            async with write, anyio.create_task_group() as tg:
                for i in range(count):
                    reply = JSONRPCResponse(jsonrpc="2.0", id=i, result={})
                    tg.start_soon(write.send, SessionMessage(reply))
            os.close(in_w)
            assert [item async for item in read] == []
    stdout.wrapped.close()
    lines = read_all(out_r).splitlines()
    assert sorted(lines) == sorted(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i for i in range(count))
    assert len(writes) <= 2  # senders that were waiting together went out together
