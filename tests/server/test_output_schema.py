"""Structured results: outputSchema from the return type, structuredContent, and the check between them.

The spec says a server MUST send structured results that conform to the tool's declared outputSchema, so a
result that does not is turned into an error result (naming the tool and the mismatch) and logged.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import pathlib
from typing import Any, TypedDict

import msgspec
import pytest
from pydantic import BaseModel

from mcpframe.server import Server, ToolResult

from ._driver import legacy

pytestmark = pytest.mark.anyio


class Forecast(BaseModel):
    city: str
    celsius: float
    when: datetime.date


@dataclasses.dataclass
class Weather:
    city: str
    celsius: float


class Row(TypedDict):
    id: int
    path: pathlib.Path


class Point(msgspec.Struct):
    x: int
    y: int


def _server() -> Server:
    server = Server("out")
    _good_tools(server)
    _bad_tools(server)
    return server


def _good_tools(server: Server) -> None:

    @server.tool
    def forecast(city: str) -> Forecast:
        """A pydantic model."""
        return Forecast(city=city, celsius=21.5, when=datetime.date(2026, 11, 24))

    @server.tool
    def weather(city: str) -> Weather:
        """A dataclass."""
        return Weather(city, 18)

    @server.tool
    def row() -> Row:
        """A TypedDict holding a path."""
        return {"id": 1, "path": pathlib.Path("/srv/data")}

    @server.tool(output_schema=True)
    def numbers() -> list[int]:
        """A list, wrapped as {"result": ...}."""
        return [1, 2]

    @server.tool
    def echo(text: str) -> str:
        """A plain tool: no output schema, nothing checked."""
        return text


def _bad_tools(server: Server) -> None:
    @server.tool
    def liar() -> Weather:
        """Returns the wrong shape."""
        return {"city": "Oslo", "celsius": "cold"}  # type: ignore[return-value]

    @server.tool
    def wrong_class() -> Weather:
        """A dataclass whose field holds the wrong type (dataclasses do not check)."""
        return Weather("Oslo", "cold")  # type: ignore[arg-type]

    @server.tool(output_schema=True)
    def wrapped_liar() -> list[int]:
        """A list with a string in it."""
        return [1, "two"]  # type: ignore[list-item]

    @server.tool
    def custom_bad() -> Point:
        """A ToolResult whose structured content misses a field."""
        return ToolResult([], structured={"x": 1})  # type: ignore[return-value]

    @server.tool
    def custom_error() -> Point:
        """An error result: not checked, whatever it carries."""
        return ToolResult([], structured={"why": "busy"}, is_error=True)  # type: ignore[return-value]

    @server.tool
    def unencodable() -> Weather:
        """Not JSON data at all."""
        return object()  # type: ignore[return-value]


async def _call(name: str, version: str = "2025-11-25") -> dict[str, Any]:
    async with legacy(_server(), version) as client:
        result: dict[str, Any] = await client.request(
            "tools/call", {"name": name, "arguments": {"city": "Oslo"}}
        )
    return result


@pytest.mark.parametrize(
    ("name", "structured"),
    [
        ("forecast", {"city": "Oslo", "celsius": 21.5, "when": "2026-11-24"}),
        ("weather", {"city": "Oslo", "celsius": 18}),
        ("row", {"id": 1, "path": "/srv/data"}),
        ("numbers", {"result": [1, 2]}),
    ],
)
async def test_structured_results(name: str, structured: dict[str, Any]) -> None:
    result = await _call(name)
    assert result["structuredContent"] == structured
    assert msgspec.json.decode(result["content"][0]["text"]) == structured
    assert "isError" not in result


async def test_output_schemas_are_listed() -> None:
    async with legacy(_server()) as client:
        tools = {t["name"]: t for t in (await client.request("tools/list"))["tools"]}
    forecast = tools["forecast"]["outputSchema"]
    assert forecast["type"] == "object"
    assert forecast["required"] == ["city", "celsius", "when"]
    assert forecast["properties"]["when"] == {"format": "date", "title": "When", "type": "string"}
    assert tools["row"]["outputSchema"]["properties"]["path"] == {"type": "string", "format": "path"}
    assert tools["numbers"]["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
    }
    assert "outputSchema" not in tools["echo"]


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("liar", "does not match its outputSchema: Expected `float`, got `str` - at `$.celsius`"),
        ("wrong_class", "does not match its outputSchema: Expected `float`, got `str` - at `$.celsius`"),
        ("wrapped_liar", "does not match its outputSchema: Expected `int`, got `str` - at `$[1]`"),
        ("custom_bad", "does not match its outputSchema: Object missing required field `y`"),
        ("unencodable", "cannot be encoded as JSON (Encoding objects of type object is unsupported)"),
    ],
)
async def test_a_result_that_breaks_its_schema_is_an_error(
    name: str, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="mcpframe.server"):
        result = await _call(name)
    message = f"Error executing tool {name}: its result {problem}"
    assert result == {"content": [{"type": "text", "text": message}], "isError": True}
    assert [record.getMessage() for record in caplog.records if record.name == "mcpframe.server"] == [message]


async def test_error_results_are_not_checked() -> None:
    result = await _call("custom_error")
    assert result == {"content": [], "structuredContent": {"why": "busy"}, "isError": True}


async def test_old_revisions_get_the_text_and_the_same_check() -> None:
    good = await _call("weather", "2025-03-26")
    bad = await _call("liar", "2025-03-26")
    assert good == {"content": [{"type": "text", "text": '{"city":"Oslo","celsius":18}'}]}
    assert bad["isError"] is True


def test_plain_tools_carry_no_check() -> None:
    tools = _server().registry.tools
    assert tools["echo"].check_output is None
    assert tools["echo"].output_schema is None


async def test_a_verbatim_output_schema_is_checked_with_jsonschema() -> None:
    pytest.importorskip("jsonschema")
    server = Server("v")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    @server.tool(output_schema=schema)
    def given(n: Any) -> ToolResult:
        """Structured content as given."""
        return ToolResult([], structured={"n": n})

    async with legacy(server) as client:
        good = await client.request("tools/call", {"name": "given", "arguments": {"n": 3}})
        bad = await client.request("tools/call", {"name": "given", "arguments": {"n": "3"}})
    assert good == {"content": [], "structuredContent": {"n": 3}}
    assert bad["isError"] is True
    assert bad["content"][0]["text"] == (
        "Error executing tool given: its result does not match its outputSchema: "
        "'3' is not of type 'integer' - at `$.n`"
    )


async def test_a_model_returned_without_a_schema_is_still_json_text() -> None:
    server = Server("m")

    @server.tool(output_schema=False)
    def plain() -> Forecast:
        """No schema wanted."""
        return Forecast(city="Oslo", celsius=1, when=datetime.date(2026, 1, 2))

    async with legacy(server) as client:
        result = await client.request("tools/call", {"name": "plain"})
    assert result == {
        "content": [{"type": "text", "text": '{"city":"Oslo","celsius":1.0,"when":"2026-01-02"}'}]
    }
