"""The blocking entry points freeze the start-up heap out of the cyclic GC; the embedding ones do not.

Freezing is process-wide, so every case runs a real server in a child interpreter whose ``report`` tool
answers what the collector sees from inside a served request: ``gc.get_freeze_count()`` (less what the
interpreter froze itself), whether an object built at start-up (the app's registry, or what an SDK app's
lifespan made) is still among the objects the collector walks, and what a second ``freeze_startup_heap()``
call does. Children inherit ``MCPFRAME_BACKEND``, so the suite covers both core backends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcpframe
from mcpframe._gc import ENV_VAR, SERVER_THRESHOLDS, THRESHOLDS_VAR, freeze_enabled, server_thresholds
from mcpframe.client import Client
from mcpframe.http import connect

pytestmark = pytest.mark.anyio

_SNAPSHOT = '''
import gc
import json

from mcpframe._gc import freeze_startup_heap

# The counts are of what was frozen after start-up: CPython 3.12 starts with objects already in the
# permanent generation (375 on 3.12.1, even under -S -I), 3.11 and 3.13 with none. The apps import this
# module before they serve, so nothing of ours is frozen yet.
AT_START = gc.get_freeze_count()


def snapshot(startup_object):
    """What the collector sees now, then the same after a second freeze request."""
    count = gc.get_freeze_count() - AT_START
    walked = any(obj is startup_object for obj in gc.get_objects())
    again = freeze_startup_heap()
    after = gc.get_freeze_count() - AT_START
    return json.dumps({"count": count, "walked": walked, "again": again, "after": after})
'''

NATIVE_APP = '''
import sys

import anyio

from mcpframe.server import Server
from snapshot import snapshot

server = Server("gc-freeze")


@server.tool
def report() -> str:
    """The collector's view from inside a request."""
    return snapshot(server.registry)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        server.run()
    else:  # embedded: someone else's loop serving stdio
        anyio.run(server.serve_stdio)
'''

ENGINE_APP = '''
import sys
from contextlib import asynccontextmanager

import anyio
from mcp.server.mcpserver import MCPServer

import mcpframe.compat
from snapshot import snapshot

MADE = []


@asynccontextmanager
async def lifespan(app):
    MADE.append(["state the lifespan built"])
    yield {}


app = MCPServer("gc-freeze-engine", lifespan=lifespan)


@app.tool()
def report() -> str:
    """The collector's view from inside a request."""
    return snapshot(MADE[0])


