"""`mcpframe proxy --listen` on the lean server, embedded and run by plain `asyncio.run` (no async library
named in the context): a 2026-07-28 client that leaves its JSON wait is heard of in the connection's
`connection_lost`, where no task runs. The child is told once, nothing is logged at ERROR, the route is
forgotten and the POST's admission slot freed.

The child records each request it starts and each cancel it is sent (the modern-disconnect test's child);
the test waits, within a generous bound, for those lines.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
import sniffio
from tests.proxy._listen_support import JSON_ONLY, in_process_proxy
from tests.proxy.test_listen_modern_disconnect import CHILD, _lines, _post


async def _leave_a_json_wait(script: Path, record: Path) -> tuple[list[str], int, int]:
    """A client leaves its JSON wait for the child's never-coming answer: the record's lines once the
    cancel came, and the pending routes and running admissions once they are back to none."""
    async with in_process_proxy([sys.executable, str(script), str(record)], pool_size=1) as proxy:
        host, port = proxy.url.split("/")[2].split(":")
        with anyio.fail_after(20):
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(_post(proxy.url, JSON_ONLY, "slow", 7))
            await _lines(record, 1)
            writer.close()  # the client leaves before the child answered
            lines = await _lines(record, 2)
            app: Any = proxy.app
            while app.stateless.pending or app.posts.admission.running:
                await anyio.sleep(0.01)
        return lines, len(app.stateless.pending), app.posts.admission.running


def test_a_client_leaving_a_json_wait_under_plain_asyncio_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    record = tmp_path / "record.txt"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    result: list[tuple[list[str], int, int]] = []

    def run() -> None:  # a new thread and an empty context: nothing inherited names asyncio to sniffio
        assert sniffio.thread_local.name is None
        result.append(contextvars.Context().run(asyncio.run, _leave_a_json_wait(script, record)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    [(lines, pending, running)] = result
    assert lines[1] == "cancelled " + lines[0].split(" ", 1)[1]  # the id the child saw
    assert record.read_text().splitlines() == lines  # told once
    assert (pending, running) == (0, 0)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
