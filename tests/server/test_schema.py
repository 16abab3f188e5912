"""Schemas and argument binding from type hints; URI templates; cursors."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypedDict

import msgspec
import pytest

from mcpframe.server import Context, Server
from mcpframe.server.registry import compile_template, paginate
from mcpframe.server.schema import ArgumentError
from mcpframe.session import JSONRPCError


class Point(msgspec.Struct):
    x: int
    y: int


@dataclasses.dataclass
class Weather:
    city: str
    celsius: float


class Row(TypedDict):
    id: int


def _tool(server: Server, name: str) -> dict[str, Any]:
    return server.registry.tools[name].wire


def test_input_schema_from_hints_with_descriptions_and_defaults() -> None:
    server = Server("t")

    @server.tool
    def search(
        query: Annotated[str, "What to look for"],
        limit: Annotated[int, msgspec.Meta(ge=1, description="At most this many")] = 10,
        tags: list[str] | None = None,
    ) -> str:
        """Search the index.

        Returns matching lines."""
        return query

    wire = _tool(server, "search")
    assert wire["description"] == "Search the index.\n\nReturns matching lines."
    schema = wire["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"] == {"type": "string", "description": "What to look for"}
    assert schema["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "description": "At most this many",
        "default": 10,
    }
    assert "title" not in schema


def test_context_parameter_is_not_an_argument() -> None:
    server = Server("t")

    @server.tool()
    async def work(n: int, ctx: Context) -> int:
        """Work."""
        return n

    tool = server.registry.tools["work"]
    assert tool.signature.context_param == "ctx"
    assert list(tool.wire["inputSchema"]["properties"]) == ["n"]


def test_no_arguments_gives_an_empty_object_schema() -> None:
    server = Server("t")

    @server.tool(name="custom", title="Custom", description="Given.")
    def anything() -> None:
        pass

    assert _tool(server, "custom") == {
        "name": "custom",
        "title": "Custom",
        "description": "Given.",
        "inputSchema": {"type": "object", "properties": {}},
    }


def test_nested_types_land_in_defs() -> None:
    server = Server("t")

    @server.tool
    def move(to: Point) -> None:
        """Move."""

    schema = _tool(server, "move")["inputSchema"]
    assert schema["properties"]["to"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"]["Point"]["required"] == ["x", "y"]


def test_binding_validates_and_converts() -> None:
    server = Server("t")

    @server.tool
    def move(to: Point, speed: float = 1.0) -> None:
        """Move."""

    sig = server.registry.tools["move"].signature
    bound = sig.bind({"to": {"x": 1, "y": 2}, "speed": 3})
    assert bound == {"to": Point(1, 2), "speed": 3.0}
    with pytest.raises(ArgumentError, match=r"Expected `int`, got `str` - at `\$.to.x`"):
        sig.bind({"to": {"x": "1", "y": 2}})
    with pytest.raises(ArgumentError, match="missing required field `to`"):
        sig.bind(None)
    with pytest.raises(ArgumentError, match="must be an object"):
        sig.bind([1])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("annotation", "wrapped"),
    [(Point, False), (Weather, False), (Row, False), (dict[str, int], False), (list[int], None), (int, None)],
)
def test_output_schema_for_structured_returns(annotation: Any, wrapped: bool | None) -> None:
    server = Server("t")

    def fn() -> Any:
        """F."""

    fn.__annotations__["return"] = annotation
    server.tool(fn)
    tool = server.registry.tools["fn"]
    if wrapped is None:
        assert tool.output_schema is None
        server.tool(output_schema=True)(fn)
        tool = server.registry.tools["fn"]
        assert tool.wrap_result is True
        assert tool.output_schema is not None
        assert tool.output_schema["required"] == ["result"]
    else:
        assert tool.wrap_result is False
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
        assert tool.wire["outputSchema"] == tool.output_schema


def test_verbatim_schemas_survive() -> None:
    server = Server("t")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
    }

    @server.tool(input_schema=schema, output_schema=False)
    def raw(**_: Any) -> dict[str, Any]:
        """Raw."""
        return {}

    assert _tool(server, "raw")["inputSchema"] is schema
    assert "outputSchema" not in _tool(server, "raw")


def test_var_kwargs_without_a_given_schema_are_refused() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):

        @server.tool
        def bad(*args: int) -> None:
            """Bad."""


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
        ("test://template/{id}/data", "test://template/1/2/data", None),
        ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
        ("file:///{path*}", "file:///a/b", {"path": "a/b"}),
        ("db://{table}/{row}", "db://users/7", {"table": "users", "row": "7"}),
        ("x://a.b/{n}", "x://aXb/1", None),
    ],
)
def test_uri_templates(template: str, uri: str, expected: dict[str, str] | None) -> None:
    pattern, _ = compile_template(template)
    found = pattern.fullmatch(uri)
    assert (found.groupdict() if found else None) == expected


def test_template_parameters_must_match_variables() -> None:
    server = Server("t")
    with pytest.raises(TypeError, match="must match the URI template"):

        @server.resource("x://{a}")
        def res(b: str) -> str:
            return b


def test_pagination_walks_every_item_once() -> None:
    items = list(range(7))
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        page, cursor = paginate(items, cursor, 3)
        seen.extend(page)
        pages += 1
        if cursor is None:
            break
    assert seen == items
    assert pages == 3
    assert paginate(items, None, None) == (items, None)


@pytest.mark.parametrize("cursor", ["nope", "bWNwZnJhbWU6LTE=", 5, "Zm9vOjM="])
def test_bad_cursors_are_invalid_params(cursor: Any) -> None:
    with pytest.raises(JSONRPCError) as info:
        paginate([1, 2], cursor, 1)
    assert info.value.code == -32602


class Field:
    """Stands in for pydantic's FieldInfo: anything with a string `description`."""

    def __init__(self, description: str) -> None:
        self.description = description


def test_field_like_objects_describe_parameters() -> None:
    server = Server("t")

    @server.tool
    def tagged(a: Annotated[int, Field("from a Field")], b: Annotated[int, object()] = 0) -> None:
        """T."""

    props = _tool(server, "tagged")["inputSchema"]["properties"]
    assert props["a"] == {"type": "integer", "description": "from a Field"}
    assert props["b"] == {"type": "integer", "default": 0}
