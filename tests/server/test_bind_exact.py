"""`Signature.exact`: arguments that need no conversion skip the Struct, with the same results and errors."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Optional, cast

import msgspec
import pytest

from mcpframe.server import Context, Server
from mcpframe.server.invoke import invoke
from mcpframe.server.schema import ArgumentError, Signature

pytestmark = pytest.mark.anyio


def _signature(fn: Any) -> Signature:
    server = Server("t")
    server.tool(fn)
    return server.registry.tools[fn.__name__].signature


def plain(text: str, n: int, x: float, flag: bool) -> None:
    """All four passed-through types."""


def optional(text: str | None, n: Optional[int] = None, either: int | float = 0) -> None:  # noqa: UP045
    """Unions of passed-through types, with defaults."""


def described(text: Annotated[str, "what to say"], n: Annotated[int, msgspec.Meta(description="n")]) -> None:
    """Descriptions are not constraints."""


def with_context(text: str, ctx: Context) -> None:
    """A Context is not an argument."""


def constrained(n: Annotated[int, msgspec.Meta(ge=0)]) -> None:
    """A constraint must be checked: no exact plan."""


def nested(items: list[str]) -> None:
    """A container is converted item by item: no exact plan."""


def untyped(anything: Any) -> None:
    """Any value: no exact plan (msgspec's own path)."""


@pytest.mark.parametrize(
    ("fn", "exact"),
    [
        (plain, {"text": {str}, "n": {int}, "x": {float}, "flag": {bool}}),
        (optional, {"text": {str, type(None)}, "n": {int, type(None)}, "either": {int, float}}),
        (described, {"text": {str}, "n": {int}}),
        (with_context, {"text": {str}}),
        (constrained, None),
        (nested, None),
        (untyped, None),
    ],
)
def test_which_signatures_get_an_exact_plan(fn: Any, exact: dict[str, set[type]] | None) -> None:
    plan = _signature(fn).exact
    assert (None if plan is None else {name: set(types) for name, types in plan}) == exact


def _outcome(signature: Signature, arguments: Any) -> Any:
    """What `bind` gives: each value with its exact type, or the error's message."""
    try:
        bound = signature.bind(arguments)
    except ArgumentError as exc:
        return ("error", str(exc))
    return sorted((name, type(value), value) for name, value in bound.items())


@pytest.mark.parametrize(
    ("fn", "arguments"),
    [
        (plain, {"text": "a", "n": 1, "x": 1.5, "flag": True}),  # the exact path
        (plain, {"n": 1, "text": "a", "flag": False, "x": -0.0}),  # any key order
        (plain, {"text": "a", "n": 1, "x": 2, "flag": True}),  # an int for a float: converted to 2.0
        (plain, {"text": "a", "n": True, "x": 1.5, "flag": True}),  # a bool is not an int
        (plain, {"text": "a", "n": 1.0, "x": 1.5, "flag": True}),  # a float is not an int
        (plain, {"text": 5, "n": 1, "x": 1.5, "flag": True}),  # wrong type: the path in the message
        (plain, {"text": "a", "n": 1, "x": 1.5}),  # missing
        (plain, {"text": "a", "n": 1, "x": 1.5, "flag": True, "extra": 1}),  # unknown keys are dropped
        (plain, {"text": "a", "n": 1, "x": 1.5, "other": True}),  # as many keys, one of them unknown
        (plain, None),
        (plain, [1, 2, 3, 4]),
        (optional, {"text": None, "n": None, "either": 1.5}),
        (optional, {"text": "a", "n": 3, "either": 2}),
        (optional, {"text": "a"}),  # defaults fill in
        (optional, {"text": 1, "n": "x", "either": "y"}),
        (described, {"text": "a", "n": 2}),
        (described, {"text": "a", "n": "2"}),
        (with_context, {"text": "a"}),
        (with_context, {"text": "a", "ctx": "not an argument"}),
    ],
)
def test_exact_path_answers_as_msgspec_does(fn: Any, arguments: Any) -> None:
    signature = _signature(fn)
    assert signature.exact is not None
    converting = dataclasses.replace(signature, exact=None)
    assert _outcome(signature, arguments) == _outcome(converting, arguments)


async def test_a_context_is_added_to_a_new_dict_not_to_the_arguments() -> None:
    seen: dict[str, Any] = {}

    async def greet(text: str, ctx: Context) -> str:
        """Hello."""
        seen.update(text=text, ctx=ctx)
        return text

    signature = _signature(greet)
    arguments = {"text": "hi"}
    kwargs = signature.bind(arguments)
    none = cast(Any, None)
    assert await invoke(greet, signature, kwargs, request=none, call=none, connection=none) == "hi"
    assert isinstance(seen["ctx"], Context)
    assert arguments == {"text": "hi"}  # the request's own arguments are left as they came
