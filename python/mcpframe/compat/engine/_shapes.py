"""The wire form of the commonest tool result, built directly instead of through three pydantic passes.

For a tool returning a ``str``, ``int``, ``float`` or ``bool``, the SDK's way to the wire is:
``convert_result`` (a ``TextContent`` model, the ``{"result": value}`` wrapper validated by the output model's
adapter and dumped again, a ``CallToolResult`` model), then the kernel's ``_serialize`` (the model dumped,
validated against the revision's result surface, dumped once more). That is about 16 µs of a 30 µs call,
for a result whose wire form is fixed but for two values. ``quick_result`` gives that same dict, or ``None``
where it cannot be sure:

- the value's type is exactly ``str``, ``int``, ``bool``, or ``float`` and finite (the SDK turns a
  non-finite float's structured copy into ``null``; that case keeps the SDK's path);
- the tool has no structured output, or the SDK's own ``{"result": ...}`` wrapper whose single field is
  annotated with exactly the value's type, with no constraints, alias or validators (so its validation can
  neither change nor refuse the value);
- the content text is what the SDK makes of the value: the string itself, or ``pydantic_core.to_json(value,
  fallback=str, indent=2)`` exactly as ``_convert_to_content`` calls it;
- the revision's key order is learnt from the kernel's own ``_serialize`` of two probe results (with and
  without structured content) the first time a revision is seen; a probe whose answer is not the expected
  shape turns the quick way off for that revision.

``tests/compat/test_engine_fast.py`` compares the quick dicts, key order included, with the kernel's answers
over every handshake revision and a table of edge values.
"""

from __future__ import annotations

import math
from typing import Any

import pydantic_core
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.server.runner import ServerRunner
from mcp_types import CallToolResult, TextContent

from mcpframe._unstable import mcp_sdk as unstable
from mcpframe.protocol import TOOLS_CALL

__all__ = ["quick_result"]

_PRIMITIVES = (str, int, float, bool)
_DECORATOR_KINDS = (
    "validators",
    "field_validators",
    "root_validators",
    "field_serializers",
    "model_serializers",
    "model_validators",
    "computed_fields",
)
_PROBE_TEXT = "probe-text"
_PROBE_STRUCTURED = {"result": "probe-value"}


class _Shape:
    """One revision's key order for a text-only ``tools/call`` result (learnt from the kernel).

    A 2026-07-28 result also carries ``resultType: "complete"`` and the server-info ``_meta`` stamp; the
    stamp is made fresh for every result by the kernel's own ``_stamp_server_info``.
    """

    __slots__ = ("item", "plain", "result_type", "structured")

    def __init__(
        self, plain: tuple[str, ...], structured: tuple[str, ...], item: tuple[str, ...], result_type: bool
    ) -> None:
        self.plain = plain
        self.structured = structured
        self.item = item
        self.result_type = result_type

    def build(
        self, text: str, structured: dict[str, Any] | None, kernel: ServerRunner[Any], version: str
    ) -> dict[str, Any]:
        item = dict.fromkeys(self.item)
        item["text"] = text
        item["type"] = "text"
        out: dict[str, Any] = dict.fromkeys(self.plain if structured is None else self.structured)
        out["content"] = [item]
        out["isError"] = False
        if structured is not None:
            out["structuredContent"] = structured
        if self.result_type:
            out["resultType"] = "complete"
        if "_meta" in out:
            out["_meta"] = None  # the stamp fills it in place
            unstable.stamp_server_info(kernel, version, out)
        return out


_SHAPES: dict[str, _Shape | None] = {}
_CORE_KEYS = frozenset({"content", "isError", "structuredContent"})


def _extras_fit(dumped: dict[str, Any], stamp: object) -> bool:
    """The keys beyond the core ones are what ``_Shape.build`` makes: ``resultType`` and the stamp."""
    extras = {key: value for key, value in dumped.items() if key not in _CORE_KEYS}
    expected = {key: value for key, value in (("resultType", "complete"), ("_meta", stamp)) if key in extras}
    return extras == expected


