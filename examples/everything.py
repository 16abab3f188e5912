"""The conformance fixture server: every tool, resource, template, prompt and completion the official MCP
conformance suite (`@modelcontextprotocol/conformance`, its server scenarios) exercises, by the names the
suite calls (`test_*`). `scripts/conformance.sh server` runs the suite against it.

Run it with `python examples/everything.py` or `mcpframe serve examples/everything.py` (stdio), or
`mcpframe serve examples/everything.py --http` (Streamable HTTP, as the conformance suite uses it).
"""

from __future__ import annotations

import io
import struct
import wave
import zlib
from typing import Annotated, Any

import anyio

from mcpframe.server import (
    Context,
    Server,
    ToolResult,
    audio,
    embedded_resource,
    image,
    text,
    user,
)

__all__ = ["server"]

server = Server(
    "mcpframe-everything",
    version="1.0.0",
    instructions="Conformance fixtures: tools, resources, prompts and completions named test_*.",
)


def _png_1x1() -> bytes:
    """A valid 1x1 RGBA PNG, built here so the fixture carries no opaque blobs."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00\xff")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav() -> bytes:
    """A tiny valid WAV file: 10 ms of silence, 8 kHz mono 16-bit."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG = _png_1x1()
WAV = _wav()

# ------------------------------------------------------------------------------------------- tools


@server.tool
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> Any:
    """Returns a 1x1 PNG image."""
    return image(PNG, "image/png")


@server.tool
def test_audio_content() -> Any:
    """Returns a short WAV audio clip."""
    return audio(WAV, "audio/wav")


@server.tool
def test_embedded_resource() -> Any:
    """Returns an embedded text resource."""
    return embedded_resource(
        "test://embedded-resource", text="This is an embedded resource content.", mime_type="text/plain"
    )


@server.tool
def test_multiple_content_types() -> Any:
    """Returns text, an image and an embedded resource together."""
    return [
        text("Multiple content types test:"),
        image(PNG, "image/png"),
        embedded_resource(
            "test://mixed-content-resource", text='{"test":"data","value":123}', mime_type="application/json"
        ),
    ]


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log messages while it runs."""
    for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(step)
        await anyio.sleep(0.05)
    return "Logging test completed"


@server.tool
def test_error_handling() -> ToolResult:
    """Always fails, as a tool error result."""
    return ToolResult([text("This tool intentionally returns an error for testing")], is_error=True)


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for done in (0, 50, 100):
        await ctx.report_progress(done, 100, f"{done}% done")
        await anyio.sleep(0.05)
    return "Progress test completed"


@server.tool
async def test_sampling(
    prompt: Annotated[str, "The prompt to send to the client's model"], ctx: Context
) -> str:
    """Asks the client's model to complete a prompt (sampling/createMessage)."""
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    result = await ctx.sample([message], max_tokens=100)
    content = result.get("content")
    answer = content.get("text", "") if isinstance(content, dict) else str(content)
    return f"LLM response: {answer}"


@server.tool
async def test_elicitation(message: Annotated[str, "The message shown to the user"], ctx: Context) -> str:
    """Asks the user for a username and an email (elicitation/create)."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "Your username"},
            "email": {"type": "string", "description": "Your email address"},
        },
        "required": ["username", "email"],
    }
    result = await ctx.elicit(message, schema)
    return f"User response: action={result.get('action')}, content={result.get('content')}"


@server.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields all carry defaults (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    result = await ctx.elicit("Please review your profile", schema)
    return f"Elicitation completed: action={result.get('action')}, content={result.get('content')}"


def _titled(prefix: str) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{n}", "title": f"{prefix.title()} {n}"} for n in (1, 2, 3)]


@server.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits every enum style of SEP-1330."""
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": _titled("value")},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "items": {"anyOf": _titled("value")},
                "minItems": 1,
                "maxItems": 3,
            },
        },
    }
    result = await ctx.elicit("Pick your options", schema)
    return f"Elicitation completed: action={result.get('action')}, content={result.get('content')}"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


@server.tool(input_schema=JSON_SCHEMA_2020_12, description="Tool with JSON Schema 2020-12 features")
def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None) -> str:
    return f"name={name}, address={address}"


@server.tool
async def test_reconnection() -> str:
    """Runs briefly so an HTTP transport can close and resume its stream (SEP-1699)."""
    await anyio.sleep(0.1)
    return "Reconnection test completed"


# --------------------------------------------------------------------------------------- resources


@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a 1x1 PNG)."""
    return PNG


@server.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> dict[str, Any]:
    """Data for one ID, from a URI template."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content."


# ----------------------------------------------------------------------------------------- prompts


@server.prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt
def test_prompt_with_arguments(
    arg1: Annotated[str, "First test argument"], arg2: Annotated[str, "Second test argument"]
) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, "URI of the resource to embed"],
) -> list[Any]:
    """A prompt that embeds a resource."""
    return [
        user(
            embedded_resource(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            )
        ),
        user("Please process the embedded resource above."),
    ]


@server.prompt
def test_prompt_with_image() -> list[Any]:
    """A prompt that includes an image."""
    return [user(image(PNG, "image/png")), user("Please analyze the image above.")]


# ------------------------------------------------------------------------------------- completions


@server.completion(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str) -> list[str]:
    return [choice for choice in ("test", "testValue1", "testing", "other") if choice.startswith(value)]


@server.completion(template="test://template/{id}/data", argument="id")
def complete_id(value: str) -> list[str]:
    return [choice for choice in ("123", "124", "200") if choice.startswith(value)]


if __name__ == "__main__":
    server.run()
