"""SDK servers for the engine drop-in tests and benchmarks: ``python engine_apps.py MODE [fastmcp]``.

``sdk`` serves with the SDK's own engine (``app.run()``), ``dropin`` the same after
``mcpframe.compat.install()`` (mcpframe's stdio transport under the SDK's engine), ``engine`` with
``mcpframe.compat.serve(app)``, ``mcpframe`` the benchmark's tools written for mcpframe's own Server;
a third argument ``fastmcp`` serves the FastMCP app instead of the ``MCPServer`` one. The same code,
unchanged, is what both engines run.
"""

import base64
import os
import sys
import warnings
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    Completion,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field

import mcpframe.compat

warnings.simplefilter("ignore", MCPDeprecationWarning)

app = MCPServer("engine-test", instructions="Test server for the engine drop-in.", version="1.2.3")


class Point(BaseModel):
    """A structured result."""

    x: int
    y: int = Field(description="the other one")


class Answer(BaseModel):
    """What ``ask`` elicits."""

    name: str


@app.tool()
def echo(text: str) -> str:
    """Return ``text``."""
    return text


@app.tool(structured_output=False)
def blob(size: int) -> str:
    """A string of ``size`` ASCII characters."""
    return "x" * size


@app.tool()
def length(text: str) -> int:
    """The length of ``text`` (large requests, small answers)."""
    return len(text)


@app.tool()
def point(x: int, y: int = 2) -> Point:
    """A structured result with an output schema."""
    return Point(x=x, y=y)


@app.tool()
async def add(a: float, b: float) -> float:
    """An async tool with a wrapped primitive result."""
    return a + b


@app.tool()
def fail(message: str) -> str:
    """Always raises."""
    raise ValueError(message)


@app.tool()
async def chatty(steps: int, ctx: Context) -> str:
    """Progress and log notifications before the answer."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        await ctx.info(f"step {step + 1} of {steps}")
    return f"done {steps}"


@app.tool()
async def reader(uri: str, ctx: Context) -> str:
    """Read another resource through the Context."""
    contents = list(await ctx.read_resource(uri))
    return str(contents[0].content)


@app.tool()
async def ask(ctx: Context) -> str:
    """Elicit a name from the user (handshake era only)."""
    result = await ctx.elicit("Your name?", Answer)
    return f"{result.action}:{getattr(getattr(result, 'data', None), 'name', '')}"


@app.tool()
async def sample(prompt: str, ctx: Context) -> str:
    """Ask the client's model (handshake era only)."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    result = await ctx.session.create_message([message], max_tokens=10)
    content = result.content
    return content.text if isinstance(content, TextContent) else "?"


@app.tool(structured_output=False)
async def confirm(ctx: Context) -> Any:
    """2026-07-28 multi round-trip: ask the client (input_required), answer on the retry."""
    answers = ctx.input_responses
    if not answers:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        ask = ElicitRequest(params=ElicitRequestFormParams(message="Proceed?", requested_schema=schema))
        return InputRequiredResult(input_requests={"ok": ask}, request_state="asked-once")
    answer = answers["ok"]
    return f"state={ctx.request_state} action={answer.action} content={answer.content}"


@app.resource("res://static", mime_type="text/plain")
def static() -> str:
    """A fixed resource."""
    return "static content"


@app.resource("res://binary")
def binary() -> bytes:
    """A blob resource."""
    return bytes(range(8))


@app.resource("res://items/{name}")
def item(name: str) -> str:
    """A templated resource."""
    return f"item {name}"


@app.prompt()
def greet(name: str, style: str = "plain") -> str:
    """A prompt with a required and an optional argument."""
    return f"Hello, {name}! ({style})"


@app.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference, argument: object, context: object
) -> Completion | None:
    """Complete any argument from a fixed list."""
    return Completion(values=["alpha", "alpine"], total=2, has_more=False)


def fast_app() -> Any:
    """The FastMCP app (built on demand: importing FastMCP is slow; no postponed annotations here, so
    the tools' annotations resolve against these local imports)."""
    from fastmcp import Context as FastContext  # noqa: PLC0415
    from fastmcp import FastMCP  # noqa: PLC0415

    fast = FastMCP("engine-fastmcp", instructions="FastMCP app for the engine drop-in.")

    @fast.tool
    def fast_echo(text: str) -> str:
        """Return ``text``."""
        return text

    @fast.tool(output_schema=None)
    def fast_blob(size: int) -> str:
        """A string of ``size`` ASCII characters."""
        return "x" * size

    @fast.tool
    async def fast_chatty(steps: int, ctx: FastContext) -> str:
        """Progress and a log message."""
        for step in range(steps):
            await ctx.report_progress(step + 1, steps)
        await ctx.info("chatty done")
        return f"done {steps}"

    @fast.resource("res://fast")
    def fast_static() -> str:
        """A fixed resource."""
        return "fast content"

    @fast.resource("res://fast/{name}")
    def fast_item(name: str) -> str:
        """A templated resource."""
        return f"fast {name}"

    @fast.prompt
    def fast_greet(name: str) -> str:
        """A prompt."""
        return f"Hi {name}"

    return fast


BINARY_B64 = base64.b64encode(bytes(range(8))).decode()


def native_app() -> Any:
    """The benchmark's two tools written for mcpframe's own ``Server`` (the floor the engine runs on)."""
    from mcpframe.server import Server  # noqa: PLC0415

    native = Server("engine-test-native")

    @native.tool
    def echo(text: str) -> str:
        """Return ``text``."""
        return text

    @native.tool
    async def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    return native


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "sdk"
    if mode == "mcpframe":
        native_app().run()
        return
    which = fast_app() if sys.argv[2:] == ["fastmcp"] else app
    if mode in ("sdk", "dropin"):
        if mode == "dropin":  # the transport-level drop-in under the SDK's own engine
            mcpframe.compat.install()
        which.run("stdio", **({"show_banner": False} if which is not app else {}))
        return
    limit = os.environ.get("MCPFRAME_ENGINE_MAX_FRAME")
    mcpframe.compat.serve(which, **({"max_frame": int(limit)} if limit else {}))


if __name__ == "__main__":
    main()
