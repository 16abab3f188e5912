"""The gateway (`mcpframe proxy --config`): real `mcpframe serve` children behind one client endpoint.

One gateway with two servers (examples/everything.py and SMALL below, whose lists page by two) is shared by
the module's routing tests; the failure tests start their own. The gateway runs in this process over a
memory pair (so a test can reach its upstreams); the command-line tests run `mcpframe proxy` as a child.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

import mcpframe
from mcpframe.client import Client
from mcpframe.proxy.gateway import Gateway
from mcpframe.proxy.gateway_config import UpstreamSpec
from mcpframe.session import JSONRPCError
from mcpframe.transports import memory_pair

pytestmark = pytest.mark.anyio

EVERYTHING = str(Path(__file__).resolve().parents[2] / "examples" / "everything.py")
SOURCE = str(Path(mcpframe.__file__).resolve().parents[1])
BOUND = 30  # seconds any one step may take on a loaded machine (a hang fails instead of blocking CI)

SMALL = '''
import os
import anyio
from mcpframe.server import Context, Server

server = Server("small", page_size=2)
cancelled = anyio.Event()


@server.tool
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool
def echo(text: str) -> str:
    """Says text back."""
    return f"small: {text}"


@server.tool
async def slow(ctx: Context) -> str:
    """Reports progress once, then waits until it is cancelled."""
    await ctx.report_progress(1, 2, "started")
    try:
        await anyio.sleep(3600)
    finally:
        cancelled.set()
    return "not cancelled"


@server.tool
async def was_cancelled() -> str:
    """Waits until slow has been cancelled."""
    with anyio.fail_after(20):
        await cancelled.wait()
    return "yes"


@server.tool
async def roots(ctx: Context) -> str:
    """The client's roots, asked through whoever is in between."""
    return ",".join(root["uri"] for root in await ctx.list_roots())


@server.tool
def touch() -> str:
    """Says small://note changed (to its subscribers)."""
    server.notify_resource_updated("small://note")
    return "touched"


@server.tool
def grow() -> str:
    """Adds a tool: list_changed."""
    server.tool(name="grown")(lambda: "grown")
    return "grown"


@server.prompt
def greet(name: str) -> str:
    """A greeting."""
    return f"hello {name}"


@server.resource("small://note", name="note", mime_type="text/plain")
def note() -> str:
    return "a small note"
