"""The engine drop-in over stdio: the SDK's own clients against the same SDK server code on both engines.

``tests/compat/engine_apps.py`` runs either ``app.run()`` (the SDK's engine) or
``mcpframe.compat.serve(app)`` (mcpframe's). Every scenario runs against both and the results must be equal.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client as sdk_stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    CreateMessageResult,
    ElicitResult,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
)

from mcpframe.compat import mcp_sdk

from ._support import HERE, MiB, child_env, text_of

pytestmark = pytest.mark.anyio

APPS = HERE / "engine_apps.py"


def params(mode: str, *extra: str, **env: str) -> StdioServerParameters:
    """``engine_apps.py`` on the SDK's engine (``sdk``) or on mcpframe's (``engine``)."""
    return StdioServerParameters(command=sys.executable, args=[str(APPS), mode, *extra], env=child_env(**env))


async def on_sample(context: Any, request: Any) -> CreateMessageResult:
    text = request.messages[0].content.text
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text[::-1]), model="m")


async def on_elicit(context: Any, request: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


class Recorder:
    """What a client saw besides results: log messages and progress, in order."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.events.append(("log", params.level, params.data))

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.events.append(("progress", progress, total, message))


async def attempt(call: Any) -> Any:
    """The dumped result, or the error's code, message and data."""
    try:
        return (await call).model_dump()
    except MCPError as exc:
        return {"error": (exc.error.code, exc.error.message, exc.error.data)}


async def legacy_calls(session: ClientSession, seen: Recorder) -> dict[str, Any]:
    out: dict[str, Any] = {"initialize": (await session.initialize()).model_dump()}
    out["ping"] = await attempt(session.send_ping())
    out["tools"] = await attempt(session.list_tools())
    for name, arguments in TOOL_CALLS:
        out[f"call {name} {arguments}"] = await attempt(session.call_tool(name, arguments))
    out["chatty"] = await attempt(session.call_tool("chatty", {"steps": 3}, progress_callback=seen.progress))
    out["ask"] = await attempt(session.call_tool("ask", {}))
    out["sample"] = await attempt(session.call_tool("sample", {"prompt": "stressed"}))
    out |= await read_calls(session)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        out["set_level"] = await attempt(session.set_logging_level("debug"))
    return out


TOOL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "h\u00e9llo \U0001f389\n"}),
    ("point", {"x": 1}),
    ("point", {"x": "1", "y": 5}),
    ("point", {"x": "not a number"}),
    ("point", {}),
    ("add", {"a": 1.5, "b": 2}),
    ("fail", {"message": "boom"}),
    ("reader", {"uri": "res://items/z"}),
    ("reader", {"uri": "res://none"}),
    ("no-such-tool", {}),
]


async def read_calls(session: ClientSession) -> dict[str, Any]:
    out: dict[str, Any] = {"resources": await attempt(session.list_resources())}
    out["templates"] = await attempt(session.list_resource_templates())
    for uri in ("res://static", "res://binary", "res://items/apple", "res://missing"):
        out[f"read {uri}"] = await attempt(session.read_resource(uri))
    out["prompts"] = await attempt(session.list_prompts())
    out["greet"] = await attempt(session.get_prompt("greet", {"name": "Ada", "style": "bold"}))
    out["greet without name"] = await attempt(session.get_prompt("greet", {}))
    out["no prompt"] = await attempt(session.get_prompt("nope", {}))
    prompt = PromptReference(type="ref/prompt", name="greet")
    out["complete prompt"] = await attempt(session.complete(prompt, {"name": "name", "value": "al"}))
    template = ResourceTemplateReference(type="ref/resource", uri="res://items/{name}")
    out["complete template"] = await attempt(session.complete(template, {"name": "name", "value": "a"}))
    return out


async def legacy_run(mode: str) -> tuple[dict[str, Any], list[Any]]:
    seen = Recorder()
    with anyio.fail_after(60):
        async with (
            sdk_stdio_client(params(mode)) as (read, write),
            ClientSession(
                read,
                write,
                logging_callback=seen.log,
                sampling_callback=on_sample,
                elicitation_callback=on_elicit,
            ) as session,
        ):
            return await legacy_calls(session, seen), seen.events


