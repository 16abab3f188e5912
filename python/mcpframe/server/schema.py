"""JSON Schema and argument validation from a handler's type hints, with msgspec.

A handler's parameters (all but an injected `Context`) become the fields of a msgspec Struct built once at
registration; its JSON schema is the tool's `inputSchema` and `msgspec.convert` validates the arguments of
every call against it, so the schema and the validation can never disagree. The same holds for results: a
structured return type gives the `outputSchema`, and `OutputCheck` converts each result against that type.
Types msgspec lacks (pydantic models, paths, Fields) come through the hooks of `types.py`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
import msgspec.structs

from .types import (
    SUPPORTED_TYPES,
    SchemaHooks,
    ToolDefinitionError,
    as_meta,
    decode_hook,
    field_default,
    is_field_info,
    is_model,
    output_decode_hook,
    type_name,
)

__all__ = [
    "ArgumentError",
    "OutputCheck",
    "Signature",
    "ToolDefinitionError",
    "analyze",
    "output_schema",
    "return_annotation",
    "wants_structured",
]

_EMPTY = inspect.Parameter.empty
_REF_TEMPLATE = "#/$defs/{name}"


class ArgumentError(ValueError):
    """Arguments that do not match a handler's signature; the message says which one and why."""


def _describe(annotation: Any) -> Any:
    """`Annotated[T, "text"]` (or a pydantic Field, a constraint) as `Annotated[T, msgspec.Meta(...)]`."""
    if get_origin(annotation) is not Annotated:
        return annotation
    base, *extra = get_args(annotation)
    meta = [m for m in map(as_meta, extra) if m is not None]
    return Annotated[(base, *meta)] if meta else base


def _inline(components: dict[str, Any], name: str) -> dict[str, Any]:
    """The Struct's own object schema, with the other components kept as `$defs`."""
    body = dict(components.pop(name))
    body.pop("title", None)
    if components:
        body["$defs"] = components
    return body


_PASSED_THROUGH = frozenset({str, int, float, bool, type(None)})
"""Types whose values `msgspec.convert` returns unchanged, as the same object, when the value's type is
exactly the declared one (an int for a float parameter is converted, so it is not "exactly")."""
_CONSTRAINTS = ("gt", "ge", "lt", "le", "multiple_of", "pattern", "min_length", "max_length", "tz")


def _exact_types(annotation: Any) -> frozenset[type] | None:
    """The value types that need no conversion for a parameter of this (described) annotation: `str`,
    `int | None`, `Annotated[str, Meta(description=...)]`...; None when values of it may need converting
    or checking beyond their type (constraints, containers, models, `Any`)."""
    if get_origin(annotation) is Annotated:
        annotation, *metas = get_args(annotation)
        for meta in metas:
            if not isinstance(meta, msgspec.Meta) or any(getattr(meta, c) is not None for c in _CONSTRAINTS):
                return None
    if annotation is None:
        annotation = type(None)
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    if all(isinstance(member, type) and member in _PASSED_THROUGH for member in members):
        return frozenset(members)
    return None


def _exact_plan(fields: list[tuple[Any, ...]]) -> tuple[tuple[str, frozenset[type]], ...] | None:
    """`Signature.exact` for these defstruct fields: every one's name and exact types, or None."""
    plan = []
    for field in fields:
        exact = _exact_types(field[1])
        if exact is None:
            return None
        plan.append((field[0], exact))
    return tuple(plan)


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
    exact: tuple[tuple[str, frozenset[type]], ...] | None = None
    """Each parameter with the value types msgspec would pass through unchanged, when all of them have
    such types (`str`, `int | None`...): arguments that give every parameter, each exactly of one of its
    types, are then the keyword arguments as they are, with no Struct built (the common tool call: ~1.5k
    instructions instead of ~5k). Anything else (a missing or extra key, an int for a float) goes through
    `msgspec.convert` as before, so the answers and the errors are the same. None: every call converts."""

    def bind(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate `arguments` and return the keyword arguments to call the handler with.

        That may be `arguments` itself (see `exact`): read it, do not change it.
        """
        exact = self.exact
        if exact is not None and type(arguments) is dict and len(arguments) == len(exact):
            for name, allowed in exact:
                if type(arguments.get(name, arguments)) not in allowed:  # absent: the dict, never allowed
                    break
            else:
                return arguments
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


@dataclasses.dataclass(frozen=True, slots=True)
class HookedSignature(Signature):
    """A Signature whose parameters need `types.decode_hook` (a pydantic model, a path).

    A subclass rather than a branch in `Signature.bind`, so that the common tool does not pay for it.
    """

    dec_hook: Callable[[type, Any], Any] = decode_hook

    def bind(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate `arguments` and return the keyword arguments to call the handler with."""
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, Mapping):
            raise ArgumentError("arguments must be an object")
        assert self.struct is not None  # a hook is only needed by some parameter's type
        try:
            value = msgspec.convert(arguments, self.struct, strict=self.strict, dec_hook=self.dec_hook)
        except msgspec.ValidationError as exc:
            raise ArgumentError(f"Invalid arguments: {exc}") from None
        named = msgspec.structs.asdict(value)
        if self.var_keyword:
            return {**{k: v for k, v in arguments.items() if k not in self.params}, **named}
        return named


