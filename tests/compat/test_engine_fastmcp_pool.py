"""A FastMCP app on the engine: its sync tools, resources and prompts run on mcpframe's worker pool."""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import pytest
import sniffio

pytest.importorskip("fastmcp")

from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import Middleware
from fastmcp.utilities import async_utils
from mcp.server.mcpserver import MCPServer
from tests.compat._support import needs_private_fastmcp

from mcpframe._threads import POOLED, WorkerPool
from mcpframe.client import Client
from mcpframe.compat.engine import engine_server
from mcpframe.compat.engine._fastmcp import KNOWN_HOLDERS, NAME, pool_fastmcp, stand_in

pytestmark = pytest.mark.anyio

needs_pool = pytest.mark.skipif(
    not POOLED,
    reason="mcpframe's own worker threads are the private path; without it calls take anyio.to_thread",
)

ORIGINAL = async_utils.call_sync_fn_in_threadpool
WORKER = "mcpframe-worker"
tagged: contextvars.ContextVar[str] = contextvars.ContextVar("tagged", default="unset")


class Tagger(Middleware):
    """Sets a context variable around every tool call, as FastMCP middleware may."""

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        token = tagged.set(f"tagged {context.message.name}")
        try:
            return await call_next(context)
        finally:
            tagged.reset(token)


def build_app(gate: threading.Event) -> FastMCP:
    app = FastMCP("pooled")
    app.add_middleware(Tagger())
    add_tools(app, gate)
    add_the_rest(app)
    return app


def add_tools(app: FastMCP, gate: threading.Event) -> None:
    @app.tool
    def where() -> str:
        return threading.current_thread().name

    @app.tool
    def seen(ctx: Context) -> str:
        """Sync, with FastMCP's Context injected (its dependency wrapper calls the pool too)."""
        return f"{threading.current_thread().name} {ctx is get_context()} {tagged.get()}"

    @app.tool
    def request_id() -> str:
        return f"{get_context().request_id} {tagged.get()}"

    @app.tool
    def hop() -> str:
        """Back on the event loop from the worker, through anyio."""
        return str(anyio.from_thread.run_sync(threading.current_thread).name)

    @app.tool
    def fails() -> str:
        raise ValueError("broken on purpose")

    @app.tool(timeout=0.2)
    def stuck() -> str:
        gate.wait(30)
        return "late"


def add_the_rest(app: FastMCP) -> None:
    @app.resource("res://where")
    def where_resource() -> str:
        return threading.current_thread().name

    @app.resource("res://where/{part}")
    def where_template(part: str) -> str:
        return f"{part} {threading.current_thread().name}"

    @app.prompt
    def where_prompt() -> str:
        return threading.current_thread().name

    @app.completion
    def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        return [threading.current_thread().name]


def holders() -> dict[str, Any]:
    return {name: getattr(sys.modules[name], NAME) for name in KNOWN_HOLDERS}


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.fixture
def gate() -> Any:
    event = threading.Event()
    yield event
    event.set()  # frees a worker a test left waiting


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@needs_pool
async def test_sync_tools_resources_and_prompts_run_on_the_pool(mode: Any, gate: threading.Event) -> None:
    server = engine_server(build_app(gate))
    with anyio.fail_after(10):
        async with Client(server, mode=mode) as client:
            assert text(await client.call_tool("where", {})) == WORKER
            assert (await client.read_resource("res://where"))[0]["text"] == WORKER
            assert (await client.read_resource("res://where/x"))[0]["text"] == f"x {WORKER}"
            prompt = await client.get_prompt("where_prompt", {})
            assert prompt["messages"][0]["content"]["text"] == WORKER
            completion = await client.complete(
                {"type": "ref/resource", "uri": "res://where/{part}"}, {"name": "part", "value": ""}
            )
            assert completion["values"] == [WORKER]


@needs_pool
async def test_every_fastmcp_holder_is_swapped_while_serving_and_restored_after(
    gate: threading.Event,
) -> None:
    assert set(holders().values()) == {ORIGINAL}
    with anyio.fail_after(10):
        async with Client(engine_server(build_app(gate))) as client:
            swapped = set(holders().values())
            assert len(swapped) == 1
            assert swapped != {ORIGINAL}
            assert text(await client.call_tool("where", {})) == WORKER
    assert set(holders().values()) == {ORIGINAL}


