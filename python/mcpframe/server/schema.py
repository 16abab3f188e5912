"""JSON Schema and argument validation from a handler's type hints, with msgspec.

A handler's parameters (all but an injected `Context`) become the fields of a msgspec Struct built once at
registration; its JSON schema is the tool's `inputSchema` and `msgspec.convert` validates the arguments of
every call against it, so the schema and the validation can never disagree.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_args, get_origin

import msgspec
import msgspec.structs

__all__ = ["ArgumentError", "Signature", "analyze", "output_schema", "return_annotation", "wants_structured"]

_EMPTY = inspect.Parameter.empty


class ArgumentError(ValueError):
    """Arguments that do not match a handler's signature; the message says which one and why."""


def _as_meta(extra: Any) -> msgspec.Meta | None:
    """A description given as a string, a `msgspec.Meta`, or any Field-like object with `.description`."""
    if isinstance(extra, msgspec.Meta):
        return extra
    if isinstance(extra, str):
        return msgspec.Meta(description=extra)
    description = getattr(extra, "description", None)
    return msgspec.Meta(description=description) if isinstance(description, str) else None


def _describe(annotation: Any) -> Any:
    """Turn `Annotated[T, "text"]` (or a Field-like object) into `Annotated[T, msgspec.Meta(...)]`."""
    if get_origin(annotation) is not Annotated:
        return annotation
    base, *extra = get_args(annotation)
    meta = [m for m in map(_as_meta, extra) if m is not None]
    return Annotated[(base, *meta)] if meta else base


def _inline(components: dict[str, Any], name: str) -> dict[str, Any]:
    """The Struct's own object schema, with the other components kept as `$defs`."""
    body = dict(components.pop(name))
    body.pop("title", None)
    if components:
        body["$defs"] = components
    return body


@dataclasses.dataclass(frozen=True, slots=True)
class Signature:
    """What registration learned from a handler: its arguments, their schema, and where Context goes."""

    params: tuple[str, ...]
    context_param: str | None
    schema: dict[str, Any]
    struct: type[msgspec.Struct] | None
    strict: bool
    var_keyword: bool = False
    is_async: bool = False

    def bind(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate `arguments` and return the keyword arguments to call the handler with."""
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict and not isinstance(arguments, Mapping):
            raise ArgumentError("arguments must be an object")
        struct = self.struct
        if struct is None:
            return {k: v for k, v in arguments.items() if k not in self.params} if self.var_keyword else {}
        try:
            value = msgspec.convert(arguments, struct, strict=self.strict)
        except msgspec.ValidationError as exc:
            raise ArgumentError(f"Invalid arguments: {exc}") from None
        named = msgspec.structs.asdict(value)  # the Struct's fields are exactly `params`
        if self.var_keyword:
            return {**{k: v for k, v in arguments.items() if k not in self.params}, **named}
        return named


def _is_async(fn: Callable[..., Any]) -> bool:
    """True for `async def` functions (and objects whose `__call__` is one)."""
    call = getattr(fn, "__call__", None)  # noqa: B004 - looking for an async __call__, not callability
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise TypeError(f"cannot resolve the type hints of {fn.__qualname__}: {exc}") from None


def analyze(
    fn: Callable[..., Any], *, context_type: type, strict: bool = True, var_keyword: bool = False
) -> Signature:
    """Build the argument Struct and input schema of `fn`.

    Parameters annotated with `context_type` are injected, not arguments; unannotated parameters accept
    any JSON value. `*args` is refused, and `**kwargs` too unless `var_keyword` (a schema given
    verbatim): then it receives the arguments that are not named parameters, unvalidated.
    """
    hints = _hints(fn)
    fields: list[tuple[Any, ...]] = []
    names: list[str] = []
    context_param = None
    has_var_keyword = False
    for param in inspect.signature(fn).parameters.values():
        if param.kind is param.VAR_KEYWORD and var_keyword:
            has_var_keyword = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"{fn.__qualname__}: *args/**kwargs cannot be described by a schema; name the parameters "
                "(or give input_schema= and take **kwargs)"
            )
        annotation = hints.get(param.name, Any)
        if annotation is context_type:
            context_param = param.name
            continue
        names.append(param.name)
        field = (param.name, _describe(annotation))
        fields.append(field if param.default is _EMPTY else (*field, param.default))
    if not fields:
        empty = {"type": "object", "properties": {}}
        return Signature((), context_param, empty, None, strict, has_var_keyword, _is_async(fn))
    name = f"{fn.__name__}_arguments"
    struct = msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=False)
    _, components = msgspec.json.schema_components([struct], ref_template="#/$defs/{name}")
    schema = _inline(dict(components), name)
    return Signature(tuple(names), context_param, schema, struct, strict, has_var_keyword, _is_async(fn))


_STRUCTURED_ORIGINS = (dict, Mapping)


def wants_structured(annotation: Any) -> bool:
    """True when a return annotation is an object type worth publishing as `outputSchema`."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if isinstance(annotation, type):
        if issubclass(annotation, msgspec.Struct) or dataclasses.is_dataclass(annotation):
            return True
        return typing.is_typeddict(annotation)
    return get_origin(annotation) in _STRUCTURED_ORIGINS


def output_schema(annotation: Any) -> tuple[dict[str, Any], bool]:
    """The `outputSchema` for a return annotation, and whether results must be wrapped as `{"result": v}`.

    MCP requires an object schema, so a non-object type (a list, an int) is wrapped.
    """
    (schema,), components = msgspec.json.schema_components([annotation], ref_template="#/$defs/{name}")
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        schema = dict(components.pop(ref.removeprefix("#/$defs/")))
        schema.pop("title", None)
    if schema.get("type") == "object":
        if components:
            schema["$defs"] = dict(components)
        return schema, False
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if components:
        wrapped["$defs"] = dict(components)
    return wrapped, True


def return_annotation(fn: Callable[..., Any]) -> Any:
    """The resolved return annotation of `fn`, or `inspect.Signature.empty`."""
    return _hints(fn).get("return", _EMPTY)
