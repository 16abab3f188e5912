"""Resources, templates, subscriptions, prompts, completion, pagination and list_changed (legacy)."""

from __future__ import annotations

import threading
from typing import Annotated, Any

import anyio
import pytest

from mcpframe import jsonrpc
from mcpframe.server import Context, Server, assistant, blob_contents, embedded_resource, user
from mcpframe.session import JSONRPCError

from ._driver import legacy

pytestmark = pytest.mark.anyio


def _server(page_size: int | None = 100) -> Server:
    server = Server("res", page_size=page_size)

    @server.resource("x://text", mime_type="text/plain", description="Some text.")
    def some_text() -> str:
        return "hello"

    @server.resource("x://bin")
    def some_bytes() -> bytes:
        return b"\x00\x01"

    @server.resource("x://json")
    async def some_json(ctx: Context) -> dict[str, Any]:
        return {"version": ctx.protocol_version}

    @server.resource("x://many")
    def many() -> list[Any]:
        return ["a", blob_contents("x://many#2", b"b", "application/x")]

    @server.resource("files:///{+path}", mime_type="text/plain")
    def a_file(path: str) -> str:
        """A file."""
        return f"file {path}"

    @server.resource("items://{n}")
    def item(n: int) -> str:
        return f"item {n + 1}"

    _add_prompts(server)
    return server


def _add_prompts(server: Server) -> None:
    @server.prompt
    def greet(name: Annotated[str, "Who"], punctuation: str = "!") -> str:
        """Greets someone."""
        return f"Hello {name}{punctuation}"

    @server.prompt(name="chat", description="A conversation.")
    def conversation() -> list[Any]:
        return [
            user("hi"),
            assistant("hello"),
            user(embedded_resource("x://text", text="t", mime_type="text/plain")),
        ]

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return [n for n in ("alice", "albert", "bob") if n.startswith(value)]

    @server.completion(template="items://{n}", argument="n")
    async def numbers(value: str, context: dict[str, str]) -> list[str]:
        return [str(i) for i in range(150)]


async def test_resources_list_and_templates_list() -> None:
    async with legacy(_server()) as client:
        resources = (await client.request("resources/list"))["resources"]
        templates = (await client.request("resources/templates/list"))["resourceTemplates"]
    assert resources[0] == {
        "uri": "x://text",
        "name": "some_text",
        "description": "Some text.",
        "mimeType": "text/plain",
    }
    assert [r["uri"] for r in resources] == ["x://text", "x://bin", "x://json", "x://many"]
    assert templates == [
        {
            "uriTemplate": "files:///{+path}",
            "name": "a_file",
            "description": "A file.",
            "mimeType": "text/plain",
        },
        {"uriTemplate": "items://{n}", "name": "item"},
    ]


@pytest.mark.parametrize(
    ("uri", "contents"),
    [
        ("x://text", [{"uri": "x://text", "text": "hello", "mimeType": "text/plain"}]),
        ("x://bin", [{"uri": "x://bin", "blob": "AAE=", "mimeType": "application/octet-stream"}]),
        (
            "x://json",
            [{"uri": "x://json", "text": '{"version":"2025-11-25"}', "mimeType": "application/json"}],
        ),
        (
            "x://many",
            [
                {"uri": "x://many", "text": "a", "mimeType": "text/plain"},
                {"uri": "x://many#2", "blob": "Yg==", "mimeType": "application/x"},
            ],
        ),
        ("files:///a/b.txt", [{"uri": "files:///a/b.txt", "text": "file a/b.txt", "mimeType": "text/plain"}]),
        ("items://41", [{"uri": "items://41", "text": "item 42", "mimeType": "text/plain"}]),
    ],
)
async def test_read(uri: str, contents: list[dict[str, Any]]) -> None:
    async with legacy(_server()) as client:
        result = await client.request("resources/read", {"uri": uri})
    assert result == {"contents": contents}


@pytest.mark.parametrize("uri", ["x://nothing", "items://a/b"])
async def test_unknown_resource_is_32002(uri: str) -> None:
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("resources/read", {"uri": uri})
    assert info.value.code == jsonrpc.RESOURCE_NOT_FOUND
    assert info.value.data == {"uri": uri}


async def test_template_variable_conversion_failure_is_invalid_params() -> None:
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("resources/read", {"uri": "items://abc"})
    assert info.value.code == jsonrpc.INVALID_PARAMS


async def test_subscribe_updated_unsubscribe() -> None:
    server = _server()
    async with legacy(server) as client:
        assert await client.request("resources/subscribe", {"uri": "x://text"}) == {}
        server.notify_resource_updated("x://text")
        server.notify_resource_updated("x://bin")  # not subscribed: nothing arrives for it
        assert await client.wait_for("notifications/resources/updated") == [{"uri": "x://text"}]
        assert await client.request("resources/unsubscribe", {"uri": "x://text"}) == {}
        server.notify_resource_updated("x://text")
        assert await client.request("ping") == {}
        with pytest.raises(JSONRPCError) as info:
            await client.request("resources/subscribe", {"uri": "x://missing"})
    assert client.notes_of("notifications/resources/updated") == [{"uri": "x://text"}]
    assert info.value.code == jsonrpc.RESOURCE_NOT_FOUND