def _is_async(fn: Callable[..., Any]) -> bool:
    """True for `async def` functions (and objects whose `__call__` is one)."""
    call = getattr(fn, "__call__", None)  # noqa: B004 - looking for an async __call__, not callability
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _hints(fn: Callable[..., Any], owner: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise ToolDefinitionError(
            f"{owner}: cannot resolve its type hints ({exc}); import that name at module level",
            owner=owner,
            parameter=None,
            annotation=None,
        ) from exc


def _schema(types: list[Any], hooks: SchemaHooks) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """msgspec's schemas of `types` and their shared components, pydantic models' included."""
    schemas, components = msgspec.json.schema_components(types, schema_hook=hooks, ref_template=_REF_TEMPLATE)
    merged = dict(components)
    for name, body in hooks.defs.items():
        if merged.setdefault(name, body) != body:
            raise TypeError(f"two different types are both named {name!r}; rename one")
    return list(schemas), merged


def _definition_error(owner: str, parameter: str | None, annotation: Any, cause: Exception) -> Exception:
    """One line naming the handler, the parameter (or the return value), the type and what works instead."""
    what = f"parameter {parameter!r}" if parameter is not None else "the return value"
    shown = type_name(annotation)
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    first = first.split(" - type `")[0]  # msgspec repeats the type in its own spelling
    if "custom types" in first or "not supported" in first:  # msgspec: "no schema for this type"
        message = f"{owner}: {what} has type {shown}, which has no JSON Schema; use {SUPPORTED_TYPES}"
    else:  # a schema msgspec refused for another reason (a constraint that does not fit the type, ...)
        message = f"{owner}: {what} has type {shown}: {first}"
    return ToolDefinitionError(message, owner=owner, parameter=parameter, annotation=annotation)


def _culprit(owner: str, fields: list[tuple[Any, ...]], cause: Exception) -> Exception:
    """Find which field's type broke the whole Struct's schema (only on this failure path)."""
    for field in fields:
        try:
            probe = msgspec.defstruct("probe", [field], kw_only=True)
            _schema([probe], SchemaHooks())
        except (TypeError, ValueError) as exc:
            return _definition_error(owner, field[0], field[1], exc)
    return ToolDefinitionError(
        f"{owner}: its parameters have no JSON Schema ({cause}); use {SUPPORTED_TYPES}",
        owner=owner,
        parameter=None,
        annotation=None,
    )


def _field(name: str, annotation: Any, default: Any) -> tuple[Any, ...]:
    """A defstruct field; a pydantic `Field(...)` default gives both the metadata and the real default."""
    if is_field_info(default):  # FastMCP's `def f(n: int = Field(3, ge=0))`
        annotation = Annotated[annotation, default]
        has_default, default = field_default(default)
    else:
        has_default = default is not _EMPTY
    field = (name, _describe(annotation))
    return (*field, default) if has_default else field


def analyze(
    fn: Callable[..., Any],
    *,
    context_type: type,
    strict: bool = True,
    var_keyword: bool = False,
    owner: str | None = None,
) -> Signature:
    """Build the argument Struct and input schema of `fn`.

    Parameters annotated with `context_type` are injected, not arguments; unannotated parameters accept
    any JSON value. `*args` is refused, and `**kwargs` too unless `var_keyword` (a schema given
    verbatim): then it receives the arguments that are not named parameters, unvalidated. A type with no
    schema raises `ToolDefinitionError` naming `owner` (say "tool 'add'"), the parameter and the type.
    """
    owner = owner or fn.__qualname__
    hints = _hints(fn, owner)
    fields: list[tuple[Any, ...]] = []
    names: list[str] = []
    context_param = None
    has_var_keyword = False
    for param in inspect.signature(fn).parameters.values():
        if param.kind is param.VAR_KEYWORD and var_keyword:
            has_var_keyword = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{owner}: *args/**kwargs cannot be described by a schema; name the parameters "
                "(or give input_schema= and take **kwargs)",
                owner=owner,
                parameter=param.name,
                annotation=hints.get(param.name, Any),
            )
        annotation = hints.get(param.name, Any)
        if annotation is context_type:
            context_param = param.name
            continue
        names.append(param.name)
        fields.append(_field(param.name, annotation, param.default))
    if not fields:
        empty = {"type": "object", "properties": {}}
        return Signature((), context_param, empty, None, strict, has_var_keyword, _is_async(fn))
    name = f"{fn.__name__}_arguments"
    hooks = SchemaHooks()
    try:
        struct = msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=False)
        _, components = _schema([struct], hooks)
    except (TypeError, ValueError) as exc:
        raise _culprit(owner, fields, exc) from exc
    schema = _inline(components, name)
    facts = (tuple(names), context_param, schema, struct, strict, has_var_keyword, _is_async(fn))
    if hooks.used:
        return HookedSignature(*facts)
    return Signature(*facts, None if has_var_keyword else _exact_plan(fields))


_STRUCTURED_ORIGINS = (dict, Mapping)


def wants_structured(annotation: Any) -> bool:
    """True when a return annotation is an object type worth publishing as `outputSchema`."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if isinstance(annotation, type):
        if issubclass(annotation, msgspec.Struct) or dataclasses.is_dataclass(annotation):
            return True
        return typing.is_typeddict(annotation) or is_model(annotation)
    return get_origin(annotation) in _STRUCTURED_ORIGINS


class OutputCheck:
    """Checks a tool's `structuredContent` against its `outputSchema` (the spec's MUST).

    Built from the return annotation, it converts the result's JSON data back into that type with msgspec,
    the same rules that made the schema. Built from a schema given verbatim, it uses `jsonschema` if that
    is installed (`jsonschema_check`). Calling it gives None when the data fits, else what is wrong.
    """

    __slots__ = ("_annotation", "_dec_hook", "_wrapped")

    def __init__(
        self, annotation: Any, *, wrapped: bool, dec_hook: Callable[[type, Any], Any] | None
    ) -> None:
        self._annotation = annotation
        self._wrapped = wrapped
        self._dec_hook = dec_hook

    def __call__(self, structured: Any) -> str | None:
        """None when `structured` (the wire form, wrapped as `{"result": v}` if so declared) fits."""
        value = structured
        if self._wrapped:
            if type(structured) is not dict or "result" not in structured:
                return 'Expected an object with a "result" member'
            value = structured["result"]
        try:
            msgspec.convert(value, self._annotation, strict=True, dec_hook=self._dec_hook)
        except msgspec.ValidationError as exc:
            return str(exc)
        return None


def jsonschema_check(schema: dict[str, Any]) -> Callable[[Any], str | None] | None:
    """A check of a verbatim `outputSchema` with the `jsonschema` package; None when it is not installed."""
    try:  # optional, and only for schemas given verbatim: not a dependency, not imported otherwise
        jsonschema: Any = importlib.import_module("jsonschema")
    except ImportError:
        return None
    validator = jsonschema.validators.validator_for(schema)(schema)

    def check(structured: Any) -> str | None:
        error = jsonschema.exceptions.best_match(validator.iter_errors(structured))
        if error is None:
            return None
        where = "".join(f"[{step!r}]" if isinstance(step, int) else f".{step}" for step in error.path)
        return f"{error.message} - at `${where}`"

    return check


def output_schema(annotation: Any, *, owner: str = "tool") -> tuple[dict[str, Any], bool, OutputCheck]:
    """The `outputSchema` for a return annotation, whether results are wrapped as `{"result": v}`, and the
    check of each result against it.

    MCP requires an object schema, so a non-object type (a list, an int) is wrapped.
    """
    hooks = SchemaHooks("serialization")
    try:
        (schema,), components = _schema([annotation], hooks)
    except (TypeError, ValueError) as exc:
        raise _definition_error(owner, None, annotation, exc) from exc
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        schema = dict(components.pop(ref.removeprefix("#/$defs/")))
        schema.pop("title", None)
    dec_hook = output_decode_hook if hooks.used else None
    if schema.get("type") == "object":
        if components:
            schema["$defs"] = dict(components)
        return schema, False, OutputCheck(annotation, wrapped=False, dec_hook=dec_hook)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if components:
        wrapped["$defs"] = dict(components)
    return wrapped, True, OutputCheck(annotation, wrapped=True, dec_hook=dec_hook)


def return_annotation(fn: Callable[..., Any], *, owner: str | None = None) -> Any:
    """The resolved return annotation of `fn`, or `inspect.Signature.empty`."""
    return _hints(fn, owner or fn.__qualname__).get("return", _EMPTY)
