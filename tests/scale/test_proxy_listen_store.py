"""`mcpframe proxy --listen --store redis://...` is refused: a shared store lets any instance serve any
session, and a proxy's session is a child process only its own instance can reach. It used to start with
the store in place of its session table and then lose its sessions: the first GET (or DELETE) looked the
session up in the store, where the proxy had never written it, and ended it (404 on every later request)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import redis as redis_sync

from mcpframe.cli.proxy import proxy_main
from mcpframe.http.options import HttpOptions
from mcpframe.proxy import ProxyOptions
from mcpframe.proxy.listen import STORE_REFUSED, serve_listen

from .support import SOURCE, RedisProcess

_CHILD = [sys.executable, "-c", "import sys; sys.stdin.read()"]


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port bound but not listening: a connection to it is refused, and nobody else takes it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def _keys(url: str) -> set[bytes]:
    return set(redis_sync.Redis.from_url(url).keys("mcpframe:*"))


def test_the_proxy_refuses_a_store_before_it_listens(redis: RedisProcess) -> None:
    before = _keys(redis.url)
    command = [sys.executable, "-m", "mcpframe", "proxy", "--listen", "http://127.0.0.1:0/mcp"]
    env = {k: v for k, v in os.environ.items() if k not in ("MCPFRAME_AUTH_TOKEN", "MCPFRAME_DEBUG")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))
    # a process with a time limit: the proxy that took the store served until stopped
    done = subprocess.run(
        [*command, "--store", redis.url, "--", *_CHILD], capture_output=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [f"mcpframe proxy: {STORE_REFUSED}"]  # no URL: not listening
    assert _keys(redis.url) == before  # nothing written: not even this instance's liveness


def test_the_refusal_comes_before_the_store_is_reached(
    refused_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"redis://user:s3cret@127.0.0.1:{refused_port}/0"
    status = proxy_main(["--listen", "http://127.0.0.1:0/mcp", "--store", url, "--", *_CHILD])
    captured = capsys.readouterr()
    assert status == 2  # the refusal, not status 1 for a store that does not answer
    assert captured.err.splitlines() == [f"mcpframe proxy: {STORE_REFUSED}"]
    assert "s3cret" not in captured.err


def test_the_gateway_refuses_a_store_too(
    refused_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"a": {"command": sys.executable, "args": ["-c", "0"]}}}))
    url = f"redis://127.0.0.1:{refused_port}/0"
    status = proxy_main(["--config", str(config), "--listen", "http://127.0.0.1:0/mcp", "--store", url])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.splitlines() == [f"mcpframe proxy: {STORE_REFUSED}"]


@pytest.mark.anyio
async def test_serve_listen_refuses_a_store(redis: RedisProcess) -> None:
    listening: list[str] = []
    options = ProxyOptions(listen="http://127.0.0.1:0/mcp", command=_CHILD, http=HttpOptions(store=redis.url))
    with anyio.fail_after(30), pytest.raises(ValueError, match="--store cannot be used with --listen"):
        await serve_listen(options, ready=listening.append)  # (the time limit: it used to serve)
    assert listening == []
