"""The MCP methods of a server: tools, resources, prompts, completion, logging.

Every handler has the shape `(connection, request, call, params) -> result dict`; the connection has
already decided the era, checked the capability and turned absent params into `{}`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

from mcpframe import jsonrpc, protocol
from mcpframe._threads import call_sync
from mcpframe.session import JSONRPCError, Request

from .content import ToolResult, to_builtins, to_content, to_json_text, to_messages
from .content import blob_contents as _blob
from .content import text_contents as _text
from .context import CallInfo, InputRequired
from .eras import LOG_LEVELS, at_least
from .invoke import PLAIN_RESULTS, invoke, log_tool_failure
from .registry import Tool, paginate
from .schema import ArgumentError
from .tasks_methods import route

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = ["HANDLERS", "Handler", "run_tool"]

Handler = Callable[["ServerConnection", Request, CallInfo, dict[str, Any]], Awaitable[dict[str, Any]]]

# Listing fields newer than some revisions: (field, first revision that knows it).
_NEW_FIELDS = (
    ("title", protocol.V2025_06_18),
    ("outputSchema", protocol.V2025_06_18),
    ("icons", protocol.V2025_11_25),
    ("execution", protocol.V2025_11_25),
)


def invalid(message: str) -> JSONRPCError:
    """A -32602 error with a message that says what to fix."""
    return JSONRPCError(jsonrpc.INVALID_PARAMS, f"Invalid params: {message}")


def _for_version(wire: dict[str, Any], call: CallInfo) -> dict[str, Any]:
    """A listing entry as `call`'s revision knows it (no fields it has never heard of)."""
    if call.modern or at_least(call.version, protocol.V2025_11_25):
        return wire
    unknown = {key for key, since in _NEW_FIELDS if not at_least(call.version, since)}
    return {key: value for key, value in wire.items() if key not in unknown}


