"""`mcpframe proxy --listen URL --multiplex shared -- ...` as a command: the official SDK's clients share
one `mcpframe serve examples/everything.py`; `--on-upstream-exit exit` ends the proxy with its status."""

from __future__ import annotations

import subprocess
import threading
from typing import Any

import anyio
import httpx
import mcp.types as sdk
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests.proxy._listen_support import SERVE_EVERYTHING, child_env, listen_command, rpc, running
from tests.proxy._shared_support import call, initialize
from tests.proxy.conftest import PEER

pytestmark = pytest.mark.anyio

SHARED = ("--multiplex", "shared")


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_sdk_sessions_share_one_child_with_their_own_progress_and_sampling() -> None:
    with running(listen_command(*SERVE_EVERYTHING, flags=SHARED)) as url:
        progress: dict[int, list[float]] = {}
        texts: dict[int, list[str]] = {}
        sampling = anyio.Lock()  # one sampling call in flight at a time: see docs/proxy.md on routing

        async def one(n: int) -> None:
            async def sample(context: Any, params: sdk.CreateMessageRequestParams) -> sdk.CreateMessageResult:
                content = sdk.TextContent(type="text", text=f"session {n}")
                return sdk.CreateMessageResult(role="assistant", content=content, model="m")

            seen = progress.setdefault(n, [])

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                seen.append(value)

            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write, sampling_callback=sample) as session,
            ):
                await session.initialize()
                got = texts.setdefault(n, [])
                for _ in range(3):
                    result = await session.call_tool(
                        "test_tool_with_progress", {}, progress_callback=on_progress
                    )
                    got.append(text_of(result))
                async with sampling:
                    got.append(text_of(await session.call_tool("test_sampling", {"prompt": "hi"})))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for n in range(3):
                    tg.start_soon(one, n)
    for n in range(3):
        assert texts[n] == ["Progress test completed"] * 3 + [f"LLM response: session {n}"]
        assert progress[n] == [0, 50, 100] * 3


async def test_on_upstream_exit_exit_ends_the_proxy_with_the_childs_status() -> None:
    command = listen_command(*PEER, flags=(*SHARED, "--on-upstream-exit", "exit"))
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            if "Streamable HTTP on " in line and not found:
                found.append(line.split("Streamable HTTP on ")[1].split()[0])
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(30)
        assert found, "the proxy printed no URL"
        async with httpx.AsyncClient(timeout=20) as http:
            with anyio.fail_after(20):
                headers, _ = await initialize(http, found[0])
                crashed = await call(http, found[0], headers, rpc(1, "crash", {"status": 3}))
        assert crashed["error"]["code"] == -32000
        assert child.wait(30) == 3
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
