"""The versions ``mcpframe._unstable`` was verified on agree with what ``pyproject.toml`` pins and allows."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from mcpframe._unstable import asyncio_tasks

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return project


def _pins(name: str) -> set[tuple[int, ...]]:
    """Every ``name==X.Y.Z`` pin in the optional extras, as release tuples."""
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    found = set()
    for requirements in extras.values():
        for requirement in requirements:
            match = re.fullmatch(rf"{re.escape(name)}\s*==\s*([\d.]+)", requirement.strip())
            if match:
                found.add(tuple(int(part) for part in match.group(1).split(".")))
    return found


def test_the_sdk_pins_are_the_verified_releases() -> None:
    mcp_sdk = pytest.importorskip("mcpframe._unstable.mcp_sdk")
    assert _pins("mcp") == {mcp_sdk.VERIFIED_MCP}  # the sdk and bench extras, one release
    assert _pins("fastmcp") == {mcp_sdk.VERIFIED_FASTMCP}


def test_supported_pythons_are_the_verified_ones() -> None:
    """``requires-python`` and the classifiers name exactly the minor versions asyncio's private path was
    verified on (a new Python is added to all three at once, after reading its asyncio)."""
    low, high = asyncio_tasks.VERIFIED
    minors = [(3, minor) for minor in range(low[1], high[1] + 1)]
    assert _project()["requires-python"] == f">={low[0]}.{low[1]},<{high[0]}.{high[1] + 1}"
    classifiers = _project()["classifiers"]
    assert isinstance(classifiers, list)
    listed = {
        tuple(int(part) for part in c.rsplit(" ", 1)[1].split("."))
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: \d+\.\d+", c)
    }
    assert listed == set(minors)
