"""`anyio_tasks.pipe_transport`: the asyncio transport under anyio's process stdin."""

from __future__ import annotations

import asyncio
import sys

import anyio
import pytest

from mcpframe._unstable import anyio_tasks

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_transport_under_a_child_s_stdin() -> None:
    async with await anyio.open_process([sys.executable, "-c", "import sys; sys.stdin.read()"]) as process:
        transport = anyio_tasks.pipe_transport(process.stdin)
        # (read on the public-only path too: the listening proxy's fast path has no public fallback yet)
        assert isinstance(transport, asyncio.WriteTransport)
        assert transport.get_extra_info("pipe") is not None
        assert process.stdin is not None
        await process.stdin.aclose()


def test_anything_else_has_none() -> None:
    assert anyio_tasks.pipe_transport(object()) is None
    assert anyio_tasks.pipe_transport(None) is None
