"""Tools run as tasks (2025-11-25, SEP-1686): mcpframe's client against mcpframe's server, in memory.

2026-07-28's tasks extension: test_tasks_modern.py (it shares this module's server).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpframe import jsonrpc, protocol
from mcpframe.client import Client
from mcpframe.server import Context, MemoryTaskStore, Server, TaskManager, ToolResult
from mcpframe.session import JSONRPCError

pytestmark = pytest.mark.anyio


class Clock:
    """A clock the test moves by hand (task ttl expiry without waiting)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Gate:
    """What the blocking tool waits on, and what it tells the test."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.cancelled = anyio.Event()


def make_server(*, page_size: int = 100, clock: Clock | None = None) -> tuple[Server, Gate]:
    server = Server("tasks-test", page_size=page_size)
    server.tasks = TaskManager(poll_interval_ms=20, clock=clock or Clock())
    gate = Gate()

    @server.tool(task_support="optional")
    async def double(x: int) -> str:
        "Twice x."
        return f"{2 * x}"

    @server.tool(task_support="required")
    async def blocking() -> str:
        "Waits for the test."
        gate.started.set()
        try:
            await gate.release.wait()
        except anyio.get_cancelled_exc_class():
            gate.cancelled.set()
            raise
        return "released"

    @server.tool(task_support="optional")
    async def broken() -> ToolResult:
        "Fails as a result."
        return ToolResult(content="out of paper", is_error=True)

    @server.tool(task_support="optional")
    async def ask(ctx: Context) -> str:
        "Elicits a name."
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"hello {answer['content']['name']}"

    @server.tool
    def plain() -> str:
        "No tasks here."
        return "plain"

    return server, gate


def text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


async def test_optional_tool_as_task_and_directly() -> None:
    server, _ = make_server()
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            assert client.server_capabilities["tasks"] == {
                "list": {},
                "cancel": {},
                "requests": {"tools": {"call": {}}},
            }
            tools = {tool["name"]: tool for tool in await client.list_tools()}
            assert tools["double"]["execution"] == {"taskSupport": "optional"}
            assert tools["blocking"]["execution"] == {"taskSupport": "required"}
            assert "execution" not in tools["plain"]
            client.tasks.on_status = seen.append
            handle = await client.call_tool("double", {"x": 21}, ttl=60_000)
            assert handle.task_id is not None
            assert handle.task["ttl"] == 60_000
            assert handle.task["pollInterval"] == 20
            result = await handle.result()
            assert text(result) == "42"
            assert result["_meta"][protocol.RELATED_TASK_KEY] == {"taskId": handle.task_id}
            assert (await handle.refresh())["status"] == "completed"
            assert text(await client.call_tool("double", {"x": 2})) == "4"  # optional: directly too
    assert [task["status"] for task in seen] == ["completed"]
    assert seen[0]["taskId"] == handle.task_id


async def test_required_and_forbidden_are_enforced_with_method_not_found() -> None:
    server, gate = make_server()
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            with pytest.raises(JSONRPCError) as required:
                await client.call_tool("blocking")
            assert required.value.code == jsonrpc.METHOD_NOT_FOUND
            assert "must run as a task" in required.value.message
            with pytest.raises(JSONRPCError) as forbidden:
                await client.call_tool("plain", task=True)
            assert forbidden.value.code == jsonrpc.METHOD_NOT_FOUND
            assert "cannot run as a task" in forbidden.value.message
            handle = await client.call_tool("blocking", task=True)
            await gate.started.wait()
            assert (await handle.refresh())["status"] == "working"
            gate.release.set()
            assert text(await handle.result()) == "released"


async def test_cancel_stops_the_tool_and_stays_cancelled() -> None:
    server, gate = make_server()
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            handle = await client.call_tool("blocking", task=True)
            await gate.started.wait()
            cancelled = await handle.cancel()
            assert cancelled["status"] == "cancelled"
            assert cancelled["taskId"] == handle.task_id
            await gate.cancelled.wait()  # the tool itself was stopped
            with pytest.raises(JSONRPCError) as again:
                await handle.cancel()
            assert again.value.code == jsonrpc.INVALID_PARAMS
            assert "terminal status 'cancelled'" in again.value.message
            with pytest.raises(JSONRPCError) as outcome:
                await handle.result()
            assert outcome.value.code == jsonrpc.INTERNAL_ERROR
            assert "cancelled" in outcome.value.message
            assert (await handle.refresh())["status"] == "cancelled"


async def test_is_error_result_makes_a_failed_task() -> None:
    server, _ = make_server()
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            handle = await client.call_tool("broken", task=True)
            result = await handle.result()
            assert result["isError"] is True
            assert text(result) == "out of paper"
            task = await handle.refresh()
            assert task["status"] == "failed"
            assert task["statusMessage"] == "out of paper"


async def test_elicitation_inside_a_task_is_input_required_and_related() -> None:
    server, _ = make_server()
    statuses: list[str] = []
    asked: list[dict[str, Any]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "ann"}}

    with anyio.fail_after(10):
        async with Client(server, mode="legacy", elicitation_handler=elicit) as client:
            client.tasks.on_status = lambda task: statuses.append(task["status"])
            handle = await client.call_tool("ask", task=True)
            assert text(await handle.result()) == "hello ann"
    assert asked[0]["_meta"][protocol.RELATED_TASK_KEY] == {"taskId": handle.task_id}
    assert statuses == ["input_required", "working", "completed"]


async def test_list_is_paginated_and_scoped_to_the_session() -> None:
    server, _ = make_server(page_size=2)
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as first, Client(server, mode="legacy") as second:
            handles = [await first.call_tool("double", {"x": n}, task=True) for n in range(5)]
            for handle in handles:
                await handle.result()
            page = await first.request(protocol.TASKS_LIST, {})
            assert len(page["tasks"]) == 2
            assert "nextCursor" in page
            listed = await first.list_tasks()
            assert [task["taskId"] for task in listed] == [handle.task_id for handle in handles]
            assert {task["status"] for task in listed} == {"completed"}
            with pytest.raises(JSONRPCError) as cursor:
                await first.request(protocol.TASKS_LIST, {"cursor": "not-a-cursor"})
            assert cursor.value.code == jsonrpc.INVALID_PARAMS
            # The other session sees none of them, and cannot read one by its id.
            assert await second.list_tasks() == []
            for method in (protocol.TASKS_GET, protocol.TASKS_RESULT, protocol.TASKS_CANCEL):
                with pytest.raises(JSONRPCError) as foreign:
                    await second.request(method, {"taskId": handles[0].task_id})
                assert foreign.value.code == jsonrpc.INVALID_PARAMS
                assert "Task not found" in foreign.value.message


async def test_unknown_ids_and_bad_params_are_invalid_params() -> None:
    server, _ = make_server()
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            for params in ({"taskId": "nope"}, {"taskId": 7}, {}):
                with pytest.raises(JSONRPCError) as unknown:
                    await client.request(protocol.TASKS_GET, params)
                assert unknown.value.code == jsonrpc.INVALID_PARAMS
            with pytest.raises(JSONRPCError) as ttl:
                await client.request(
                    protocol.TOOLS_CALL, {"name": "double", "arguments": {"x": 1}, "task": {"ttl": -1}}
                )
            assert ttl.value.code == jsonrpc.INVALID_PARAMS
            assert "ttl" in ttl.value.message


async def test_ttl_expiry_drops_the_task() -> None:
    clock = Clock()
    server, _ = make_server(clock=clock)
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            handle = await client.call_tool("double", {"x": 1}, ttl=1_000)
            await handle.result()
            clock.now += 0.999
            assert (await handle.refresh())["status"] == "completed"
            clock.now += 0.002
            with pytest.raises(JSONRPCError) as gone:
                await handle.refresh()
            assert gone.value.code == jsonrpc.INVALID_PARAMS
            assert await client.list_tasks() == []


async def test_store_is_bounded_by_count() -> None:
    server, gate = make_server()
    server.tasks = TaskManager(MemoryTaskStore(max_tasks=2), poll_interval_ms=20)
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            running = [await client.call_tool("blocking", task=True) for _ in range(2)]
            with pytest.raises(JSONRPCError) as full:
                await client.call_tool("blocking", task=True)
            assert full.value.code == jsonrpc.INTERNAL_ERROR
            assert "at most 2" in full.value.message
            gate.release.set()
            for handle in running:
                await handle.result()
            third = await client.call_tool("double", {"x": 3}, task=True)  # a finished one makes room
            assert text(await third.result()) == "6"


async def test_a_server_without_task_tools_ignores_the_task_param() -> None:
    server = Server("no-tasks")

    @server.tool
    def echo(word: str) -> str:
        "Echo."
        return word

    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            assert "tasks" not in client.server_capabilities
            handle = await client.call_tool("echo", {"word": "hi"}, task=True)
            assert handle.task_id is None
            assert text(await handle.result()) == "hi"
            with pytest.raises(JSONRPCError) as absent:
                await client.request(protocol.TASKS_LIST, {})
            assert absent.value.code == jsonrpc.METHOD_NOT_FOUND


def test_task_support_is_checked_at_registration() -> None:
    server = Server("bad")
    with pytest.raises(ValueError, match="task_support"):
        server.tool(task_support="sometimes")(lambda: None)  # type: ignore[call-overload]


async def test_waiting_polls_without_status_notifications(monkeypatch: pytest.MonkeyPatch) -> None:
    server, gate = make_server()

    async def silent(job: Any) -> None:  # a server that never sends notifications/tasks/status
        return None

    monkeypatch.setattr(server.tasks, "_announce", silent)
    seen: list[dict[str, Any]] = []
    polls: list[str] = []
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            client.tasks.on_status = seen.append
            handle = await client.call_tool("blocking", task=True)
            real_refresh = handle.refresh

            async def counted(**kw: Any) -> dict[str, Any]:
                task = await real_refresh(**kw)
                polls.append(task["status"])
                if len(polls) == 2:
                    gate.release.set()  # finish only once the handle has polled twice
                return task

            monkeypatch.setattr(handle, "refresh", counted)
            assert text(await handle.result()) == "released"
    assert seen == []
    assert polls[:2] == ["working", "working"]
    assert polls[-1] == "completed"


async def test_a_tasks_result_that_times_out_goes_back_to_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    server, _ = make_server()
    retried = anyio.Event()

    async def slow_user(params: dict[str, Any]) -> dict[str, Any]:
        await retried.wait()  # answers only after the client's tasks/result gave up once
        return {"action": "accept", "content": {"name": "late"}}

    with anyio.fail_after(10):
        async with Client(server, mode="legacy", elicitation_handler=slow_user) as client:
            handle = await client.call_tool("ask", task=True)
            real_refresh = handle.refresh

            async def watched(**kw: Any) -> dict[str, Any]:
                if handle.status == "input_required":  # only after a timed-out tasks/result
                    retried.set()
                return await real_refresh(**kw)

            monkeypatch.setattr(handle, "refresh", watched)
            assert text(await handle.result(timeout=0.05)) == "hello late"
    assert retried.is_set()
