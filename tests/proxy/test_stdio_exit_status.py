"""`mcpframe proxy --on-upstream-exit exit` stands for its child: when stdin ends first, the proxy still
exits with the child's status once the child ended. With `restart` (the default) the end of stdin is the
end of the proxy's job: it exits 0 whatever the child's status."""

from __future__ import annotations

import sys

import anyio
import pytest
from tests.proxy.conftest import RawClient

pytestmark = pytest.mark.anyio

# a server that reads its stdin to the end, then exits with status 4
ENDS_WITH_4 = [sys.executable, "-c", "import sys; sys.stdin.buffer.read(); sys.exit(4)"]


@pytest.mark.parametrize(("flags", "status"), [(("--on-upstream-exit", "exit"), 4), ((), 0)])
async def test_the_end_of_stdin_gives_the_childs_status_only_with_exit(
    flags: tuple[str, ...], status: int
) -> None:
    client = await RawClient.start(*flags, command=ENDS_WITH_4)
    assert client.process.stdin is not None
    await client.process.stdin.aclose()
    with anyio.fail_after(20):
        assert await client.process.wait() == status