def ready(url):
    print(f"serving on {url}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "async":
        anyio.run(mcpframe.compat.serve_async, app)
    elif mode == "http":
        mcpframe.compat.serve(app, "http", port=0, ready=ready)
    else:
        mcpframe.compat.serve(app)
'''


@pytest.fixture
def apps(tmp_path: Path) -> Path:
    """A directory holding the two servers and their shared ``snapshot``."""
    for name, source in (("snapshot", _SNAPSHOT), ("native_app", NATIVE_APP), ("engine_app", ENGINE_APP)):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return tmp_path


def child_env(apps: Path, freeze: str) -> dict[str, str]:
    """This mcpframe tree and the apps importable; the freeze setting explicit (never inherited)."""
    package_root = str(Path(mcpframe.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (str(apps), package_root, os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, ENV_VAR: freeze}


async def report(client: Client) -> dict[str, Any]:
    result = await client.call_tool("report", {})
    assert not result.get("isError"), result
    seen: dict[str, Any] = json.loads(result["content"][0]["text"])
    return seen


async def over_stdio(apps: Path, args: list[str], freeze: str = "") -> dict[str, Any]:
    with anyio.fail_after(60):
        async with Client.stdio(sys.executable, args, env=child_env(apps, freeze), cwd=apps) as client:
            return await report(client)


@asynccontextmanager
async def http_child(apps: Path, args: list[str], marker: str) -> AsyncIterator[str]:
    """Run ``args`` in a child; yield the URL it prints after ``marker`` on stderr; stop it after."""
    env = {**os.environ, **child_env(apps, "")}
    process = await anyio.open_process([sys.executable, *args], env=env, cwd=apps, stdout=None)
    try:
        assert process.stderr is not None
        text = ""
        with anyio.fail_after(60):
            while marker not in text or not text.split(marker, 1)[1].count("\n"):
                text += (await process.stderr.receive()).decode()
        yield text.split(marker, 1)[1].split("\n", 1)[0].strip()
    finally:
        process.terminate()
        with anyio.move_on_after(10, shield=True) as waited:
            await process.wait()
        if waited.cancelled_caught:
            process.kill()
        await process.aclose()


async def over_http(apps: Path, args: list[str], marker: str) -> dict[str, Any]:
    async with http_child(apps, args, marker) as url:
        with anyio.fail_after(60):
            async with connect(url) as client:
                return await report(client)


def assert_frozen_once(seen: dict[str, Any]) -> None:
    assert seen["count"] > 0  # the start-up heap is in the permanent generation ...
    assert seen["walked"] is False  # ... start-up state included, so full collections skip it
    assert seen["again"] is False  # a second request does nothing: once per process
    assert seen["after"] == seen["count"]


def assert_untouched(seen: dict[str, Any]) -> None:
    assert seen == {"count": 0, "walked": True, "again": seen["again"], "after": seen["after"]}


async def test_server_run_freezes_once(apps: Path) -> None:
    assert_frozen_once(await over_stdio(apps, ["native_app.py", "run"]))


async def test_mcpframe_serve_cli_freezes_on_stdio(apps: Path) -> None:
    assert_frozen_once(await over_stdio(apps, ["-m", "mcpframe", "serve", "native_app:server"]))


async def test_mcpframe_serve_cli_freezes_on_http(apps: Path) -> None:
    args = ["-m", "mcpframe", "serve", "native_app:server", "--http", "--port", "0"]
    assert_frozen_once(await over_http(apps, args, "Streamable HTTP on "))


async def test_engine_serve_freezes_after_the_lifespan(apps: Path) -> None:
    pytest.importorskip("mcp")
    assert_frozen_once(await over_stdio(apps, ["engine_app.py", "stdio"]))


async def test_engine_serve_freezes_on_http(apps: Path) -> None:
    pytest.importorskip("mcp")
    assert_frozen_once(await over_http(apps, ["engine_app.py", "http"], "serving on "))


@pytest.mark.parametrize("value", ["0", "off"])
async def test_opting_out_leaves_the_collector_alone(apps: Path, value: str) -> None:
    seen = await over_stdio(apps, ["native_app.py", "run"], freeze=value)
    assert_untouched(seen)
    assert seen["again"] is False  # the tool's own request is refused too
    assert seen["after"] == 0


async def test_engine_opt_out(apps: Path) -> None:
    pytest.importorskip("mcp")
    seen = await over_stdio(apps, ["engine_app.py", "stdio"], freeze="0")
    assert_untouched(seen)
    assert seen["after"] == 0


async def test_embedding_entry_points_do_not_freeze(apps: Path) -> None:
    # someone else's process: only the tool's explicit call (freeze on) freezes, and only then
    seen = await over_stdio(apps, ["native_app.py", "async"])
    assert_untouched(seen)
    assert seen["again"] is True
    assert seen["after"] > 0


async def test_engine_serve_async_does_not_freeze(apps: Path) -> None:
    pytest.importorskip("mcp")
    seen = await over_stdio(apps, ["engine_app.py", "async"])
    assert_untouched(seen)
    assert seen["again"] is True


@pytest.mark.parametrize(
    ("value", "enabled"),
    [("", True), ("1", True), ("yes", True), ("0", False), ("false", False), (" OFF ", False), ("No", False)],
)
def test_the_setting(monkeypatch: pytest.MonkeyPatch, value: str, enabled: bool) -> None:
    monkeypatch.setenv(ENV_VAR, value)
    assert freeze_enabled() is enabled
    monkeypatch.delenv(ENV_VAR)
    assert freeze_enabled() is True


THRESHOLD_APP = '''
import gc

from mcpframe.server import Server

server = Server("gc-thresholds")


@server.tool
def report() -> str:
    """The collector's thresholds from inside a request."""
    return str(list(gc.get_threshold()))


if __name__ == "__main__":
    server.run()
'''


def _interpreter_defaults() -> list[int]:
    """What a fresh interpreter's collector starts with (700,10,10 up to 3.12; 3.13 starts at 2000)."""
    code = "import gc, json; print(json.dumps(list(gc.get_threshold())))"
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", list(SERVER_THRESHOLDS)), ("default", None), ("2000,15,10", [2000, 15, 10])],
)
async def test_serving_sets_the_collector_thresholds(
    tmp_path: Path, value: str, expected: list[int] | None
) -> None:
    if expected is None:  # "default": serving leaves the interpreter's own thresholds
        expected = _interpreter_defaults()
        assert expected != list(SERVER_THRESHOLDS)
    (tmp_path / "threshold_app.py").write_text(textwrap.dedent(THRESHOLD_APP), encoding="utf-8")
    env = {**child_env(tmp_path, ""), THRESHOLDS_VAR: value}
    with anyio.fail_after(60):
        async with Client.stdio(sys.executable, ["threshold_app.py"], env=env, cwd=tmp_path) as client:
            result = await client.call_tool("report", {})
    # a child interpreter starts at CPython's defaults: what it reports is what serving set (or left)
    assert json.loads(result["content"][0]["text"]) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", SERVER_THRESHOLDS), ("off", None), (" Default ", None), ("1000,10,5", (1000, 10, 5))],
)
def test_the_threshold_setting(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: tuple[int, int, int] | None
) -> None:
    monkeypatch.setenv(THRESHOLDS_VAR, value)
    assert server_thresholds() == expected


@pytest.mark.parametrize("value", ["1,2", "a,b,c", "-1,10,10"])
def test_a_malformed_threshold_setting_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(THRESHOLDS_VAR, value)
    with pytest.raises(ValueError, match=THRESHOLDS_VAR):
        server_thresholds()
