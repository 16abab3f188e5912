"""2026-07-28's tasks extension (`io.modelcontextprotocol/tasks`): mcpframe's client against its server."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpframe import jsonrpc, protocol
from mcpframe.client import Client, TaskHandle
from mcpframe.session import JSONRPCError

from ._driver import connect
from .test_tasks import make_server, text

pytestmark = pytest.mark.anyio

MODERN_META = {
    protocol.PROTOCOL_VERSION_KEY: protocol.V2026_07_28,
    protocol.CLIENT_INFO_KEY: {"name": "raw", "version": "0"},
}


async def raw(client: Client, method: str, params: dict[str, Any], capabilities: dict[str, Any]) -> Any:
    """A modern request with exactly these client capabilities (the client would add the extension)."""
    meta = {**MODERN_META, protocol.CLIENT_CAPABILITIES_KEY: capabilities}
    return await client.session.request(method, {**params, "_meta": meta})


async def test_the_server_decides_and_the_client_resolves_it() -> None:
    server, gate = make_server()
    with anyio.fail_after(10):
        async with Client(server) as client:
            assert client.era == "modern"
            assert "tasks" not in client.server_capabilities
            assert client.server_capabilities["extensions"] == {protocol.TASKS_EXTENSION: {}}
            # A plain call of a task tool: answered with a task, polled to the end inside call_tool.
            assert text(await client.call_tool("double", {"x": 21})) == "42"
            handle = await client.call_tool("double", {"x": 5}, task=True)
            assert isinstance(handle, TaskHandle)
            assert handle.modern
            assert handle.task_id is not None
            assert handle.task["ttlMs"] == 300_000
            assert handle.task["pollIntervalMs"] == 20
            assert text(await handle.result()) == "10"
            task = await handle.refresh()
            assert task["status"] == "completed"
            assert text(task["result"]) == "10"
            assert text(await client.call_tool("plain")) == "plain"  # forbidden: never a task
            gate.release.set()
            assert text(await client.call_tool("blocking")) == "released"


async def test_is_error_completes_and_cancel_acknowledges() -> None:
    server, gate = make_server()
    with anyio.fail_after(10):
        async with Client(server) as client:
            broken = await client.call_tool("broken", task=True)
            result = await broken.result()
            assert result["isError"] is True
            assert broken.status == "completed"  # 2026-07-28: failed is for JSON-RPC errors only
            handle = await client.call_tool("blocking", task=True)
            await gate.started.wait()
            assert (await handle.cancel())["status"] == "cancelled"
            await gate.cancelled.wait()
            ack = await client.request(protocol.TASKS_CANCEL, {"taskId": handle.task_id})
            assert ack["resultType"] == "complete"  # an ended task: still an empty acknowledgement
            with pytest.raises(JSONRPCError) as outcome:
                await handle.result()
            assert outcome.value.code == jsonrpc.INTERNAL_ERROR


async def test_input_requests_are_answered_with_tasks_update() -> None:
    server, _ = make_server()
    asked: list[dict[str, Any]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "ann"}}

    with anyio.fail_after(10):
        async with Client(server, elicitation_handler=elicit) as client:
            handle = await client.call_tool("ask", task=True)
            assert text(await handle.result()) == "hello ann"
    assert len(asked) == 1
    assert asked[0]["requestedSchema"]["type"] == "object"


async def test_input_required_shows_the_requests_until_answered() -> None:
    server, _ = make_server()
    with anyio.fail_after(10):
        async with Client(server, mode="modern") as client:
            ext = {"elicitation": {}, "extensions": {protocol.TASKS_EXTENSION: {}}}
            created = await raw(client, protocol.TOOLS_CALL, {"name": "ask", "arguments": {}}, ext)
            assert created["resultType"] == "task"
            task_id = created["taskId"]
            task = await raw(client, protocol.TASKS_GET, {"taskId": task_id}, ext)
            while task["status"] != "input_required":
                task = await raw(client, protocol.TASKS_GET, {"taskId": task_id}, ext)
            (key, request), *_ = task["inputRequests"].items()
            assert request["method"] == protocol.ELICITATION_CREATE
            answer = {"action": "accept", "content": {"name": "bo"}}
            update = {"taskId": task_id, "inputResponses": {"unknown-key": {}, key: answer}}
            assert (await raw(client, protocol.TASKS_UPDATE, update, ext))["resultType"] == "complete"
            while task["status"] != "completed":
                task = await raw(client, protocol.TASKS_GET, {"taskId": task_id}, ext)
            assert text(task["result"]) == "hello bo"
            assert "inputRequests" not in task


async def test_errors_of_the_modern_era() -> None:
    server, _ = make_server()
    with anyio.fail_after(10):
        async with Client(server, mode="modern") as client:
            with pytest.raises(JSONRPCError) as missing:
                await raw(client, protocol.TOOLS_CALL, {"name": "blocking", "arguments": {}}, {})
            assert missing.value.code == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY
            wanted = {"extensions": {protocol.TASKS_EXTENSION: {}}}
            assert missing.value.data == {"requiredCapabilities": wanted}
            # without the extension an optional tool just runs
            plain = await raw(client, protocol.TOOLS_CALL, {"name": "double", "arguments": {"x": 1}}, {})
            assert text(plain) == "2"
            for method in (protocol.TASKS_RESULT, protocol.TASKS_LIST):
                with pytest.raises(JSONRPCError) as legacy_only:
                    await client.request(method, {"taskId": "x"})
                assert legacy_only.value.code == jsonrpc.METHOD_NOT_FOUND
            with pytest.raises(JSONRPCError) as unknown:
                await client.request(protocol.TASKS_GET, {"taskId": "nope"})
            assert unknown.value.code == jsonrpc.INVALID_PARAMS
        async with Client(server, mode="legacy") as legacy:
            with pytest.raises(JSONRPCError) as modern_only:
                await legacy.request(protocol.TASKS_UPDATE, {"taskId": "x", "inputResponses": {}})
            assert modern_only.value.code == jsonrpc.METHOD_NOT_FOUND


async def test_listen_with_task_ids_pushes_the_tasks_status() -> None:
    """2026-07-28: `subscriptions/listen` with `taskIds` gets `notifications/tasks` (a DetailedTask, tagged
    with the listen's id) now and on each change; unknown ids are left out of the acknowledgement; a client
    without the tasks extension is refused with -32021."""
    server, gate = make_server()
    extension = {"extensions": {protocol.TASKS_EXTENSION: {}}}
    with anyio.fail_after(10):
        async with connect(server) as driver:
            created = await driver.modern("tools/call", {"name": "blocking"}, capabilities=extension)
            assert created["resultType"] == "task"
            task_id = created["taskId"]
            await gate.started.wait()
            listened: dict[str, Any] = {}

            async def listen() -> None:
                filters = {"taskIds": [task_id, "no-such-task"]}
                listened["result"] = await driver.modern(
                    "subscriptions/listen", {"notifications": filters}, capabilities=extension
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(listen)
                (ack,) = await driver.wait_for(protocol.NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED)
                assert ack["notifications"] == {"taskIds": [task_id]}
                listen_id = ack["_meta"][protocol.SUBSCRIPTION_ID_KEY]
                (now,) = await driver.wait_for(protocol.NOTIFICATIONS_TASKS)  # its state at once
                assert now["taskId"] == task_id
                assert now["status"] == "working"
                gate.release.set()
                notes = await driver.wait_for(protocol.NOTIFICATIONS_TASKS, 2)
                tg.cancel_scope.cancel()
            done = notes[-1]
            assert done["status"] == "completed"
            assert text(done["result"]) == "released"  # the whole DetailedTask, as tasks/get gives it
            assert done["_meta"] == {protocol.SUBSCRIPTION_ID_KEY: listen_id}
            with pytest.raises(JSONRPCError) as refused:
                await driver.modern("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
            assert refused.value.code == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert refused.value.data == {"requiredCapabilities": extension}


async def test_the_client_listens_to_its_task() -> None:
    """`Client.listen(task_ids=...)`: the statuses reach `client.tasks.on_status` and the handle."""
    server, gate = make_server()
    with anyio.fail_after(10):
        async with Client(server) as client:
            handle = await client.call_tool("blocking", task=True)
            assert handle.task_id is not None
            seen: list[dict[str, Any]] = []
            client.tasks.on_status = seen.append
            async with client.listen(task_ids=[handle.task_id]) as accepted:
                assert accepted == {"taskIds": [handle.task_id]}
                gate.release.set()
                while not seen or seen[-1]["status"] != "completed":
                    await anyio.sleep(0.01)
            assert handle.status == "completed"
            assert text(seen[-1]["result"]) == "released"
