"""How a client is put together: typed helpers over any requester, typed options, openers, the HTTP entry."""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpframe import protocol
from mcpframe.client import Client, ClientOptions, ClientSettings, Era, Methods
from mcpframe.server import Server
from mcpframe.session import ProgressCallback, SessionOptions
from mcpframe.transports import Transport, memory_pair

pytestmark = pytest.mark.anyio


def make_server() -> Server:
    server = Server("demo", version="1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return server


class Recorder:
    """A `Requester` that answers from a table and records what it was asked."""

    def __init__(self, era: Era | None, pages: dict[str | None, dict[str, Any]] | None = None) -> None:
        self._era: Era | None = era
        self.pages = pages or {}
        self.calls: list[tuple[str, str, Any, dict[str, Any]]] = []

    @property
    def era(self) -> Era | None:
        return self._era

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> Any:
        self.calls.append(("request", method, params, {"timeout": timeout, "on_progress": on_progress}))
        return self.pages.get((params or {}).get("cursor"), {})

    async def interactive(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | None = None,
    ) -> dict[str, Any]:
        self.calls.append(("interactive", method, params, {"timeout": timeout, "on_progress": on_progress}))
        return {"content": [], "contents": [{"uri": params.get("uri")}]}

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.calls.append(("notify", method, params, {}))


async def test_methods_send_through_any_requester() -> None:
    """The typed helpers hold no connection: they turn calls into requests on the requester they get."""
    recorder = Recorder("legacy")
    methods = Methods(recorder)

    def progress(value: float, total: float | None, message: str | None) -> None:
        return None

    await methods.call_tool("add", {"a": 1}, on_progress=progress, timeout=3)
    assert await methods.read_resource("x://r") == [{"uri": "x://r"}]
    await methods.ping()
    await methods.notify_roots_changed()
    assert recorder.calls == [
        (
            "interactive",
            "tools/call",
            {"name": "add", "arguments": {"a": 1}},
            {"timeout": 3, "on_progress": progress},
        ),
        ("interactive", "resources/read", {"uri": "x://r"}, {"timeout": None, "on_progress": None}),
        ("request", "ping", None, {"timeout": None, "on_progress": None}),
        ("notify", "notifications/roots/list_changed", None, {}),
    ]


async def test_list_follows_cursors_over_a_requester() -> None:
    pages: dict[str | None, dict[str, Any]] = {
        None: {"tools": [{"name": "a"}], "nextCursor": "2"},
        "2": {"tools": [{"name": "b"}], "nextCursor": "2"},  # a repeated cursor ends the walk
    }
    recorder = Recorder("legacy", pages)
    assert [tool["name"] for tool in await Methods(recorder).list_tools()] == ["a", "b"]
    assert [call[2] for call in recorder.calls] == [None, {"cursor": "2"}]


async def test_era_decides_ping_and_subscribe() -> None:
    modern = Recorder("modern")
    await Methods(modern).ping()
    assert modern.calls[0][1] == protocol.SERVER_DISCOVER
    with pytest.raises(RuntimeError, match=r"client\.listen"):
        await Methods(modern).subscribe("x://r")
    assert len(modern.calls) == 1  # refused before anything was sent


def test_settings_are_the_fields_of_the_options() -> None:
    """`ClientSettings` (the keywords) and `ClientOptions` (what the client keeps) list the same fields."""
    hints = typing.get_type_hints(ClientSettings)
    fields = {field.name: field for field in dataclasses.fields(ClientOptions)}
    assert hints.keys() == fields.keys()
    option_hints = typing.get_type_hints(ClientOptions)
    assert {name: option_hints[name] for name in fields} == hints


def test_client_keeps_its_keywords_as_frozen_options() -> None:
    session_options = SessionOptions(max_in_flight=7)
    client = Client(make_server(), timeout=5, mode="legacy", session_options=session_options)
    assert client.options == ClientOptions(timeout=5, mode="legacy", session_options=session_options)
    assert client.timeout == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        client.options.timeout = 1  # type: ignore[misc]


def test_wrong_keywords_fail_where_they_are_written() -> None:
    with pytest.raises(TypeError, match="timout"):
        Client(make_server(), timout=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="timout"):
        Client.stdio("python", timout=5)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="mode must be"):
        Client(make_server(), mode="newest")  # type: ignore[arg-type]


def test_exactly_one_place_to_find_the_server() -> None:
    client_end, _ = memory_pair()
    with pytest.raises(TypeError, match="exactly one of"):
        Client()
    with pytest.raises(TypeError, match="exactly one of"):
        Client(make_server(), transport=client_end)


async def test_an_opener_is_entered_for_the_connection_and_left_after() -> None:
    server = make_server()
    events: list[str] = []

    @asynccontextmanager
    async def opener() -> AsyncIterator[Transport]:
        client_end, server_end = memory_pair()
        events.append("opened")
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.serve(server_end, session_options=SessionOptions(max_in_flight=3)))
            yield client_end
        events.append("closed")

    with anyio.fail_after(10):
        async with Client(opener=opener, session_options=SessionOptions(max_in_flight=5)) as client:
            assert events == ["opened"]
            assert client.session.max_in_flight == 5
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result["content"] == [{"type": "text", "text": "5"}]
    assert events == ["opened", "closed"]
    with pytest.raises(RuntimeError, match="not connected"):
        _ = client.session


async def test_connect_names_the_extra_when_httpx_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpframe.http import connect  # noqa: PLC0415 (the test owns the import state)

    monkeypatch.setitem(sys.modules, "httpx", None)  # what `import httpx` meets without the extra
    monkeypatch.delitem(sys.modules, "mcpframe.http.client", raising=False)
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)  # activated: the hint says plain `pip`
    with pytest.raises(ModuleNotFoundError, match=r"try: pip install '[a-z]+>=[0-9.]+' .*'httpx>=") as caught:
        connect("http://127.0.0.1:9/mcp")
    assert caught.value.name == "httpx"


async def test_connect_builds_a_client_without_connecting() -> None:
    pytest.importorskip("httpx")
    from mcpframe.http import connect  # noqa: PLC0415

    client = connect("http://127.0.0.1:9/mcp", mode="legacy", timeout=2)
    assert isinstance(client, Client)
    assert client.options == ClientOptions(mode="legacy", timeout=2)
    assert client.era is None
