"""The parameter types a FastMCP user writes: schema in tools/list, conversion on tools/call, clear refusals.

Every type goes end to end through a real server on a memory pair: its schema is listed, good arguments reach
the tool as the declared type, and bad ones give the same errors as any invalid argument (a tool error from
2025-11-25, a -32602 before it).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import pathlib
import subprocess
import sys
import uuid
from typing import IO, Annotated, Any, Literal, Optional, TypedDict

import pytest
from pydantic import BaseModel, Field

from mcpframe import jsonrpc
from mcpframe.server import Server, ToolDefinitionError
from mcpframe.session import JSONRPCError

from ._driver import legacy

pytestmark = pytest.mark.anyio


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    name: str
    count: int = Field(1, ge=0, description="How many")


@dataclasses.dataclass
class Size:
    width: int
    height: int


class Tag(TypedDict):
    key: str
    value: str


STAMP = "2026-11-24T16:30:00+00:00"
ID = "12345678-1234-5678-1234-567812345678"

# (annotation, schema of the property, a good argument, what the tool receives, a bad argument)
CASES: list[tuple[str, Any, dict[str, Any], Any, Any, Any]] = [
    ("model", Item, {"$ref": "#/$defs/Item"}, {"name": "a"}, Item(name="a"), {"name": "a", "count": -1}),
    ("dataclass", Size, {"$ref": "#/$defs/Size"}, {"width": 1, "height": 2}, Size(1, 2), {"width": 1}),
    ("typeddict", Tag, {"$ref": "#/$defs/Tag"}, {"key": "k", "value": "v"}, {"key": "k", "value": "v"}, {}),
    ("enum", Color, {"$ref": "#/$defs/Color"}, "red", Color.RED, "green"),
    ("literal", Literal["fast", "slow"], {"enum": ["fast", "slow"]}, "slow", "slow", "medium"),
    ("path", pathlib.Path, {"type": "string", "format": "path"}, "/tmp/x", pathlib.Path("/tmp/x"), 3),
    (
        "datetime",
        datetime.datetime,
        {"type": "string"},
        STAMP,
        datetime.datetime(2026, 11, 24, 16, 30, tzinfo=datetime.UTC),
        "yesterday",
    ),
    (
        "date",
        datetime.date,
        {"type": "string", "format": "date"},
        "2026-11-24",
        datetime.date(2026, 11, 24),
        "x",
    ),
    ("time", datetime.time, {"type": "string"}, "16:30:00", datetime.time(16, 30), "noon"),
    ("uuid", uuid.UUID, {"type": "string", "format": "uuid"}, ID, uuid.UUID(ID), "not-a-uuid"),
    ("optional", Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None, None, "1"),  # noqa: UP045
    (
        "models",
        list[Item],
        {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        [{"name": "a"}, {"name": "b", "count": 2}],
        [Item(name="a"), Item(name="b", count=2)],
        [{"count": 2}],
    ),
    (
        "paths",
        dict[str, pathlib.Path],
        {"type": "object", "additionalProperties": {"type": "string", "format": "path"}},
        {"home": "/home"},
        {"home": pathlib.Path("/home")},
        {"home": 1},
    ),
    (
        "colors",
        list[Color],
        {"type": "array", "items": {"$ref": "#/$defs/Color"}},
        ["blue"],
        [Color.BLUE],
        ["x"],
    ),
]


def _server_for(name: str, annotation: Any, seen: list[Any]) -> Server:
    server = Server("types")

    def tool(value: Any) -> str:
        seen.append(value)
        return "ok"

    tool.__annotations__ = {"value": annotation, "return": str}
    tool.__name__ = name
    server.tool(tool)
    return server


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
async def test_each_type_end_to_end(case: tuple[str, Any, dict[str, Any], Any, Any, Any]) -> None:
    name, annotation, schema, good, received, bad = case
    seen: list[Any] = []
    server = _server_for(name, annotation, seen)
    async with legacy(server) as client:
        (listed,) = (await client.request("tools/list"))["tools"]
        ok = await client.request("tools/call", {"name": name, "arguments": {"value": good}})
        refused = await client.request("tools/call", {"name": name, "arguments": {"value": bad}})
    assert listed["inputSchema"]["properties"]["value"] == schema
    assert ok == {"content": [{"type": "text", "text": "ok"}]}
    assert seen == [received]
    assert type(seen[0]) is type(received)
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith("Invalid arguments: ")
    assert "$.value" in refused["content"][0]["text"]


async def test_bad_arguments_before_2025_11_25_are_protocol_errors() -> None:
    server = _server_for("model", Item, [])
    async with legacy(server, "2025-06-18") as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/call", {"name": "model", "arguments": {"value": {"name": 1}}})
    assert info.value.code == jsonrpc.INVALID_PARAMS
    # pydantic's report in one line, placed by msgspec's path
    assert info.value.message == (
        "Invalid params: Invalid arguments: Input should be a valid string (field `name`) - at `$.value`"
    )


def _tool_schema(server: Server, name: str) -> dict[str, Any]:
    schema: dict[str, Any] = server.registry.tools[name].wire["inputSchema"]
    return schema


class Order(BaseModel):
    items: list[Item]
    size: Size


class Opaque:
    """A class msgspec has no schema for."""


def test_pydantic_models_bring_their_own_definitions() -> None:
    server = Server("t")

    @server.tool
    def order(o: Order, also: Item | None = None) -> str:
        """Order."""
        return "ok"

    schema = _tool_schema(server, "order")
    assert schema["properties"]["o"] == {"$ref": "#/$defs/Order"}
    assert set(schema["$defs"]) == {"Order", "Item", "Size"}
    assert schema["$defs"]["Item"]["properties"]["count"]["minimum"] == 0
    assert schema["$defs"]["Order"]["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}


async def test_field_descriptions_and_constraints_reach_the_schema_and_are_enforced() -> None:
    server = Server("t")

    @server.tool
    def search(
        query: Annotated[str, Field(description="What to look for", min_length=2, pattern="^[a-z]+$")],
        limit: Annotated[int, Field(description="At most this many", ge=1, le=50)] = 10,
        note: Annotated[str, "Free text"] = "",
        lang: str = Field("en", description="Two letters", max_length=2),
    ) -> str:
        """Search."""
        return f"{query}:{limit}:{lang}"

    props = _tool_schema(server, "search")["properties"]
    assert props["query"] == {
        "type": "string",
        "description": "What to look for",
        "minLength": 2,
        "pattern": "^[a-z]+$",
    }
    assert props["limit"] == {
        "type": "integer",
        "description": "At most this many",
        "minimum": 1,
        "maximum": 50,
        "default": 10,
    }
    assert props["note"] == {"type": "string", "description": "Free text", "default": ""}
    assert props["lang"] == {"type": "string", "description": "Two letters", "maxLength": 2, "default": "en"}
    assert _tool_schema(server, "search")["required"] == ["query"]
    async with legacy(server) as client:
        good = await client.request("tools/call", {"name": "search", "arguments": {"query": "abc"}})
        calls = [
            {"query": "a"},
            {"query": "ABC"},
            {"query": "abc", "limit": 51},
            {"query": "abc", "lang": "eng"},
        ]
        bad = [await client.request("tools/call", {"name": "search", "arguments": a}) for a in calls]
    assert good["content"][0]["text"] == "abc:10:en"
    messages = [result["content"][0]["text"] for result in bad]
    assert all(result["isError"] for result in bad)
    assert messages == [
        "Invalid arguments: Expected `str` of length >= 2 - at `$.query`",
        "Invalid arguments: Expected `str` matching regex '^[a-z]+$' - at `$.query`",
        "Invalid arguments: Expected `int` <= 50 - at `$.limit`",
        "Invalid arguments: Expected `str` of length <= 2 - at `$.lang`",
    ]


def test_a_field_default_factory_is_the_default() -> None:
    server = Server("t")

    @server.tool
    def tagged(tags: list[str] = Field(default_factory=list, description="Tags")) -> str:  # noqa: B008
        """T."""
        return ",".join(tags)

    sig = server.registry.tools["tagged"].signature
    assert sig.bind({}) == {"tags": []}
    assert _tool_schema(server, "tagged")["properties"]["tags"]["description"] == "Tags"


def test_an_unsupported_type_is_one_clear_error_at_decoration() -> None:
    server = Server("t")
    with pytest.raises(ToolDefinitionError) as info:

        @server.tool
        def upload(name: str, f: IO[bytes]) -> str:
            """Upload."""
            return name

    error = info.value
    assert isinstance(error, TypeError)
    message = str(error)
    assert "\n" not in message
    assert message.startswith(
        "tool 'upload': parameter 'f' has type IO[bytes], which has no JSON Schema; "
        "use str, int, float, bool, bytes (base64)"
    )
    assert message.endswith("a msgspec Struct or a pydantic model")
    assert (error.owner, error.parameter, error.annotation) == ("tool 'upload'", "f", IO[bytes])
    assert isinstance(error.__cause__, TypeError)
    assert "upload" not in server.registry.tools


def test_the_error_names_a_renamed_tool_and_a_nested_type() -> None:
    server = Server("t")
    with pytest.raises(
        ToolDefinitionError, match=r"^tool 'fetch': parameter 'items' has type list\[Opaque\], which"
    ):

        @server.tool(name="fetch")
        def get(items: list[Opaque]) -> None:
            """Get."""


def test_a_constraint_that_does_not_fit_its_type_is_named() -> None:
    server = Server("t")
    with pytest.raises(ToolDefinitionError) as info:

        @server.tool
        def count(n: Annotated[int, Field(min_length=2)]) -> None:
            """Count."""

    assert str(info.value).startswith(
        "tool 'count': parameter 'n' has type int: "
        "Can only set `min_length` on a str, bytes, or collection type"
    )


def test_an_unsupported_return_type_is_named_too() -> None:
    server = Server("t")
    with pytest.raises(ToolDefinitionError) as info:

        @server.tool(output_schema=True)
        def make() -> Opaque:
            """Make."""
            return Opaque()

    assert str(info.value).startswith("tool 'make': the return value has type ")
    assert info.value.parameter is None


def test_prompts_and_resources_say_what_they_are() -> None:
    server = Server("t")
    with pytest.raises(ToolDefinitionError, match=r"^prompt 'greet': parameter 'who' has type IO\[str\]"):

        @server.prompt
        def greet(who: IO[str]) -> str:
            return "hi"

    with pytest.raises(ToolDefinitionError, match=r"^resource 'x://\{who\}': parameter 'who' has type IO"):

        @server.resource("x://{who}")
        def read(who: IO[str]) -> str:
            return "hi"


def test_unresolvable_hints_name_the_tool() -> None:
    server = Server("t")

    def late(x: Missing) -> None:  # type: ignore[name-defined]  # noqa: F821
        """Late."""

    with pytest.raises(ToolDefinitionError, match=r"^tool 'late': cannot resolve its type hints"):
        server.tool(late)


def test_pydantic_is_not_imported_by_plain_tools() -> None:
    code = (
        "import sys\n"
        "from mcpframe.server import Server\n"
        "s = Server('t')\n"
        "@s.tool\n"
        "def echo(text: str, n: int = 1) -> dict[str, int]:\n"
        "    return {}\n"
        "print('pydantic' in sys.modules, type(s.registry.tools['echo'].signature).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "Signature"]