def _learn(kernel: ServerRunner[Any], version: str) -> _Shape | None:
    """The key orders the kernel's serializer gives two probe results at ``version``, if as expected."""
    content: list[Any] = [TextContent(type="text", text=_PROBE_TEXT)]
    plain = unstable.serialize(kernel, TOOLS_CALL, version, CallToolResult(content=content))
    structured = unstable.serialize(
        kernel,
        TOOLS_CALL,
        version,
        CallToolResult(content=content, structured_content=dict(_PROBE_STRUCTURED)),
    )
    stamp = unstable.stamp_server_info(kernel, version, {"_meta": None}).get("_meta")
    item = {"type": "text", "text": _PROBE_TEXT}
    core_plain = {key: value for key, value in plain.items() if key in _CORE_KEYS}
    core_structured = {key: value for key, value in structured.items() if key in _CORE_KEYS}
    if core_plain != {"content": [item], "isError": False} or not _extras_fit(plain, stamp):
        return None
    expected = {"content": [item], "isError": False, "structuredContent": _PROBE_STRUCTURED}
    if core_structured != expected or not _extras_fit(structured, stamp):
        return None
    if (plain.keys() - _CORE_KEYS) != (structured.keys() - _CORE_KEYS):
        return None
    return _Shape(tuple(plain), tuple(structured), tuple(plain["content"][0]), "resultType" in plain)


def _shape(kernel: ServerRunner[Any], version: str) -> _Shape | None:
    try:
        return _SHAPES[version]
    except KeyError:
        shape = _SHAPES[version] = _learn(kernel, version)
        return shape


_WRAPPED: dict[int, tuple[FuncMetadata, Any, bool, type | None]] = {}
_WRAPPED_LIMIT = 4096  # tools seen; past it the cache starts again (tools added and dropped at run time)


def _wrapped_type(meta: FuncMetadata) -> type | None:
    """``_wrapper_type``, kept per tool metadata while its output model and wrapping stay the same."""
    model, wrap = meta.output_model, meta.wrap_output
    cached = _WRAPPED.get(id(meta))
    if cached is not None and cached[0] is meta and cached[1] is model and cached[2] is wrap:
        return cached[3]
    if len(_WRAPPED) >= _WRAPPED_LIMIT:
        _WRAPPED.clear()
    answer = _wrapper_type(meta)
    _WRAPPED[id(meta)] = (meta, model, wrap, answer)
    return answer


def _wrapper_type(meta: FuncMetadata) -> type | None:
    """The value type of the SDK's plain ``{"result": ...}`` wrapper, or None if the output is not that."""
    model = meta.output_model
    if not meta.wrap_output or not isinstance(model, type):
        return None
    fields: dict[str, Any] = getattr(model, "__pydantic_fields__", {})
    decorators = getattr(model, "__pydantic_decorators__", None)
    field = fields.get("result")
    if len(fields) != 1 or field is None or decorators is None:
        return None
    if field.metadata or field.alias is not None or field.serialization_alias is not None:
        return None
    if any(getattr(decorators, kind, True) for kind in _DECORATOR_KINDS):
        return None
    annotation = field.annotation
    return annotation if annotation in _PRIMITIVES else None


def quick_result(
    meta: FuncMetadata, value: Any, version: str, kernel: ServerRunner[Any]
) -> dict[str, Any] | None:
    """The wire dict ``kernel`` (a ``ServerRunner``) gives ``value`` returned by a tool with ``meta``, or None
    (see the module docstring)."""
    kind = type(value)
    if kind not in _PRIMITIVES or (kind is float and not math.isfinite(value)):
        return None
    if meta.output_schema is None or meta.output_model is None:
        structured = None
    elif _wrapped_type(meta) is kind:
        structured = {"result": value}
    else:
        return None
    shape = _shape(kernel, version)
    if shape is None:
        return None
    text = value if kind is str else pydantic_core.to_json(value, fallback=str, indent=2).decode()
    return shape.build(text, structured, kernel, version)
