"""``Server.suspends`` follows the registry: a tool registered, replaced (``def`` by ``async def`` and back,
a ``def`` made a task tool) or removed changes what it says about a call of that name at once, by every way
a tool is registered (``@server.tool``, ``@server.tool(name=...)``, ``registry.add_tool``). The rule is
data (``SuspendRule``) over ``registry.threaded_tools``, which ``add_tool`` and ``remove`` keep; a subclass's
own ``suspends`` is kept.
"""

from __future__ import annotations

from typing import Any

import orjson

from mcpframe import core
from mcpframe.server import Server
from mcpframe.server.builders import make_tool
from mcpframe.session import Request, Session, SuspendRule
from mcpframe.transports.memory import memory_pair


def _call(name: str) -> Request:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}}
    (decoded,) = core.Decoder().feed(orjson.dumps(body) + b"\n")
    return Request(Session(memory_pair()[0]), decoded)


def _says(server: Server, name: str) -> bool:
    rule = server.suspends
    assert rule is not None
    said = rule(_call(name))
    tool = server.registry.tools.get(name)  # what it should say, from the tool itself
    assert said is (tool is not None and not tool.signature.is_async and tool.task_support == "forbidden")
    return said


def test_the_rule_is_data_over_the_registry() -> None:
    server = Server("rule")
    assert isinstance(server.suspends, SuspendRule)
    assert server.suspends.names is server.registry.threaded_tools


def test_registering_replacing_and_removing_a_tool_changes_what_it_says() -> None:
    server = Server("rule")
    assert _says(server, "t") is False

    @server.tool(name="t")
    def plain() -> str:
        return "def"

    assert _says(server, "t") is True

    @server.tool(name="t")
    async def coro() -> str:
        return "async def"

    assert _says(server, "t") is False

    @server.tool(name="t")
    def plain_again() -> str:
        return "def"

    assert _says(server, "t") is True
    assert server.remove_tool("t") is True
    assert _says(server, "t") is False
    assert server.remove_tool("t") is False
    assert _says(server, "t") is False


def test_a_def_tool_that_runs_as_a_task_is_not_said_to_suspend() -> None:
    server = Server("rule")

    @server.tool(name="t")
    def plain() -> str:
        return "def"

    assert _says(server, "t") is True

    @server.tool(name="t", task_support="optional")
    def tasked() -> str:
        return "def, as a task"

    assert _says(server, "t") is False


def test_a_tool_added_to_the_registry_directly_counts_too() -> None:
    server = Server("rule")

    def plain(text: str) -> str:
        return text

    async def coro(text: str) -> Any:
        return text

    server.registry.add_tool(make_tool(plain, name="direct"))
    assert _says(server, "direct") is True
    server.registry.add_tool(make_tool(coro, name="direct"))
    assert _says(server, "direct") is False
    server.registry.add_tool(make_tool(plain, name="direct"))
    assert server.registry.remove("tools", "direct") is True
    assert _says(server, "direct") is False
    assert _says(server, "plain") is False  # named as registered, not as the function is


def test_a_subclass_s_own_suspends_is_kept() -> None:
    asked: list[Any] = []

    class Mine(Server):
        def suspends(self, request: Request) -> bool:
            asked.append(request.id)
            return True

    server = Mine("rule")
    assert "suspends" not in vars(server)
    hook = server.suspends
    assert hook is not None
    assert hook(_call("anything")) is True
    assert asked == [1]

    class Never(Server):
        suspends = None

    assert Never("rule").suspends is None