'''


def child_env() -> dict[str, str]:
    """The children import this checkout's mcpframe (and inherit MCPFRAME_BACKEND)."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))}


def serve_spec(name: str, target: str) -> UpstreamSpec:
    return UpstreamSpec(
        name=name,
        kind="stdio",
        command=sys.executable,
        args=("-m", "mcpframe", "serve", target),
        env=child_env(),
    )


@dataclasses.dataclass
class Harness:
    client: Client
    gateway: Gateway
    reports: list[str]
    notes: MemoryObjectReceiveStream[tuple[str, Any]]

    async def next_note(self, method: str) -> Any:
        """The params of the next notification `method` the client gets (others are skipped)."""
        with anyio.fail_after(BOUND):
            async for got, params in self.notes:
                if got == method:
                    return params
        raise AssertionError("the notifications ended")


async def _sampling(params: dict[str, Any]) -> dict[str, Any]:
    asked = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"echo of {asked}"}, "model": "test"}


async def _elicitation(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"username": params["message"], "email": "a@b.c"}}


@asynccontextmanager
async def _open(specs: list[UpstreamSpec], **options: Any) -> AsyncIterator[Harness]:
    reports: list[str] = []
    notes_in, notes_out = anyio.create_memory_object_stream[tuple[str, Any]](1000)
    gateway = Gateway(specs, report=reports.append, **options)
    client_end, gateway_end = memory_pair()

    def noted(method: str, params: Any) -> None:
        notes_in.send_nowait((method, params))

    async with anyio.create_task_group() as tg:
        tg.start_soon(gateway.serve, gateway_end)
        client = Client(
            transport=client_end,
            sampling_handler=_sampling,
            elicitation_handler=_elicitation,
            roots=[{"uri": "file:///work", "name": "work"}],
            notification_handler=noted,
        )
        async with client:
            yield Harness(client, gateway, reports, notes_out)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("gateway") / "small.py"
    path.write_text(textwrap.dedent(SMALL), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
async def gw(small_server: str) -> AsyncIterator[Harness]:
    async with _open([serve_spec("every", EVERYTHING), serve_spec("small", small_server)]) as harness:
        yield harness


async def _error(awaitable: Any) -> JSONRPCError:
    with pytest.raises(JSONRPCError) as caught:
        await awaitable
    return caught.value


# ---------------------------------------------------------------------- handshake and lists


async def test_handshake_answers_for_all(gw: Harness) -> None:
    client = gw.client
    assert client.server_info is not None
    assert client.server_info["name"] == "mcpframe-gateway"
    caps = client.server_capabilities
    assert caps["tools"] == {"listChanged": True}
    assert caps["resources"]["subscribe"] is True  # everything.py supports subscriptions
    assert "completions" in caps
    assert "logging" in caps


async def test_lists_merged_with_prefixes(gw: Harness) -> None:
    tools = [tool["name"] for tool in await gw.client.list_tools()]
    assert "every__test_simple_text" in tools
    assert {"small__pid", "small__echo", "small__slow", "small__was_cancelled"} <= set(tools)
    assert all(name.startswith(("every__", "small__")) for name in tools)
    assert tools.index("every__test_simple_text") < tools.index("small__echo")  # config order
    prompts = [prompt["name"] for prompt in await gw.client.list_prompts()]
    assert {"every__test_simple_prompt", "small__greet"} <= set(prompts)
    uris = [resource["uri"] for resource in await gw.client.list_resources()]
    assert {"test://static-text", "small://note"} <= set(uris)
    templates = await gw.client.list_resource_templates()
    assert [t["uriTemplate"] for t in templates] == ["test://template/{id}/data"]


async def test_pagination_walks_every_server(gw: Harness) -> None:
    pages: list[list[str]] = []
    cursor: str | None = None
    for _ in range(20):
        result = await gw.client.request("tools/list", {"cursor": cursor} if cursor else {})
        pages.append([tool["name"] for tool in result["tools"]])
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert cursor is None
    first = pages[0]  # everything.py does not page: all of it, then SMALL's first page of two
    assert [name.split("__")[0] for name in first] == ["every"] * (len(first) - 2) + ["small", "small"]
    sizes = [len(page) for page in pages[1:]]  # then SMALL's pages: its cursor is carried in ours
    assert len(sizes) >= 2
    assert set(sizes[:-1]) == {2}
    assert sizes[-1] in (1, 2)
    assert all(name.startswith("small__") for page in pages[1:] for name in page)
    assert [name for page in pages for name in page] == [
        tool["name"] for tool in await gw.client.list_tools()
    ]
    error = await _error(gw.client.request("tools/list", {"cursor": "not-ours"}))
    assert error.code == -32602
    assert "cursor" in error.message


# ---------------------------------------------------------------------- routing


async def test_calls_and_prompts_routed_by_prefix(gw: Harness) -> None:
    result = await gw.client.call_tool("small__echo", {"text": "hi"})
    assert result["content"][0]["text"] == "small: hi"
    result = await gw.client.call_tool("every__test_simple_text", {})
    assert result["content"][0]["text"]
    prompt = await gw.client.get_prompt("small__greet", {"name": "Ada"})
    assert "hello Ada" in json.dumps(prompt)
    error = await _error(gw.client.call_tool("nobody__echo", {"text": "x"}))
    assert error.code == -32602
    assert "no server named 'nobody'" in error.message
    assert "every, small" in error.message
    error = await _error(gw.client.call_tool("echo", {"text": "x"}))
    assert error.code == -32602
    assert "<server>__<name>" in error.message


async def test_resources_read_from_their_server(gw: Harness) -> None:
    (note,) = await gw.client.read_resource("small://note")
    assert note["text"] == "a small note"
    (static,) = await gw.client.read_resource("test://static-text")
    assert static["uri"] == "test://static-text"
    (data,) = await gw.client.read_resource("test://template/7/data")  # by template
    assert json.loads(data["text"])["id"] == "7"
    error = await _error(gw.client.read_resource("nowhere://x"))
    assert error.code == -32602
    assert "nowhere://x" in error.message


async def test_completion_routed_by_ref(gw: Harness) -> None:
    ref = {"type": "ref/prompt", "name": "every__test_prompt_with_arguments"}
    result = await gw.client.request(
        "completion/complete", {"ref": ref, "argument": {"name": "arg1", "value": ""}}
    )
    assert result["completion"]["values"]
    ref = {"type": "ref/resource", "uri": "test://template/{id}/data"}
    result = await gw.client.request(
        "completion/complete", {"ref": ref, "argument": {"name": "id", "value": ""}}
    )
    assert result["completion"]["values"]


async def test_unknown_method_with_several_servers(gw: Harness) -> None:
    error = await _error(gw.client.request("vendor/thing", {}))
    assert error.code == -32601
    assert "vendor/thing" in error.message


# ---------------------------------------------------------------------- what crosses


async def test_progress_sampling_elicitation_and_logging_cross(gw: Harness) -> None:
    seen: list[float] = []
    await gw.client.call_tool(
        "every__test_tool_with_progress", {}, on_progress=lambda p, t, m: seen.append(p)
    )
    assert seen == [0, 50, 100]
    result = await gw.client.call_tool("every__test_sampling", {"prompt": "ping"})
    assert result["content"][0]["text"] == "LLM response: echo of ping"
    result = await gw.client.call_tool("every__test_elicitation", {"message": "ada"})
    assert "'username': 'ada'" in result["content"][0]["text"]
    await gw.client.call_tool("every__test_tool_with_logging", {})
    message = await gw.next_note("notifications/message")
    assert message["logger"].startswith("every")


async def test_cancellation_reaches_the_server(gw: Harness) -> None:
    started = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            await gw.client.call_tool("small__slow", {}, on_progress=lambda p, t, m: started.set())

        tg.start_soon(call)
        with anyio.fail_after(BOUND):
            await started.wait()
        tg.cancel_scope.cancel()  # the client sends notifications/cancelled; the gateway cancels upstream
    result = await gw.client.call_tool("small__was_cancelled", {})
    assert result["content"][0]["text"] == "yes"


async def test_roots_subscriptions_and_list_changed_cross(gw: Harness) -> None:
    result = await gw.client.call_tool("small__roots", {})
    assert result["content"][0]["text"] == "file:///work"
    await gw.client.subscribe("small://note")
    await gw.client.call_tool("small__touch", {})
    assert (await gw.next_note("notifications/resources/updated"))["uri"] == "small://note"
    await gw.client.call_tool("small__grow", {})
    await gw.next_note("notifications/tools/list_changed")
    assert "small__grown" in [tool["name"] for tool in await gw.client.list_tools()]


# ---------------------------------------------------------------------- failures


async def test_dead_server_isolated_then_restarted(small_server: str) -> None:
    specs = [serve_spec("a", small_server), serve_spec("b", small_server)]
    async with _open(specs, restart_delay=3600.0) as gw:  # restarted by a request below, not by the clock
        pid = int((await gw.client.call_tool("b__pid", {}))["content"][0]["text"])
        await gw.client.subscribe("small://note")  # both servers list it: the last to list it has it
        started = anyio.Event()
        pending: list[JSONRPCError] = []

        async def doomed() -> None:
            try:
                await gw.client.call_tool("b__slow", {}, on_progress=lambda p, t, m: started.set())
            except JSONRPCError as exc:
                pending.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(doomed)
            with anyio.fail_after(BOUND):
                await started.wait()
            os.kill(pid, signal.SIGKILL)
            await gw.next_note("notifications/tools/list_changed")
        assert "server 'b' went away while answering tools/call" in pending[0].message

        tools = [tool["name"] for tool in await gw.client.list_tools()]
        assert "a__echo" in tools
        assert all(name.startswith("a__") for name in tools)
        assert (await gw.client.call_tool("a__echo", {"text": "still"}))["content"][0][
            "text"
        ] == "small: still"
        assert any(line.startswith("server 'b' ended") for line in gw.reports)

        back = await gw.client.call_tool("b__echo", {"text": "back"})  # the next request starts it again
        assert back["content"][0]["text"] == "small: back"
        await gw.next_note("notifications/tools/list_changed")  # and the client hears it is back
        await gw.client.call_tool("b__touch", {})  # the subscription made before the crash was renewed
        assert (await gw.next_note("notifications/resources/updated"))["uri"] == "small://note"


@asynccontextmanager
async def _serving_http(target: str, token: str) -> AsyncIterator[str]:
    """`mcpframe serve TARGET --http --port 0` requiring `token`: its URL."""
    command = [sys.executable, "-m", "mcpframe", "serve", target, "--http", "--port", "0"]
    env = {**os.environ, **child_env(), "MCPFRAME_AUTH_TOKEN": token}
    async with await anyio.open_process(command, env=env) as child:
        assert child.stderr is not None
        seen = b""
        try:
            with anyio.fail_after(BOUND):
                while not (found := re.search(rb"Streamable HTTP on (\S+)", seen)):
                    seen += await child.stderr.receive()
            yield found.group(1).decode()
        finally:
            child.terminate()
            with anyio.fail_after(BOUND):
                await child.wait()


async def test_remote_server_with_headers(small_server: str) -> None:
    pytest.importorskip("httpx")
    async with _serving_http(small_server, "s3cret") as url:
        good = UpstreamSpec(name="remote", kind="auto", url=url, headers={"Authorization": "Bearer s3cret"})
        bad = UpstreamSpec(name="refused", kind="streamable-http", url=url)
        async with _open([good, bad]) as gw:
            result = await gw.client.call_tool("remote__echo", {"text": "over http"})
            tools = [tool["name"] for tool in await gw.client.list_tools()]
    assert result["content"][0]["text"] == "small: over http"
    assert "remote__echo" in tools
    assert not any(name.startswith("refused__") for name in tools)
    (refused,) = [line for line in gw.reports if "'refused'" in line]
    assert "did not start" in refused
    assert "Unauthorized" in refused or "401" in refused


async def test_server_that_does_not_start(small_server: str) -> None:
    broken = UpstreamSpec(name="broken", kind="stdio", command=str(Path(small_server).parent / "missing"))
    async with _open([broken, serve_spec("ok", small_server)], restart_delay=3600.0) as gw:
        assert any("server 'broken' did not start: command not found" in line for line in gw.reports)
        tools = [tool["name"] for tool in await gw.client.list_tools()]
        assert "ok__echo" in tools
        assert not any(name.startswith("broken__") for name in tools)
        for _ in range(2):  # the first request starts it once more; the second may not (once per wait)
            error = await _error(gw.client.call_tool("broken__echo", {"text": "x"}))
            assert error.code == -32000
            assert "server 'broken' is not running (command not found" in error.message
            assert "next start in" in error.message
        assert sum("'broken' did not start" in line for line in gw.reports) == 2
