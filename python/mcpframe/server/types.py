"""The parameter and result types msgspec does not know by itself: pydantic models, `pathlib` paths, Fields.

msgspec builds every tool's schema and validates its arguments (`schema.py`); this module teaches it the
rest of what a FastMCP user writes, through msgspec's own hooks: a schema hook (the JSON Schema of a type), a
decode hook (arguments into that type) and an encode hook (results back to JSON data).

pydantic stays optional and costs nothing when unused: nothing here imports it. A type can only be a pydantic
model, and an annotation's extra only a `FieldInfo`, if the user's module already imported pydantic, so the
checks look in `sys.modules` instead.
"""

from __future__ import annotations

import pathlib
import sys
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

__all__ = [
    "SUPPORTED_TYPES",
    "SchemaHooks",
    "ToolDefinitionError",
    "as_meta",
    "decode_hook",
    "encode_hook",
    "field_default",
    "is_field_info",
    "is_model",
    "output_decode_hook",
    "type_name",
]

SUPPORTED_TYPES = (
    "str, int, float, bool, bytes (base64), None, list/dict/tuple/set of these, Optional/unions, Literal, "
    "Enum, datetime/date/time, UUID, Decimal, pathlib.Path, a dataclass, a TypedDict, a msgspec Struct "
    "or a pydantic model"
)
"""What a tool's parameters and return value may be (said by every `ToolDefinitionError`)."""

_CONSTRAINTS = ("gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern")
_UNDEFINED_DEFAULT = "PydanticUndefined"


class ToolDefinitionError(TypeError):
    """A tool, resource or prompt whose signature cannot be served; raised by the decorator.

    The message names the handler, the parameter (or its return value), the type, and the types that work.
    `owner`, `parameter` (None for the return value) and `annotation` say the same for programs; the
    error msgspec raised, if any, is the `__cause__`.
    """

    def __init__(self, message: str, *, owner: str, parameter: str | None, annotation: Any) -> None:
        super().__init__(message)
        self.owner = owner
        self.parameter = parameter
        self.annotation = annotation