async def test_updates_from_a_worker_thread() -> None:
    server = _server()
    async with legacy(server) as client:
        await client.request("resources/subscribe", {"uri": "x://bin"})
        await anyio.to_thread.run_sync(server.notify_resource_updated, "x://bin")
        assert await client.wait_for("notifications/resources/updated") == [{"uri": "x://bin"}]


async def test_list_changed_after_registration() -> None:
    server = _server()
    async with legacy(server) as client:

        @server.tool
        def late() -> str:
            """Added while connected."""
            return "late"

        await client.wait_for("notifications/tools/list_changed")
        server.remove_prompt("chat")
        await client.wait_for("notifications/prompts/list_changed")
        server.remove_resource("x://bin")
        await client.wait_for("notifications/resources/list_changed")
        names = [t["name"] for t in (await client.request("tools/list"))["tools"]]
    assert names == ["late"]


async def test_prompts_list_and_get() -> None:
    async with legacy(_server()) as client:
        prompts = (await client.request("prompts/list"))["prompts"]
        simple = await client.request("prompts/get", {"name": "greet", "arguments": {"name": "Ann"}})
        chat = await client.request("prompts/get", {"name": "chat"})
    assert prompts == [
        {
            "name": "greet",
            "description": "Greets someone.",
            "arguments": [
                {"name": "name", "description": "Who", "required": True},
                {"name": "punctuation", "required": False},
            ],
        },
        {"name": "chat", "description": "A conversation.", "arguments": []},
    ]
    assert simple == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hello Ann!"}}],
        "description": "Greets someone.",
    }
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "user"]
    assert chat["messages"][2]["content"]["type"] == "resource"


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"name": "greet"}, "needs the argument(s) name"),
        ({"name": "nope"}, "unknown prompt"),
        ({"name": "greet", "arguments": {"name": 5}}, "Expected `str`"),
    ],
)
async def test_prompt_errors(params: dict[str, Any], needle: str) -> None:
    async with legacy(_server()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("prompts/get", params)
    assert info.value.code == jsonrpc.INVALID_PARAMS
    assert needle in info.value.message


async def test_completion() -> None:
    async with legacy(_server()) as client:
        prompt = await client.request(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "al"}},
        )
        template = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "items://{n}"},
                "argument": {"name": "n", "value": ""},
                "context": {"arguments": {}},
            },
        )
        none = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "punctuation", "value": ""},
            },
        )
        with pytest.raises(JSONRPCError) as info:
            await client.request(
                "completion/complete",
                {"ref": {"type": "ref/prompt", "name": "zzz"}, "argument": {"name": "a", "value": ""}},
            )
    assert prompt == {"completion": {"values": ["alice", "albert"], "total": 2, "hasMore": False}}
    assert len(template["completion"]["values"]) == 100
    assert template["completion"]["total"] == 150
    assert template["completion"]["hasMore"] is True
    assert none == {"completion": {"values": [], "total": 0, "hasMore": False}}
    assert info.value.code == jsonrpc.INVALID_PARAMS


@pytest.mark.parametrize("method", ["resources/list", "resources/templates/list", "prompts/list"])
async def test_every_list_paginates(method: str) -> None:
    key = {
        "resources/list": "resources",
        "resources/templates/list": "resourceTemplates",
        "prompts/list": "prompts",
    }[method]
    async with legacy(_server(page_size=1)) as client:
        first = await client.request(method)
        assert len(first[key]) == 1
        second = await client.request(method, {"cursor": first["nextCursor"]})
        with pytest.raises(JSONRPCError) as info:
            await client.request(method, {"cursor": "garbage"})
    assert len(second[key]) == 1
    assert "nextCursor" not in second or key == "resources"
    assert second[key] != first[key]
    assert info.value.code == jsonrpc.INVALID_PARAMS


async def test_updates_from_a_foreign_thread() -> None:
    server = _server()
    async with legacy(server) as client:
        await client.request("resources/subscribe", {"uri": "x://text"})
        thread = threading.Thread(target=server.notify_resource_updated, args=("x://text",))
        thread.start()
        await anyio.to_thread.run_sync(thread.join)
        assert await client.wait_for("notifications/resources/updated") == [{"uri": "x://text"}]


async def test_change_notifications_that_say_the_same_wait_once() -> None:
    """A change notification means "look again": the same one posted while it still waits is not queued
    again, so a burst of changes costs one notification (and the queue stays bounded)."""
    server = _server()
    async with legacy(server) as client:
        for _ in range(10_000):  # on the loop's thread, with no await between: all queued before any is sent
            server.notify_list_changed("tools")
            server.notify_list_changed("prompts")
        await client.wait_for("notifications/prompts/list_changed")
        await client.request("ping")
        assert len(client.notes_of("notifications/tools/list_changed")) == 1
        assert len(client.notes_of("notifications/prompts/list_changed")) == 1
        server.notify_list_changed("tools")  # sent: nothing of its kind waits any more
        await client.wait_for("notifications/tools/list_changed", count=2)