@needs_pool
async def test_context_variables_reach_the_worker(gate: threading.Event) -> None:
    with anyio.fail_after(10):
        async with Client(engine_server(build_app(gate)), mode="legacy") as client:
            assert text(await client.call_tool("seen", {})) == f"{WORKER} True tagged seen"
            result = await client.call_tool("request_id", {})
            request, tag = text(result).split(" ", 1)
            assert request.isdigit()
            assert tag == "tagged request_id"


@needs_private_fastmcp
async def test_anyio_from_thread_works_inside_a_sync_tool(gate: threading.Event) -> None:
    with anyio.fail_after(10):
        async with Client(engine_server(build_app(gate))) as client:
            assert text(await client.call_tool("hop", {})) == threading.current_thread().name


@needs_private_fastmcp
async def test_a_tool_exception_reaches_fastmcp(gate: threading.Event) -> None:
    with anyio.fail_after(10):
        async with Client(engine_server(build_app(gate)), mode="legacy") as client:
            result = await client.call_tool("fails", {})
            assert result["isError"] is True
            assert "broken on purpose" in text(result)


@needs_pool
async def test_a_tool_timeout_fires_while_the_worker_is_still_busy(gate: threading.Event) -> None:
    with anyio.fail_after(10):
        async with Client(engine_server(build_app(gate)), mode="legacy") as client:
            result = await client.call_tool("stuck", {})
            assert result["isError"] is True
            assert "timed out after 0.2s" in text(result)
            assert not gate.is_set()  # the pool abandoned the call; FastMCP's own threads would wait
            gate.set()
            assert text(await client.call_tool("where", {})) == WORKER


@needs_pool
async def test_nested_engines_share_one_swap_and_the_last_restores(gate: threading.Event) -> None:
    with anyio.fail_after(10):
        async with Client(engine_server(build_app(gate))) as outer:
            during = holders()
            async with Client(engine_server(build_app(gate))) as inner:
                assert holders() == during
                assert text(await inner.call_tool("where", {})) == WORKER
            assert holders() == during  # the inner engine left; the outer still serves
            assert text(await outer.call_tool("where", {})) == WORKER
    assert set(holders().values()) == {ORIGINAL}


@needs_private_fastmcp
async def test_undo_puts_back_only_its_own_stand_in() -> None:
    app = FastMCP("undo")
    undo = pool_fastmcp(app, WorkerPool())
    theirs = sys.modules["fastmcp.tools.function_tool"]
    ours = getattr(theirs, NAME)
    assert ours is not ORIGINAL

    async def someone_elses(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    setattr(theirs, NAME, someone_elses)
    try:
        undo()
        undo()  # a second call does nothing
        assert getattr(theirs, NAME) is someone_elses
        assert all(value is ORIGINAL for name, value in holders().items() if name != theirs.__name__)
    finally:
        setattr(theirs, NAME, ORIGINAL)


@needs_private_fastmcp
async def test_other_apps_and_no_pool_leave_fastmcp_alone() -> None:
    pool_fastmcp(MCPServer("plain"), WorkerPool())()
    assert set(holders().values()) == {ORIGINAL}
    pool_fastmcp(FastMCP("unpooled"), None)()
    assert set(holders().values()) == {ORIGINAL}
    with anyio.fail_after(10):
        async with Client(engine_server(FastMCP("off"), thread_pool=False)):
            assert set(holders().values()) == {ORIGINAL}


@needs_pool
async def test_the_stand_in_runs_like_fastmcps_own_and_defers_to_it_off_asyncio() -> None:
    calls: list[tuple[Any, ...]] = []

    async def fastmcps_own(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        calls.append((fn, args, kwargs))
        return "own"

    run = stand_in(fastmcps_own, WorkerPool())

    def pair(a: int, *, b: int) -> tuple[int, int, str]:
        return a, b, threading.current_thread().name

    def fail() -> None:
        raise KeyError("inside")

    with anyio.fail_after(10):
        token = sniffio.current_async_library_cvar.set("trio")  # as seen from a trio task
        try:
            assert await run(pair, 3, b=4) == "own"
        finally:
            sniffio.current_async_library_cvar.reset(token)
        assert calls == [(pair, (3,), {"b": 4})]
        assert await run(pair, 1, b=2) == (1, 2, WORKER)
        with pytest.raises(KeyError, match="inside"):
            await run(fail)
    assert len(calls) == 1
