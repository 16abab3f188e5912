"""`mcpframe.protocol`: the protocol facts are consistent, and no module grows a new copy of them.

The literal scan: a module that spells a method name, a revision or a `_meta` key as a string literal
fails here (only `protocol` itself holds them).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mcpframe import protocol
from mcpframe.server import eras

PACKAGE = Path(protocol.__file__).resolve().parent

_METHOD_SETS = (protocol.SERVER_METHODS, protocol.CLIENT_METHODS, protocol.NOTIFICATIONS)
_REVISIONS = frozenset(protocol.SUPPORTED_VERSIONS)
_FACTS = frozenset().union(*_METHOD_SETS, _REVISIONS, protocol.MODERN_META_KEYS, {protocol.PROGRESS_TOKEN})


def _constant_name(value: str) -> str:
    """The naming rule of the module docstring: `logging/setLevel` is `LOGGING_SET_LEVEL`."""
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", value).replace("/", "_").upper()


def test_every_method_constant_is_named_by_the_rule_and_listed_once() -> None:
    listed = set().union(*_METHOD_SETS)
    for value in listed:
        assert getattr(protocol, _constant_name(value)) == value
    # the other way: every constant that holds a method name is in one of the sets
    values = {getattr(protocol, name) for name in protocol.__all__}
    named = {v for v in values if isinstance(v, str) and re.fullmatch(r"[a-z]+(/[a-zA-Z_]+)*", v)}
    assert named - {protocol.REF_PROMPT, protocol.REF_RESOURCE} == listed
    assert protocol.SERVER_METHODS.isdisjoint(protocol.NOTIFICATIONS)
    shared = protocol.CLIENT_METHODS & protocol.SERVER_METHODS
    assert shared == {protocol.PING}
    assert {method for _, method in protocol.LIST_CHANGED_NOTIFICATIONS} <= protocol.NOTIFICATIONS


def test_revisions_are_newest_first_and_modern_after_legacy() -> None:
    assert list(protocol.LEGACY_VERSIONS) == sorted(protocol.LEGACY_VERSIONS, reverse=True)
    assert list(protocol.MODERN_VERSIONS) == sorted(protocol.MODERN_VERSIONS, reverse=True)
    assert min(protocol.MODERN_VERSIONS) > max(protocol.LEGACY_VERSIONS)
    assert protocol.LATEST_LEGACY == protocol.V2025_11_25
    assert protocol.LATEST_MODERN == protocol.V2026_07_28
    assert protocol.BATCH_VERSIONS.issubset(protocol.LEGACY_VERSIONS)
    assert [protocol.batches_allowed(v) for v in (None, *protocol.SUPPORTED_VERSIONS)] == [
        v == protocol.V2025_03_26 for v in (None, *protocol.SUPPORTED_VERSIONS)
    ]


def test_modern_meta_keys_carry_the_reserved_prefix() -> None:
    assert all(key.startswith(protocol.META_KEY_PREFIX) for key in protocol.MODERN_META_KEYS)
    assert len(protocol.MODERN_META_KEYS) == 6


def test_eras_reexports_the_same_objects() -> None:
    for name in ("LEGACY_VERSIONS", "MODERN_VERSIONS", "SUPPORTED_VERSIONS", "PROTOCOL_VERSION_KEY"):
        assert getattr(eras, name) is getattr(protocol, name)
    assert list(eras.LOG_LEVELS) == list(protocol.LOGGING_LEVELS)


def _literals(path: Path) -> set[str]:
    """The protocol facts `path` spells as string literals (docstrings aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in _FACTS
        and id(node) not in docstrings
    }


def test_the_scan_sees_a_literal(tmp_path: Path) -> None:
    """The scan: a literal is found; a docstring, or a string that only contains a name, is not."""
    sample = tmp_path / "sample.py"
    sample.write_text('"""ping"""\nMETHOD = "tools/call"\nTEXT = "see tools/list"\n', encoding="utf-8")
    assert _literals(sample) == {"tools/call"}


def test_no_new_module_spells_protocol_facts_as_literals() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == "protocol.py":
            continue
        found = _literals(path)
        if found:
            offenders[relative] = sorted(found)
    assert not offenders, f"use mcpframe.protocol constants instead of: {offenders}"