def type_name(annotation: Any) -> str:
    """A type as its user wrote it: `IO[bytes]`, `list[Point]`, `int | None` (no module prefixes)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is not None and args:
        return _generic_name(origin, args)
    if isinstance(annotation, list):  # Callable's parameter list
        return f"[{', '.join(map(type_name, annotation))}]"
    if annotation is None or annotation is type(None):
        return "None"
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation).replace("typing.", "")


def _generic_name(origin: Any, args: tuple[Any, ...]) -> str:
    if origin is Annotated:  # its extras (a Field, a description) are not the type
        return type_name(args[0])
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in args)
    if origin is Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    return f"{type_name(origin)}[{', '.join(type_name(arg) for arg in args)}]"


def is_model(annotation: Any) -> bool:
    """True for a pydantic `BaseModel` subclass (without importing pydantic)."""
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None and isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel)
    )


def is_field_info(extra: Any) -> bool:
    """True for a pydantic `FieldInfo` (what `Field(...)` returns), without importing pydantic."""
    fields = sys.modules.get("pydantic.fields")
    return fields is not None and isinstance(extra, fields.FieldInfo)


def _is_constraint(extra: Any) -> bool:
    """An `annotated_types` constraint (`Ge(1)`, `MaxLen(5)`; pydantic's `Field(ge=...)` holds these)."""
    module = sys.modules.get("annotated_types")
    return module is not None and isinstance(extra, module.BaseMetadata)


def field_default(extra: Any) -> tuple[bool, Any]:
    """For a parameter whose default is a pydantic `Field(...)`: (has a default, that default)."""
    if extra.default_factory is not None:
        return True, extra.default_factory()
    if type(extra.default).__name__ == _UNDEFINED_DEFAULT:
        return False, None
    return True, extra.default


def _field_meta(field: Any) -> dict[str, Any]:
    """msgspec.Meta keywords for a pydantic `FieldInfo`: its description, title, examples and constraints."""
    out: dict[str, Any] = {}
    for item in field.metadata:
        out.update(_constraint_meta(item))
    for key in ("description", "title", "examples"):
        value = getattr(field, key, None)
        if value is not None:
            out[key] = value
    if isinstance(field.json_schema_extra, dict):
        out["extra_json_schema"] = dict(field.json_schema_extra)
    return out


def _constraint_meta(item: Any) -> dict[str, Any]:
    return {key: value for key in _CONSTRAINTS if (value := getattr(item, key, None)) is not None}


def as_meta(extra: Any) -> msgspec.Meta | None:
    """The `msgspec.Meta` for one `Annotated` extra, or None when it says nothing msgspec can use.

    Accepted: a `msgspec.Meta`; a string (the description, as FastMCP reads `Annotated[int, "text"]`);
    pydantic's `Field(description=..., ge=..., pattern=..., examples=...)`; an `annotated_types` constraint;
    any other object with a string `description`.
    """
    if isinstance(extra, msgspec.Meta):
        return extra
    if isinstance(extra, str):
        return msgspec.Meta(description=extra)
    if is_field_info(extra):
        return msgspec.Meta(**_field_meta(extra))
    if _is_constraint(extra):
        return msgspec.Meta(**_constraint_meta(extra))
    description = getattr(extra, "description", None)
    return msgspec.Meta(description=description) if isinstance(description, str) else None


class SchemaHooks:
    """msgspec's `schema_hook` for the types it lacks; pydantic models land in `defs` as named components.

    `used` says whether any such type was met, which is when validation needs `decode_hook` too.
    """

    def __init__(self, mode: Literal["validation", "serialization"] = "validation") -> None:
        self.mode: Literal["validation", "serialization"] = mode
        self.defs: dict[str, Any] = {}
        self.used = False

    def __call__(self, annotation: Any) -> dict[str, Any]:
        if isinstance(annotation, type) and issubclass(annotation, pathlib.PurePath):
            self.used = True
            return {"type": "string", "format": "path"}
        if is_model(annotation):
            self.used = True
            return self._model(annotation)
        raise NotImplementedError  # msgspec's signal for "no schema": it raises its own TypeError

    def _model(self, model: Any) -> dict[str, Any]:
        schema = dict(model.model_json_schema(ref_template="#/$defs/{model}", mode=self.mode))
        self.defs.update(schema.pop("$defs", {}))
        self.defs[model.__name__] = schema
        return {"$ref": f"#/$defs/{model.__name__}"}


def _pydantic_message(exc: Any) -> str:
    """pydantic's several-line report as one line: `Input should be ... (field 'n'); ...`."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(step) for step in error.get("loc", ()))
        parts.append(f"{error['msg']} (field `{where}`)" if where else str(error["msg"]))
    return "; ".join(parts)


def _decode(annotation: Any, value: Any, *, strict: bool | None) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, pathlib.PurePath):
        if isinstance(value, str):
            return annotation(value)
        raise TypeError(f"Expected `str`, got `{type(value).__name__}`")
    if is_model(annotation):
        pydantic = sys.modules["pydantic"]
        try:
            return annotation.model_validate(value, strict=strict)
        except pydantic.ValidationError as exc:
            # a ValueError from a hook becomes msgspec's ValidationError, which adds where (`- at $.arg`)
            raise ValueError(_pydantic_message(exc)) from None
    raise NotImplementedError(f"mcpframe cannot convert to {type_name(annotation)}")


def decode_hook(annotation: Any, value: Any) -> Any:
    """msgspec's `dec_hook` for arguments: a path from a string; a pydantic model by its own rules."""
    return _decode(annotation, value, strict=None)


def output_decode_hook(annotation: Any, value: Any) -> Any:
    """`decode_hook` for checking results: a model's JSON form is read leniently (a strict model's datetime
    fields are strings by then)."""
    return _decode(annotation, value, strict=False)


def encode_hook(value: Any) -> Any:
    """msgspec's `enc_hook` for results: a pydantic model as its JSON-mode dump, a path as its text."""
    if isinstance(value, pathlib.PurePath):
        return str(value)
    if is_model(type(value)):
        return value.model_dump(mode="json")
    raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")  # msgspec's own words