async def test_legacy_era_matches_the_sdk_engine() -> None:
    reference, reference_events = await legacy_run("sdk")
    results, events = await legacy_run("engine")
    assert reference["initialize"]["protocol_version"] == "2025-11-25"
    for key, expected in reference.items():
        assert results[key] == expected, key
    assert events == reference_events
    assert ("progress", 3.0, 3.0, "step 3") in events
    assert ("log", "info", "step 3 of 3") in events
    assert results["ask"]["content"][0]["text"] == "accept:Ada"  # elicitation reached the client
    assert results["sample"]["content"][0]["text"] == "desserts"  # so did sampling
    assert results["call point {'x': 1}"]["structured_content"] == {"x": 1, "y": 2}
    assert results["call fail {'message': 'boom'}"]["is_error"] is True
    assert results["read res://binary"]["contents"][0]["blob"] == "AAECAwQFBgc="


async def modern_run(mode: str, *extra: str) -> tuple[str, dict[str, Any]]:
    with anyio.fail_after(60):
        client = Client(params(mode, *extra), mode="auto", log_level="debug", elicitation_callback=on_elicit)
        async with client:
            out: dict[str, Any] = {"capabilities": client.server_capabilities.model_dump()}
            out["tools"] = await attempt(client.list_tools())
            for name, arguments in TOOL_CALLS:
                out[f"call {name} {arguments}"] = await attempt(client.call_tool(name, arguments))
            out["chatty"] = await attempt(client.call_tool("chatty", {"steps": 2}))
            out["ask"] = await attempt(client.call_tool("ask", {}))
            out["confirm"] = await attempt(client.call_tool("confirm", {}))
            out |= await read_calls(client.session)
            return str(client.protocol_version), out


async def test_modern_era_matches_the_sdk_engine() -> None:
    version, reference = await modern_run("sdk")
    engine_version, results = await modern_run("engine")
    assert version == engine_version == "2026-07-28"
    for key, expected in reference.items():
        assert results[key] == expected, key
    # 2026-07-28 forbids server-to-client requests: the SDK's refusal comes through unchanged.
    assert results["ask"]["error"][0] == -32600
    assert results["chatty"]["content"][0]["text"] == "done 2"
    # input_required: sealed requestState round trip through the SDK's own boundary, answered on retry
    assert (
        results["confirm"]["content"][0]["text"] == "state=asked-once action=accept content={'name': 'Ada'}"
    )


