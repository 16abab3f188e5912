"""The MCP server: decorators to register tools, resources and prompts, and both protocol eras.

```python
from mcpframe.server import Server, Context

server = Server("demo", version="1.0.0")

@server.tool
async def add(a: int, b: int, ctx: Context) -> int:
    "Add two numbers."
    await ctx.info("adding")
    return a + b

server.run()   # stdio
```
"""

from __future__ import annotations

# The revision lists live in mcpframe.protocol; re-exported here because README and callers use them.
from mcpframe.protocol import LATEST_LEGACY, LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS

from .app import Server
from .connection import ServerConnection
from .content import (
    Content,
    PromptMessage,
    ToolResult,
    assistant,
    audio,
    blob_contents,
    embedded_resource,
    image,
    resource_link,
    text,
    text_contents,
    user,
)
from .context import Context
from .lifecycle import LifespanError
from .tasks import TaskManager, TaskSupport
from .tasks_store import MemoryTaskStore, TaskRecord, TaskStore
from .types import ToolDefinitionError

__all__ = [
    "LATEST_LEGACY",
    "LEGACY_VERSIONS",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
    "Content",
    "Context",
    "LifespanError",
    "MemoryTaskStore",
    "PromptMessage",
    "Server",
    "ServerConnection",
    "TaskManager",
    "TaskRecord",
    "TaskStore",
    "TaskSupport",
    "ToolDefinitionError",
    "ToolResult",
    "assistant",
    "audio",
    "blob_contents",
    "embedded_resource",
    "image",
    "resource_link",
    "text",
    "text_contents",
    "user",
]
