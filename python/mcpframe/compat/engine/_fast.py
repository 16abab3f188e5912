"""A short way through the SDK kernel for the plainest ``tools/call``, taken only where it cannot differ.

``ServerRunner.on_request`` spends most of a small tool call on machinery that, for the common case, does
nothing: the params' ``_meta`` lift, a per-request ``ServerSession``/context, the middleware chain (whose
only member by default, ``RequestStateBoundary``, passes a call without ``requestState`` straight through
and leaves every result but ``input_required`` alone), and a second surface validation of params the
handler's own model validates anyway; a 2026-07-28 request also builds and closes an SDK connection and
kernel of its own. This module calls the SDK's pieces in the same order without that machinery, and only
when all of these hold (checked on every request, so run-time changes are honoured):

- handshake era (``eligible``): the connection has been initialized, and the params are exactly ``name``
  (a string) and optionally ``arguments`` (an object): no ``_meta``, no ``requestState``, nothing the
  surface validation could refuse;
- 2026-07-28 (``modern_eligible``): the same params plus a ``_meta`` holding nothing but the envelope
  (protocol version, client info, client capabilities: a tool without a context never reads them), and
  the tool exists;
- the ``tools/call`` handler is the ``MCPServer``'s own ``_handle_call_tool`` (no override, no extension
  interceptor) and the server's middleware, OpenTelemetry aside while it is a no-op, is nothing but
  ``RequestStateBoundary``;
- ``tools/call`` has no cache hint;
- the tool exists without a ``Context`` parameter or ``Resolve(...)`` parameters (those need the request
  context; they take the full path), or (handshake era) does not exist at all (the SDK's unknown-tool
  result needs none).

Then it is the SDK's own code end to end: ``Tool.run`` (argument validation, the call), result conversion
with ``Tool.run``'s failure mapping, ``MCPServer._handle_call_tool``'s is-error shaping and logging, and
the runner's own result shaping (for a primitive result, its exact wire dict: ``_shapes``); an
``input_required`` result still goes through the boundary's sealing, with the request's own kernel.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver import server as sdk_server
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)
from mcp.server.mcpserver.tools import Tool as SDKTool
from mcp.server.request_state import RequestStateBoundary
from mcp.server.runner import ServerRunner
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    CallToolRequestParams,
    CallToolResult,
    TextContent,
)
from mcp_types.methods import is_input_required
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcpframe._unstable import mcp_sdk as unstable
from mcpframe.protocol import TOOLS_CALL

from ._shapes import quick_result

__all__ = ["eligible", "modern_eligible", "plain_tool_call", "seal", "short_tool_call"]

_PLAIN_KEYS = (frozenset({"name"}), frozenset({"name", "arguments"}))
_ENVELOPE_KEYS = frozenset({PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY})


def _plain_params(params: dict[str, Any]) -> bool:
    """``{"name": str}`` or ``{"name": str, "arguments": dict}`` and nothing else."""
    keys = params.keys()
    if keys != _PLAIN_KEYS[0] and keys != _PLAIN_KEYS[1]:
        return False
    return isinstance(params["name"], str) and isinstance(params.get("arguments", {}), dict)


def _plain_server(app: MCPServer, kernel: Any) -> bool:
    """The SDK's own handler, no cache hint, and nothing in the chain the kernel would run (``_Kernel``
    leaves OpenTelemetry's out while it records nothing) but the request-state boundary."""
    lowlevel = unstable.lowlevel_server(app)
    if lowlevel is None:
        return False
    entry = lowlevel.get_request_handler(TOOLS_CALL)
    if not unstable.is_sdk_call_tool(app, getattr(entry, "handler", None)):
        return False
    if TOOLS_CALL in lowlevel.cache_hints:
        return False
    return all(isinstance(middleware, RequestStateBoundary) for middleware in kernel.middleware)


def _plain_tool(app: MCPServer, name: str) -> bool:
    """A tool the SDK runs without touching the request context (or no such tool)."""
    tool = unstable.tool(app, name)
    return tool is None or (tool.context_kwarg is None and not tool.resolved_params)


def eligible(runner: ServerRunner[Any], app: Any, params: dict[str, Any] | None) -> bool:
    """Whether this ``tools/call`` may take the short way (see the module docstring)."""
    if (
        not unstable.SHORT_WAY
        or params is None
        or not isinstance(app, MCPServer)
        or not _plain_params(params)
    ):
        return False
    connection = runner.connection
    if connection.protocol_version in MODERN_PROTOCOL_VERSIONS or not connection.initialize_accepted:
        return False
    return _plain_server(app, runner.server) and _plain_tool(app, params["name"])