class RawPeer:
    """Bytes in, parsed responses out: for frames no SDK client would send."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.buffer = b""

    async def send(self, data: bytes) -> None:
        await self.process.stdin.send(data)

    async def receive(self, count: int) -> list[dict[str, Any]]:
        import json  # noqa: PLC0415

        out: list[dict[str, Any]] = []
        while len(out) < count:
            while b"\n" not in self.buffer:
                self.buffer += await self.process.stdout.receive(1 << 20)
            line, _, self.buffer = self.buffer.partition(b"\n")
            out.append(json.loads(line))
        return out


async def raw_exchange(mode: str, frames: list[bytes], answers: int, **env: str) -> list[dict[str, Any]]:
    command = [sys.executable, str(APPS), mode]
    with anyio.fail_after(60):
        async with await anyio.open_process(command, env=child_env(**env)) as process:
            peer = RawPeer(process)
            received: list[dict[str, Any]] = []
            for data in frames:
                await peer.send(data)
                if b'"id"' in data or b'"jsonrpc"' not in data:  # a notification is not answered
                    received += await peer.receive(1)
            assert len(received) == answers
            await process.stdin.aclose()
            await process.wait()
            return received


def frame(request_id: int | None, method: str, params: Any = None) -> bytes:
    import json  # noqa: PLC0415

    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        body["id"] = request_id
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode() + b"\n"


def revision_script(version: str) -> list[bytes]:
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    return [
        frame(1, "initialize", init),
        frame(None, "notifications/initialized"),
        frame(2, "tools/list"),
        frame(3, "tools/call", {"name": "point", "arguments": {"x": 4}}),
        frame(4, "tools/call", {"name": "point"}),
        frame(5, "tools/call", {"name": 5}),
        frame(6, "resources/read", {"uri": "res://missing"}),
        frame(7, "resources/templates/list"),
        frame(8, "prompts/get", {"name": "greet", "arguments": {"name": "Bo"}}),
        frame(9, "ping"),
    ]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_each_handshake_revision_matches_the_sdk_engine(version: str) -> None:
    script = revision_script(version)
    reference = await raw_exchange("sdk", script, 9)
    results = await raw_exchange("engine", script, 9)
    assert results == reference
    assert results[0]["result"]["protocolVersion"] == version
    assert results[2]["result"]["content"][0]["type"] == "text"
    assert results[4]["error"]["code"] == -32602


async def test_malformed_and_oversize_frames_are_answered_and_the_connection_goes_on() -> None:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    frames = [
        frame(1, "initialize", init),
        b"{not json}\n",
        b'{"jsonrpc": "2.0", "id": 2}\n',
        frame(3, "tools/call", {"name": "echo", "arguments": {"text": "y" * 10_000}}),
        b"\xff\xfe garbage\n",
        frame(4, "tools/call", {"name": "echo", "arguments": {"text": "still here"}}),
    ]
    answers = await raw_exchange("engine", frames, 6, MCPFRAME_ENGINE_MAX_FRAME="4096")
    assert answers[1]["error"]["code"] == -32700
    assert answers[1]["id"] is None
    assert answers[2]["error"]["code"] == -32600
    assert answers[2]["id"] == 2
    assert answers[3]["error"]["code"] in (-32600, -32700)  # over max_frame: refused, not read
    assert answers[4]["error"]["code"] == -32700
    assert answers[5]["id"] == 4
    assert answers[5]["result"]["content"][0]["text"] == "still here"


@pytest.mark.parametrize("mib", [1, 8, pytest.param(32, marks=pytest.mark.slow)])
async def test_large_results_and_requests(mib: int) -> None:
    size = mib * MiB
    with anyio.fail_after(120):
        async with (
            mcp_sdk.stdio_client(params("engine")) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            text = text_of(await session.call_tool("blob", {"size": size}))
            assert len(text) == size
            assert text == "x" * size
            # echo would answer twice the size (text and structured copy): ask for the length instead
            assert text_of(await session.call_tool("length", {"text": "z" * size})) == str(size)
            assert text_of(await session.call_tool("echo", {"text": "after"})) == "after"


async def fastmcp_legacy(mode: str) -> tuple[dict[str, Any], list[Any]]:
    seen = Recorder()
    with anyio.fail_after(60):
        async with (
            sdk_stdio_client(params(mode, "fastmcp")) as (read, write),
            ClientSession(read, write, logging_callback=seen.log) as session,
        ):
            out: dict[str, Any] = {"initialize": (await session.initialize()).model_dump()}
            out["tools"] = await attempt(session.list_tools())
            out["echo"] = await attempt(session.call_tool("fast_echo", {"text": "hi"}))
            out["bad"] = await attempt(session.call_tool("fast_echo", {}))
            out["blob"] = await attempt(session.call_tool("fast_blob", {"size": 5}))
            progress = seen.progress
            out["chatty"] = await attempt(
                session.call_tool("fast_chatty", {"steps": 2}, progress_callback=progress)
            )
            out["resources"] = await attempt(session.list_resources())
            out["static"] = await attempt(session.read_resource("res://fast"))
            out["templates"] = await attempt(session.list_resource_templates())
            out["item"] = await attempt(session.read_resource("res://fast/q"))
            out["prompts"] = await attempt(session.list_prompts())
            out["greet"] = await attempt(session.get_prompt("fast_greet", {"name": "Al"}))
            return out, seen.events


async def test_fastmcp_legacy_matches_its_own_engine() -> None:
    reference, reference_events = await fastmcp_legacy("sdk")
    results, events = await fastmcp_legacy("engine")
    for key, expected in reference.items():
        assert results[key] == expected, key
    assert events == reference_events
    assert results["echo"]["content"][0]["text"] == "hi"
    assert ("progress", 2.0, 2.0, None) in events


async def test_fastmcp_modern_matches_its_own_engine() -> None:
    async def run(mode: str) -> tuple[str, dict[str, Any]]:
        with anyio.fail_after(60):
            async with Client(params(mode, "fastmcp"), mode="auto") as client:
                out = {"tools": await attempt(client.list_tools())}
                out["echo"] = await attempt(client.call_tool("fast_echo", {"text": "hi"}))
                out["item"] = await attempt(client.read_resource("res://fast/q"))
                out["greet"] = await attempt(client.get_prompt("fast_greet", {"name": "Al"}))
                return str(client.protocol_version), out

    version, reference = await run("sdk")
    engine_version, results = await run("engine")
    assert version == engine_version == "2026-07-28"
    assert results == reference
