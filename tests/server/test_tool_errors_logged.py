"""A tool's exception is logged at ERROR with its traceback, once, and the client still gets the error result.

Without any logging set-up (a real child) it reaches stderr in mcpframe's format and stdout keeps the
protocol alone; under the application's own logging set-up only the application's handlers print it.
"""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import anyio
import pytest

from mcpframe.client import Client
from mcpframe.server import Server

from ._children import PYTHON, child

pytestmark = pytest.mark.anyio

SERVER = """
    import logging
    import os

    from mcpframe.server import Server

    if os.environ.get("APP_LOGGING"):
        logging.basicConfig(format="APP %(levelname)s %(message)s")

    server = Server("failing")


    @server.tool
    def boom() -> str:
        raise ValueError("kaboom")


    if __name__ == "__main__":
        server.run()
"""


def _failing(logger: logging.Logger | None = None) -> Server:
    server = Server("failing", logger=logger)

    @server.tool
    async def boom() -> str:
        raise ValueError("kaboom")

    return server


async def test_logged_once_at_error_with_the_traceback_and_answered(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.ERROR, logger="mcpframe.server")
    with anyio.fail_after(20):
        async with Client(_failing()) as client:
            result = await client.call_tool("boom")
    assert result["content"] == [{"type": "text", "text": "Error executing tool boom: kaboom"}]
    assert result["isError"] is True
    records = [r for r in caplog.records if r.name == "mcpframe.server"]
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.ERROR, "tool 'boom' failed: ValueError: kaboom")
    ]
    assert records[0].exc_info is not None
    assert isinstance(records[0].exc_info[1], ValueError)
    # pytest's handler on the root logger is the application's set-up here: mcpframe's own stays quiet
    assert "kaboom" not in capsys.readouterr().err


async def test_a_logger_given_to_the_server_gets_the_record(caplog: pytest.LogCaptureFixture) -> None:
    mine = logging.getLogger("my.app")
    caplog.set_level(logging.ERROR, logger="my.app")
    with anyio.fail_after(20):
        async with Client(_failing(mine)) as client:
            await client.call_tool("boom")
    assert [r.getMessage() for r in caplog.records if r.name == "my.app"] == [
        "tool 'boom' failed: ValueError: kaboom"
    ]
    assert mine.handlers == []  # an application's logger is left as it was


@pytest.mark.parametrize("app_logging", [False, True], ids=["no logging set-up", "the app's basicConfig"])
async def test_a_real_server_logs_to_stderr_once(tmp_path: Path, app_logging: bool) -> None:
    (tmp_path / "server.py").write_text(textwrap.dedent(SERVER), encoding="utf-8")
    env = {"APP_LOGGING": "1"} if app_logging else {}
    async with child([PYTHON, "server.py"], tmp_path, **env) as server:
        await server.initialize()
        await server.call(2, "boom")
        answer = await server.answer()
        await server.stderr_line('raise ValueError("kaboom")')
        assert server.process.stdin is not None
        await server.process.stdin.aclose()  # EOF: the server ends
        status, rest, stderr = await server.end()
    assert answer["result"]["isError"] is True
    assert status == 0
    assert rest == b""  # stdout carried the protocol frames only
    prefix = "APP ERROR " if app_logging else "ERROR mcpframe.server: "
    assert stderr.count("tool 'boom' failed: ValueError: kaboom") == 1, stderr
    assert f"{prefix}tool 'boom' failed: ValueError: kaboom" in stderr
    assert stderr.count("Traceback (most recent call last):") == 1