def modern_eligible(kernel: Any, app: Any, params: dict[str, Any] | None) -> bool:
    """Whether a 2026-07-28 ``tools/call`` may take the short way: plain params whose ``_meta`` is nothing but
    the envelope (version, client info and capabilities, which a context-free tool never reads), an existing
    context-free tool, and a server as plain as ``eligible`` asks."""
    if not unstable.SHORT_WAY or params is None or not isinstance(app, MCPServer):
        return False
    meta = params.get("_meta")
    if not isinstance(meta, dict) or not meta.keys() <= _ENVELOPE_KEYS:
        return False
    plain = {key: value for key, value in params.items() if key != "_meta"}
    if not _plain_params(plain) or unstable.tool(app, plain["name"]) is None:
        return False
    return _plain_server(app, kernel) and _plain_tool(app, plain["name"])


def _log_failure(name: str, exc: Exception) -> None:
    """What ``MCPServer._handle_call_tool`` logs for a failed call, on its own logger."""
    if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
        if isinstance(exc.__cause__, ValidationError):
            fields = sorted({".".join(str(part) for part in err["loc"]) for err in exc.__cause__.errors()})
            sdk_server.logger.info("Tool %r rejected arguments: %r", name, fields)
        else:
            sdk_server.logger.info("Tool %r failed: %r", name, str(exc))
    else:
        sdk_server.logger.exception("Tool %r raised an unexpected exception", name)


def _convert(tool: SDKTool, value: Any) -> Any:
    """``convert_result`` with the failure mapping ``Tool.run`` puts around it."""
    try:
        return tool.fn_metadata.convert_result(value)
    except MCPError:
        raise
    except (UnexpectedToolError, UnexpectedResourceError) as exc:
        raise UnexpectedToolError(f"Error executing tool {tool.name}: {exc}") from exc
    except (ToolError, ResourceError) as exc:
        raise ToolError(f"Error executing tool {tool.name}: {exc}") from exc
    except Exception as exc:
        raise UnexpectedToolError(f"Error executing tool {tool.name}") from exc


async def _run_tool(tool: SDKTool, arguments: dict[str, Any], version: str, kernel: ServerRunner[Any]) -> Any:
    """``MCPServer._handle_call_tool`` for a tool that takes no context: the SDK's ``Tool.run``, then its
    result conversion (or, for a primitive result, its wire dict straight away: ``_shapes``), a protocol
    error passed on, any other failure an is-error result carrying its text."""
    try:
        value = await tool.run(arguments, cast("Any", None), convert_result=False)
        quick = quick_result(tool.fn_metadata, value, version, kernel)
        return _convert(tool, value) if quick is None else quick
    except MCPError:
        raise
    except Exception as exc:
        _log_failure(tool.name, exc)
        return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)


Sealer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def seal(runner: ServerRunner[Any], dctx: Any, params: dict[str, Any], version: str, dumped: Any) -> Any:
    """An ``input_required`` result sealed by the chain's request-state boundaries, inner-first."""
    server = runner.server
    ctx = unstable.make_context(runner, dctx, TOOLS_CALL, params, version)
    sealed: Any = dumped
    for middleware in reversed(server.middleware):
        if isinstance(middleware, RequestStateBoundary):
            sealed = unstable.seal_result(middleware, ctx, sealed)
    return unstable.dump_result(sealed)


async def short_tool_call(
    runner: ServerRunner[Any], app: MCPServer, version: str, params: dict[str, Any], sealer: Sealer
) -> Any:
    """The SDK's ``tools/call`` for an eligible request at ``version``: ``runner`` shapes the result,
    ``sealer`` seals an ``input_required`` one.

    For a ``modern_eligible`` 2026-07-28 request ``runner`` is a kernel shared by the server's modern
    requests (shaping depends on the server and the revision, not on the client) and ``sealer`` builds the
    request's own kernel; ``plain_tool_call`` passes the connection's.
    """
    tool = unstable.tool(app, params["name"])
    if tool is not None:  # the params are plain: the handler's model would take them as they are
        result = await _run_tool(tool, params.get("arguments") or {}, version, runner)
        if type(result) is dict:  # already the wire form
            return result
    else:  # the SDK's own unknown-tool answer (it needs no context either)
        handler = runner.server.get_request_handler(TOOLS_CALL)
        assert handler is not None  # _plain_server saw it
        typed = cast("CallToolRequestParams", handler.params_type.model_validate(params, by_name=False))
        result = await unstable.call_tool(app, typed)
    dumped = unstable.serialize(runner, TOOLS_CALL, version, result)
    return await sealer(dumped) if is_input_required(dumped) else dumped


async def plain_tool_call(
    runner: ServerRunner[Any], app: MCPServer, channel: Callable[[], Any], params: dict[str, Any]
) -> Any:
    """The SDK's ``tools/call`` for an ``eligible`` handshake-era request, as its kernel would answer it."""
    version = runner.connection.protocol_version

    async def sealer(dumped: dict[str, Any]) -> Any:
        return seal(runner, channel(), params, version, dumped)

    return await short_tool_call(runner, app, version, params, sealer)