def _page(
    conn: ServerConnection, key: str, items: list[dict[str, Any]], params: dict[str, Any]
) -> dict[str, Any]:
    page, next_cursor = paginate(items, params.get("cursor"), conn.server.page_size)
    result: dict[str, Any] = {key: list(page)}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def tools_list(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    tools = [_for_version(tool.wire, call) for tool in list(conn.server.registry.tools.values())]
    return _page(conn, "tools", tools, params)


def _parts(tool: Tool, value: Any) -> tuple[list[dict[str, Any]], Any, bool, Any]:
    """A tool's return value as (content, structuredContent, isError, _meta); TypeError or ValueError for
    what JSON cannot carry."""
    if isinstance(value, ToolResult):
        return to_content(value.content), value.structured, value.is_error, value.meta
    if tool.output_schema is not None:
        structured = to_builtins(value)
        if tool.wrap_result:
            structured = {"result": structured}
        return [_text_block(to_json_text(structured))], structured, False, None
    return to_content(value), None, False, None


def _tool_result(conn: ServerConnection, tool: Tool, value: Any, call: CallInfo) -> dict[str, Any]:
    try:
        content, structured, is_error, meta = _parts(tool, value)
    except (TypeError, ValueError) as exc:  # not JSON data at all (or an int past Python's 4300 digits)
        if inspect.iscoroutine(value):
            return _mismatch(conn, tool, _never_awaited(value))
        return _mismatch(conn, tool, f"cannot be encoded as JSON ({exc})")
    if tool.check_output is not None and not is_error:
        problem = tool.check_output(structured)
        if problem is not None:
            return _mismatch(conn, tool, f"does not match its outputSchema: {problem}")
    result: dict[str, Any] = {"content": content}
    if structured is not None and (call.modern or at_least(call.version, protocol.V2025_06_18)):
        result["structuredContent"] = structured
    if is_error:
        result["isError"] = True
    if meta:
        result["_meta"] = meta
    return result


def _never_awaited(coroutine: Any) -> str:
    """What to say of a coroutine returned by a tool: almost always an `await` forgotten in its body."""
    name = getattr(coroutine, "__qualname__", "?")
    coroutine.close()  # said here, with the fix: Python's own "never awaited" warning would repeat it
    return f"is the coroutine {name}(), never awaited: a missing `await` in the tool?"


def _mismatch(conn: ServerConnection, tool: Tool, problem: str) -> dict[str, Any]:
    """A result that breaks the tool's declared outputSchema: the spec forbids sending it, so say why."""
    message = f"Error executing tool {tool.name}: its result {problem}"
    conn.server.logger.error("%s", message)
    return _error_result(message)


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


_SUGGEST_AMONG = 256
"""Past this many tools (or prompts), no suggestion: a client sending wrong names must not make the server
index thousands."""

_SUGGEST_LONGEST = 64
"""Names longer than this are neither suggested nor matched (the index stays small: ~65 entries a name)."""

_near_index: dict[int, tuple[frozenset[str], dict[str, str]]] = {}
"""Per collection of names (by `id`, checked against its names): each name's forms one letter short."""


def _fold(name: str) -> str:
    """`name` as a typo is compared: case and `-`/`_` ignored."""
    return name.lower().replace("-", "_")


def _one_short(word: str) -> list[str]:
    return [word[:i] + word[i + 1 :] for i in range(len(word))]


def _closest(name: str, known: Collection[str]) -> str | None:
    """A known name one typo from `name` (a letter added, missed or changed, case, `-` for `_`), else
    `None`. Each known name and its forms one letter short are indexed once per set of names, so a
    wrong name costs one lookup per letter of it, however many names there are (a client sending wrong
    names cannot make the server compare them one by one)."""
    names = frozenset(known)
    cached = _near_index.get(id(known))
    if cached is None or cached[0] != names:
        index: dict[str, str] = {}
        kept = [known_name for known_name in names if len(known_name) <= _SUGGEST_LONGEST]
        kept.sort(reverse=True)  # assigned last to first: the first in sort order wins a tie
        for known_name in kept:
            for short in _one_short(_fold(known_name)):
                index[short] = known_name
        for known_name in kept:  # then each name's own form, over any other name's form one letter short
            index[_fold(known_name)] = known_name
        if len(_near_index) >= 16:
            _near_index.clear()
        _near_index[id(known)] = cached = (names, index)
    index = cached[1]
    folded = _fold(name)
    found = index.get(folded)  # the same folded, changed in one letter, or one letter missed
    if found is None:
        found = next((index[short] for short in _one_short(folded) if short in index), None)
    return found


_LIST_FIRST = 20
"""How many of the known names an unknown name's error lists (in registration order); the rest counted."""


def _unknown(kind: str, name: object, known: Collection[str]) -> JSONRPCError:
    """`unknown tool 'ad'; did you mean 'add'?`: a typo's likely fix (the error path only pays for it).

    The error's `data` names what exists, for a caller with no close match to go on: `{"available": [the
    first 20 names], "more": how many others}`. In `data`, not the message: a message listing 20 names
    would bury the one-line reason, and a client shows or logs `data` as it chooses."""
    if not isinstance(name, str):  # a misspelt or missing key, not an unknown name: say so, not `None`
        error = invalid(name_not_string(kind, name))
    else:
        close = None
        if len(name) <= _SUGGEST_LONGEST + 1 and len(known) <= _SUGGEST_AMONG:
            close = _closest(name, known)
        hint = f"; did you mean {close!r}?" if close is not None else ""
        error = invalid(f"unknown {kind} {name!r}{hint}")
    error.data = {"available": list(islice(known, _LIST_FIRST)), "more": max(0, len(known) - _LIST_FIRST)}
    return error


_JSON_KINDS: Final = {
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    dict: "an object",
}


def name_not_string(kind: str, name: object) -> str:
    """`missing "name" (the tool's name, a string)`: for a request whose `name` is absent, null or no string
    (`unknown tool None` would read as a tool called None)."""
    if name is None:
        return f'missing "name" (the {kind}\'s name, a string)'
    return f'"name" must be a string (the {kind}\'s name), not {_JSON_KINDS.get(type(name), "that")}'


def _error_result(message: str) -> dict[str, Any]:
    return {"content": [_text_block(message)], "isError": True}


def tools_call(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> Awaitable[dict[str, Any]]:
    """The coroutine that answers this call: `run_tool`'s, or a task's start (`server/tasks.py`).

    A plain function, not `async def` (what it refuses, it raises at once): the connection awaits the
    returned coroutine itself, one coroutine frame fewer on every tool call.
    """
    name = params.get("name")
    tool = conn.server.registry.tools.get(name) if isinstance(name, str) else None
    if tool is None:
        raise _unknown("tool", name, conn.server.registry.tools)
    if (tool.task_support != "forbidden" or "task" in params) and route(conn, call, tool, params):
        return conn.server.tasks.start(conn, request, call, tool, params, run=run_tool)
    return run_tool(conn, request, call, tool, params)


async def run_tool(
    conn: ServerConnection, request: Request, call: CallInfo, tool: Tool, params: dict[str, Any]
) -> dict[str, Any]:
    """Call `tool` with ``params.arguments``: its CallToolResult (a task runs this in the background)."""
    signature = tool.signature
    try:
        kwargs = signature.bind(params.get("arguments"))
    except ArgumentError as exc:
        # 2025-11-25 made input validation a tool execution error the model can see and correct.
        if call.modern or at_least(call.version, protocol.V2025_11_25):
            return _error_result(str(exc))
        raise invalid(str(exc)) from None
    try:
        if signature.context_param is not None:
            value = await invoke(tool.fn, signature, kwargs, request=request, call=call, connection=conn)
        elif signature.is_async:  # no Context, no thread: call it here
            value = await tool.fn(**kwargs)
        else:  # invoke's own way, with no frame of it in between: a worker thread
            value = await call_sync(tool.fn, (), kwargs)
            if type(value) not in PLAIN_RESULTS and inspect.isawaitable(value):
                value = await value
    except (JSONRPCError, InputRequired):
        raise
    except Exception as exc:  # a failing tool is a result the model can read, not a protocol error
        log_tool_failure(conn.server.logger, tool.name, exc)
        return _error_result(f"Error executing tool {tool.name}: {exc}")
    if type(value) is str and tool.output_schema is None:  # the common case, built here
        return {"content": [{"type": "text", "text": value}]}
    return _tool_result(conn, tool, value, call)


async def resources_list(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    items = [_for_version(res.wire, call) for res in list(conn.server.registry.resources.values())]
    return _page(conn, "resources", items, params)


async def templates_list(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    items = [_for_version(tpl.wire, call) for tpl in list(conn.server.registry.templates.values())]
    return _page(conn, "resourceTemplates", items, params)


def _not_found(uri: Any, call: CallInfo) -> JSONRPCError:
    # 2026-07-28 retired -32002 in favour of -32602; older revisions keep it.
    code = jsonrpc.INVALID_PARAMS if call.modern else jsonrpc.RESOURCE_NOT_FOUND
    return JSONRPCError(code, f"Resource not found: {uri}", {"uri": uri})


def _contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    items = value if isinstance(value, list | tuple) else [value]
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, dict) and "uri" in item:
            out.append(item)
        elif isinstance(item, bytes | bytearray):
            out.append(_blob(uri, bytes(item), mime_type or "application/octet-stream"))
        elif isinstance(item, str):
            out.append(_text(uri, item, mime_type or "text/plain"))
        else:
            out.append(_text(uri, to_json_text(item), mime_type or "application/json"))
    return out


async def resources_read(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    uri = params.get("uri")
    found = conn.server.registry.find_resource(uri) if isinstance(uri, str) else None
    if found is None:
        raise _not_found(uri, call)
    entry, variables = found
    try:
        kwargs = entry.signature.bind(variables)
    except ArgumentError as exc:
        raise invalid(str(exc)) from None
    value = await invoke(entry.fn, entry.signature, kwargs, request=request, call=call, connection=conn)
    return {"contents": _contents(str(uri), value, entry.mime_type)}


def _known_resource(conn: ServerConnection, params: dict[str, Any], call: CallInfo) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise invalid('"uri" must be a string')
    if conn.server.registry.find_resource(uri) is None:
        raise _not_found(uri, call)
    return uri


async def subscribe(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    conn.subscriptions.add(_known_resource(conn, params, call))
    return {}


async def unsubscribe(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise invalid('"uri" must be a string')
    conn.subscriptions.discard(uri)
    return {}


async def prompts_list(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    items = [_for_version(prompt.wire, call) for prompt in list(conn.server.registry.prompts.values())]
    return _page(conn, "prompts", items, params)


async def prompts_get(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    name = params.get("name")
    prompt = conn.server.registry.prompts.get(name) if isinstance(name, str) else None
    if prompt is None:
        raise _unknown("prompt", name, conn.server.registry.prompts)
    arguments = params.get("arguments") or {}
    missing = sorted(prompt.required - set(arguments) if isinstance(arguments, dict) else prompt.required)
    if missing:
        raise invalid(f"prompt {name!r} needs the argument(s) {', '.join(missing)}")
    try:
        kwargs = prompt.signature.bind(arguments)
    except ArgumentError as exc:
        raise invalid(str(exc)) from None
    value = await invoke(prompt.fn, prompt.signature, kwargs, request=request, call=call, connection=conn)
    result: dict[str, Any] = {"messages": to_messages(value)}
    if "description" in prompt.wire:
        result["description"] = prompt.wire["description"]
    return result


def _completion_key(conn: ServerConnection, params: dict[str, Any]) -> tuple[str, str, str]:
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise invalid('completion/complete needs "ref" and "argument" objects')
    kind, registry = ref.get("type"), conn.server.registry
    target = ref.get("name") if kind == protocol.REF_PROMPT else ref.get("uri")
    known: dict[str, Any] = {}
    if kind == protocol.REF_PROMPT:
        known = registry.prompts
    elif kind == protocol.REF_RESOURCE:
        known = registry.templates
    if not isinstance(target, str) or target not in known:
        raise invalid(f"unknown completion reference {ref!r}")
    return str(kind), target, str(argument.get("name"))


async def complete(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    key = _completion_key(conn, params)
    completer = conn.server.registry.completers.get(key)
    values: list[str] = []
    if completer is not None:
        value = str(params["argument"].get("value", ""))
        context = params.get("context") or {}
        found = completer(value, context.get("arguments") or {})
        found = await found if inspect.isawaitable(found) else found
        values = [str(item) for item in found]
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


async def set_level(
    conn: ServerConnection, request: Request, call: CallInfo, params: dict[str, Any]
) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise invalid(f'"level" must be one of {", ".join(LOG_LEVELS)}')
    conn.log_level = LOG_LEVELS[level]
    return {}


HANDLERS: dict[str, Handler] = {
    protocol.TOOLS_LIST: tools_list,
    protocol.TOOLS_CALL: tools_call,
    protocol.RESOURCES_LIST: resources_list,
    protocol.RESOURCES_TEMPLATES_LIST: templates_list,
    protocol.RESOURCES_READ: resources_read,
    protocol.RESOURCES_SUBSCRIBE: subscribe,
    protocol.RESOURCES_UNSUBSCRIBE: unsubscribe,
    protocol.PROMPTS_LIST: prompts_list,
    protocol.PROMPTS_GET: prompts_get,
    protocol.COMPLETION_COMPLETE: complete,
    protocol.LOGGING_SET_LEVEL: set_level,
}
