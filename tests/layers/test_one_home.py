"""Shared names have one home, in the lowest layer that needs them, and no module grows its own copy.

The JSON-RPC id alias lives in `mcpframe._api`, the response-shape check in `mcpframe.jsonrpc`, the log
levels and the revision comparison in `mcpframe.protocol`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from mcpframe import _api, jsonrpc, protocol
from mcpframe.client import LogLevel
from mcpframe.server import eras

PACKAGE = Path(protocol.__file__).resolve().parent


def _assigned_names(path: Path) -> set[str]:
    """Names a module binds at its top level by assignment (aliases included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_id_alias_is_defined_once() -> None:
    defining = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "Id" in _assigned_names(path)
    )
    assert defining == ["_api.py"]
    assert _api.Id == int | str


def test_the_log_levels_are_one_list() -> None:
    assert LogLevel is protocol.LoggingLevel
    assert get_args(protocol.LoggingLevel) == protocol.LOGGING_LEVELS
    assert protocol.LOGGING_LEVELS[0] == "debug"
    assert protocol.LOGGING_LEVELS[-1] == "emergency"
    assert list(eras.LOG_LEVELS) == list(protocol.LOGGING_LEVELS)


def test_revisions_compare_through_one_helper() -> None:
    assert eras.at_least is protocol.at_least
    assert protocol.at_least(protocol.V2026_07_28, protocol.V2025_11_25)
    assert protocol.at_least(protocol.V2025_06_18, protocol.V2025_06_18)
    assert not protocol.at_least(protocol.V2024_11_05, protocol.V2025_03_26)
    assert not protocol.at_least("", protocol.V2024_11_05)  # no header: older than every revision


@pytest.mark.parametrize(
    ("frame", "shaped"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', True),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}', True),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}', False),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', False),
        (b'[{"jsonrpc":"2.0","id":1,"result":{}}]', False),
        (b'{"jsonrpc":"2.0","id":1,"result":', False),
        (b"", False),
        (None, False),
        # refused by the core only for its integer: still read as the response it is
        (b'{"jsonrpc":"2.0","id":1,"result":{"n":' + b"7" * 5000 + b"}}", True),
        (b'{"jsonrpc":"2.0","id":1,"result":{"n":1.' + b"5" * 5000 + b"e3}}", True),
        # a digit run inside a string does not change the shape
        (b'{"jsonrpc":"2.0","id":1,"method":"' + b"9" * 5000 + b'"}', False),
    ],
)
def test_response_shaped(frame: bytes | None, shaped: bool) -> None:
    assert jsonrpc.response_shaped(frame) is shaped


def test_response_shaped_is_not_copied_elsewhere() -> None:
    defining = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "response_shaped"
            for node in ast.parse(path.read_text(encoding="utf-8")).body
        )
    )
    assert defining == ["jsonrpc.py"]
