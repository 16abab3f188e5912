"""`Child.write_now` writes to the child's stdin pipe itself, handing the transport only what the pipe did not
take: every byte arrives once and in order, also behind a write the pipe took in part and the `write` that
follows it (the child reports the length and digest of all it read)."""

from __future__ import annotations

import hashlib
import sys

import anyio
import pytest
from tests.proxy._listen_support import child_env

from mcpframe import core
from mcpframe.proxy.pool import ChildPool

pytestmark = pytest.mark.anyio

_COUNTING_CHILD = r"""
import hashlib, json, sys
data = sys.stdin.buffer.read()
params = {"n": len(data), "sha": hashlib.sha256(data).hexdigest()}
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "seen", "params": params}) + "\n")
sys.stdout.flush()
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_every_byte_arrives_once_and_in_order_after_a_partial_write() -> None:
    pool = ChildPool([sys.executable, "-c", _COUNTING_CHILD], env=child_env())
    child = await pool.spawn()
    big = b"".join(b"%07d\n" % n for n in range(1 << 17))  # 1 MiB of distinct lines: more than a pipe holds
    small = b"after\n"
    try:
        with anyio.fail_after(30):
            assert child.write_now(big)
            assert not child.write_now(small)  # the transport still holds the rest of `big`
            await child.write(small)  # queued behind that rest
            child.input.close()  # EOF once the rest was written: the child reads to the end, then reports
            seen = None
            async for item in child.frames(max_frame=1 << 20):
                assert isinstance(item, core.Message)
                seen = item.params
                break
    finally:
        with anyio.fail_after(10):
            await child.close()
    sent = big + small
    assert seen == {"n": len(sent), "sha": hashlib.sha256(sent).hexdigest()}
    assert child.returncode == 0
