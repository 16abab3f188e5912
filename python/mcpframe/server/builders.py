"""Turn decorated functions into registry entries (schemas and wire descriptions built once)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .context import Context
from .registry import Prompt, Resource, ResourceTemplate, Tool, compile_template, describe
from .schema import analyze, jsonschema_check, output_schema, return_annotation, wants_structured

__all__ = ["make_prompt", "make_resource", "make_tool"]


def _doc(fn: Callable[..., Any], description: str | None) -> str | None:
    if description is not None:
        return description
    doc = inspect.getdoc(fn)
    return doc or None


_Output = tuple[dict[str, Any] | None, bool, Callable[[Any], str | None] | None]


def _output(fn: Callable[..., Any], spec: dict[str, Any] | bool | None, owner: str) -> _Output:
    """The output schema, whether results are wrapped as `{"result": v}`, and the check of each result."""
    if isinstance(spec, dict):
        return spec, False, jsonschema_check(spec)
    if spec is False:
        return None, False, None
    annotation = return_annotation(fn, owner=owner)
    if annotation is inspect.Signature.empty or annotation is None:
        if spec is True:
            raise TypeError(f"{fn.__qualname__}: output_schema=True needs a return annotation")
        return None, False, None
    if spec is True or wants_structured(annotation):
        return output_schema(annotation, owner=owner)
    return None, False, None


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | bool | None = None,
    annotations: dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Tool:
    """A Tool for `fn`: input schema from its hints (or verbatim), output schema for structured returns."""
    owner = f"tool {name or fn.__name__!r}"
    signature = analyze(fn, context_type=Context, var_keyword=input_schema is not None, owner=owner)
    schema_out, wrap, check = _output(fn, output_schema, owner)
    wire = describe(
        name=name or fn.__name__,
        title=title,
        description=_doc(fn, description),
        inputSchema=input_schema if input_schema is not None else signature.schema,
        outputSchema=schema_out,
        annotations=annotations,
        icons=icons,
        _meta=meta,
    )
    return Tool(wire["name"], fn, signature, wire, schema_out, wrap, check)


def make_resource(
    fn: Callable[..., Any],
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    annotations: dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    size: int | None = None,
) -> Resource | ResourceTemplate:
    """A Resource for a fixed URI, or a ResourceTemplate when `uri` has `{variables}`."""
    pattern, variables = compile_template(uri)
    signature = analyze(fn, context_type=Context, strict=False, owner=f"resource {uri!r}")
    common = {
        "name": name or fn.__name__,
        "title": title,
        "description": _doc(fn, description),
        "mimeType": mime_type,
        "annotations": annotations,
        "icons": icons,
    }
    if not variables:
        if signature.params:
            raise TypeError(f"{fn.__qualname__}: a resource without URI variables takes no arguments")
        return Resource(uri, fn, signature, describe(uri=uri, size=size, **common), mime_type)
    if set(variables) != set(signature.params):
        raise TypeError(
            f"{fn.__qualname__}: the parameters {sorted(signature.params)} must match the URI template's "
            f"variables {sorted(variables)}"
        )
    return ResourceTemplate(uri, pattern, fn, signature, describe(uriTemplate=uri, **common), mime_type)


def make_prompt(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    icons: list[dict[str, Any]] | None = None,
) -> Prompt:
    """A Prompt for `fn`; its parameters are the prompt's (string) arguments."""
    signature = analyze(fn, context_type=Context, strict=False, owner=f"prompt {name or fn.__name__!r}")
    properties = signature.schema.get("properties", {})
    required = set(signature.schema.get("required", ()))
    arguments = [
        describe(
            name=param, description=properties.get(param, {}).get("description"), required=param in required
        )
        for param in signature.params
    ]
    wire = describe(
        name=name or fn.__name__, title=title, description=_doc(fn, description), arguments=arguments
    )
    return Prompt(wire["name"], fn, signature, wire, frozenset(required))
