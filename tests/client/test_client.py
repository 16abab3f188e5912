"""The client against scripted in-memory servers: eras, pagination, server requests, input_required."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.session import JSONRPCError, Message, Request, Session
from mcpframe.transports import Transport

pytestmark = pytest.mark.anyio

MODERN_KEY = "io.modelcontextprotocol/protocolVersion"


class ScriptedServer:
    """A Session-level server: ``methods`` maps a method to an async function of the Request."""

    def __init__(self, methods: dict[str, Callable[[Request], Awaitable[Any]]], modern: bool = False) -> None:
        self.methods = methods
        self.modern = modern
        self.calls: list[tuple[str, Any]] = []
        self.notifications: list[str] = []
        self.cancelled = anyio.Event()
        self.sessions: list[Session] = []

    async def handle(self, req: Request) -> Any:
        self.calls.append((req.method, req.params))
        if req.method == "server/discover" and "server/discover" not in self.methods:
            if not self.modern:
                raise JSONRPCError(jsonrpc.METHOD_NOT_FOUND, "Method not found")
            return {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        if req.method == "initialize":
            return {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"},
            }
        func = self.methods.get(req.method)
        if func is None:
            raise JSONRPCError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {req.method}")
        return await func(req)

    async def note(self, message: Message) -> None:
        assert message.method is not None
        self.notifications.append(message.method)

    async def serve(self, transport: Transport) -> None:
        session = Session(transport, request_handler=self.handle, notification_handler=self.note)
        self.sessions.append(session)
        await session.run()


async def test_fallback_to_initialize_on_error() -> None:
    server = ScriptedServer({})
    with anyio.fail_after(10):
        async with Client(server) as client:
            assert client.era == "legacy"
            assert client.protocol_version == "2025-06-18"
            assert client.server_info == {"name": "s", "version": "1"}
    assert [method for method, _ in server.calls] == ["server/discover", "initialize"]
    assert server.notifications == ["notifications/initialized"]
    init = server.calls[1][1]
    assert init["clientInfo"]["name"] == "mcpframe-client"
    assert init["protocolVersion"] == "2025-11-25"


async def test_fallback_to_initialize_on_timeout() -> None:
    async def never(req: Request) -> Any:
        try:
            await anyio.sleep_forever()
        finally:
            server.cancelled.set()

    server = ScriptedServer({"server/discover": never})
    with anyio.fail_after(10):
        async with Client(server, discover_timeout=0.1) as client:
            assert client.era == "legacy"
            await server.cancelled.wait()  # the abandoned probe was cancelled on the server
            assert server.sessions[0].in_flight == 0


async def test_modern_era_stamps_every_request() -> None:
    async def tools_list(req: Request) -> Any:
        return {"tools": [{"name": "t"}]}

    server = ScriptedServer({"tools/list": tools_list}, modern=True)
    with anyio.fail_after(10):
        async with Client(server, name="me", version="2") as client:
            assert client.era == "modern"
            assert await client.list_tools() == [{"name": "t"}]
            await client.set_logging_level("info")
            await client.list_tools()
    metas = [params["_meta"] for _, params in server.calls]
    assert all(meta[MODERN_KEY] == "2026-07-28" for meta in metas)
    assert all(meta["io.modelcontextprotocol/clientInfo"] == {"name": "me", "version": "2"} for meta in metas)
    assert "io.modelcontextprotocol/logLevel" not in metas[1]
    assert metas[2]["io.modelcontextprotocol/logLevel"] == "info"
    assert server.notifications == []  # no initialized notification in the modern era


async def test_pagination_follows_next_cursor() -> None:
    pages = {None: (["a", "b"], "p2"), "p2": (["c"], "p3"), "p3": (["d"], None)}

    async def tools_list(req: Request) -> Any:
        names, cursor = pages[(req.params or {}).get("cursor")]
        result: dict[str, Any] = {"tools": [{"name": name} for name in names]}
        if cursor is not None:
            result["nextCursor"] = cursor
        return result

    async def prompts_list(req: Request) -> Any:
        return {"prompts": [{"name": "loop"}], "nextCursor": "same"}  # a server that never ends

    server = ScriptedServer({"tools/list": tools_list, "prompts/list": prompts_list})
    with anyio.fail_after(10):
        async with Client(server) as client:
            assert [tool["name"] for tool in await client.list_tools()] == ["a", "b", "c", "d"]
            assert len(await client.list_prompts()) == 2  # stops at the repeated cursor


async def test_server_requests_during_a_call_legacy() -> None:
    async def call(req: Request) -> Any:
        sampled = await req.send_request("sampling/createMessage", {"messages": [], "maxTokens": 5})
        roots = await req.send_request("roots/list")
        answer = await req.send_request("elicitation/create", {"message": "name?", "requestedSchema": {}})
        return {"content": [], "got": [sampled, roots, answer]}

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": params["message"]}}

    server = ScriptedServer({"tools/call": call})
    roots = [{"uri": "file:///tmp", "name": "tmp"}]
    with anyio.fail_after(10):
        async with Client(server, sampling_handler=sample, elicitation_handler=elicit, roots=roots) as client:
            result = await client.call_tool("x")
            assert result["got"] == [
                {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
                {"roots": roots},
                {"action": "accept", "content": {"name": "name?"}},
            ]
    capabilities = server.calls[1][1]["capabilities"]
    assert set(capabilities) == {"sampling", "elicitation", "roots"}


async def test_server_request_without_a_handler_is_an_error() -> None:
    async def call(req: Request) -> Any:
        try:
            await req.send_request("sampling/createMessage", {"messages": [], "maxTokens": 5})
        except JSONRPCError as exc:
            return {"content": [], "code": exc.code}
        return {"content": []}

    server = ScriptedServer({"tools/call": call})
    with anyio.fail_after(10):
        async with Client(server) as client:
            assert (await client.call_tool("x"))["code"] == jsonrpc.METHOD_NOT_FOUND


async def test_input_required_is_fulfilled_and_retried() -> None:
    async def call(req: Request) -> Any:
        params = req.params
        if "inputResponses" not in params:
            return {
                "resultType": "input_required",
                "inputRequests": {"who": {"method": "elicitation/create", "params": {"message": "name?"}}},
                "requestState": "opaque-1",
            }
        assert params["requestState"] == "opaque-1"
        name = params["inputResponses"]["who"]["content"]["name"]
        return {"resultType": "complete", "content": [{"type": "text", "text": f"hello {name}"}]}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    server = ScriptedServer({"tools/call": call}, modern=True)
    with anyio.fail_after(10):
        async with Client(server, elicitation_handler=elicit) as client:
            result = await client.call_tool("greet", {"x": 1})
            assert result["content"][0]["text"] == "hello Ada"
    retries = [params for method, params in server.calls if method == "tools/call"]
    assert len(retries) == 2
    assert retries[1]["arguments"] == {"x": 1}


async def test_cancelling_a_call_cancels_it_on_the_server() -> None:
    started = anyio.Event()

    async def call(req: Request) -> Any:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            server.cancelled.set()

    server = ScriptedServer({"tools/call": call})
    with anyio.fail_after(10):
        async with Client(server) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "slow")
                await started.wait()
                tg.cancel_scope.cancel()
            await server.cancelled.wait()
            assert client.session.pending == 0


async def test_log_messages_and_notifications_reach_the_callbacks() -> None:
    async def call(req: Request) -> Any:
        await req.send_notification("notifications/message", {"level": "info", "data": "working"})
        await req.send_notification("notifications/tools/list_changed")
        return {"content": []}

    logs: list[Any] = []
    notes: list[str] = []
    got_both = anyio.Event()

    def on_note(method: str, params: Any) -> None:
        notes.append(method)
        if len(notes) == 2:
            got_both.set()

    server = ScriptedServer({"tools/call": call})
    with anyio.fail_after(10):
        async with Client(server, logging_handler=logs.append, notification_handler=on_note) as client:
            await client.call_tool("x")
            await got_both.wait()
    assert logs == [{"level": "info", "data": "working"}]
    assert notes == ["notifications/message", "notifications/tools/list_changed"]


async def test_errors_in_the_block_propagate_unwrapped() -> None:
    server = ScriptedServer({})
    with pytest.raises(KeyError):
        async with Client(server):
            raise KeyError("mine")


async def test_client_needs_a_server_or_a_transport() -> None:
    with pytest.raises(TypeError):
        Client()


async def test_failed_handshake_raises_plainly_and_cleans_up() -> None:
    async def refuse(req: Request) -> Any:
        raise JSONRPCError(jsonrpc.INVALID_REQUEST, "no thanks")

    server = ScriptedServer({"initialize": refuse})
    server.handle = _initialize_via_methods(server)  # type: ignore[method-assign]
    with anyio.fail_after(10), pytest.raises(JSONRPCError) as info:
        async with Client(server):
            pass
    assert info.value.message == "no thanks"


def _initialize_via_methods(server: ScriptedServer) -> Callable[[Request], Awaitable[Any]]:
    original = server.handle

    async def handle(req: Request) -> Any:
        if req.method == "initialize":
            return await server.methods["initialize"](req)
        return await original(req)

    return handle


async def test_modern_only_mode_raises_when_discover_fails() -> None:
    server = ScriptedServer({})
    with anyio.fail_after(10), pytest.raises(JSONRPCError) as info:
        async with Client(server, mode="modern"):
            pass
    assert info.value.code == jsonrpc.METHOD_NOT_FOUND
