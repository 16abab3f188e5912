"""The switch that turns the pure-Python backend's library fast paths off.

Decoding tries one ``msgspec.json`` decode per frame and encoding one ``orjson.dumps`` per value or
envelope; whatever those refuse goes to the reference paths (``parse.parse_reference``, the stand-in
scan of ``digits``, ``encode._encode_reference``), which are the contract's definition written in plain
Python. With the fast paths off, every frame and every value takes the reference path: much slower,
and the results must not change (``tests/core/test_contract_reference.py`` checks exactly that).

Off when ``MCPFRAME_PYCORE_REFERENCE=1`` is set before ``mcpframe._pycore`` is imported, or with
``set_enabled(False)`` at run time (tests; not thread-safe against concurrent decoding). The hot paths
call the libraries through module globals, and the switch rebinds those globals to stand-ins that
always refuse, so the switch costs nothing per call while the fast paths are on. ``BINDINGS`` names
every such global; a test checks that no other global of the backend holds a library function.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any, Final, NoReturn

import msgspec
import orjson

# By module path: the package's attribute ``encode`` is the function of that name once it is imported.
encode = importlib.import_module("mcpframe._pycore.encode")
envelope = importlib.import_module("mcpframe._pycore.envelope")
parse = importlib.import_module("mcpframe._pycore.parse")

__all__ = ["BINDINGS", "REFERENCE_ENV", "enabled", "set_enabled"]

REFERENCE_ENV: Final = "MCPFRAME_PYCORE_REFERENCE"


def _refuse_decode(data: Any, /) -> NoReturn:
    # What msgspec raises for text it does not take: the callers send it to the reference parser.
    raise msgspec.DecodeError("fast paths are off")


def _refuse_dumps(value: Any, /, default: Any = None, option: int | None = None) -> NoReturn:
    # What orjson raises for a value it cannot write: the callers re-encode it by the reference.
    raise orjson.JSONEncodeError("fast paths are off")


# (module, global name, fast function, stand-in): every global through which a hot path reaches a
# library, with what it is rebound to when the fast paths are off.
BINDINGS: Final[tuple[tuple[ModuleType, str, object, object], ...]] = (
    (parse, "fast_decode", parse.fast_decode, _refuse_decode),
    (envelope, "fast_decode", parse.fast_decode, _refuse_decode),
    (encode, "_orjson_dumps", encode._orjson_dumps, _refuse_dumps),
)


def enabled() -> bool:
    """Whether the msgspec/orjson fast paths are in use (the default)."""
    return all(getattr(module, name) is fast for module, name, fast, _ in BINDINGS)


def set_enabled(on: bool) -> None:
    """Use the fast paths (``True``) or send everything through the reference paths (``False``)."""
    for module, name, fast, refuse in BINDINGS:
        setattr(module, name, fast if on else refuse)


if os.environ.get(REFERENCE_ENV, "").strip() == "1":
    set_enabled(False)
