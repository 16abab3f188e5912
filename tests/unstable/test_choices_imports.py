"""``choices()`` leaves out a quarantine module only when its own runtime is missing, never hides a bug."""

from __future__ import annotations

import importlib
import types
from typing import Any

import pytest

import mcpframe._unstable as unstable


def _importer(failing: str, error: ImportError) -> Any:
    real = importlib.import_module

    def import_module(name: str) -> types.ModuleType:
        if name.endswith(f".{failing}"):
            raise error
        module: types.ModuleType = real(name)
        return module

    return import_module


@pytest.mark.parametrize("missing", ["mcp", "mcp.server.lowlevel"])
def test_a_missing_sdk_leaves_mcp_sdk_out(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    error = ModuleNotFoundError(f"No module named {missing!r}", name=missing)
    monkeypatch.setattr(importlib, "import_module", _importer("mcp_sdk", error))
    found = unstable.choices()
    assert "mcp_sdk" not in found
    assert {"asyncio_tasks", "anyio_tasks"} <= set(found)


@pytest.mark.parametrize(
    ("module", "missing"),
    [("mcp_sdk", "mcpx"), ("mcp_sdk", "anyio._backends"), ("anyio_tasks", "anyio"), ("mcp_sdk", None)],
)
def test_any_other_import_error_is_raised(
    monkeypatch: pytest.MonkeyPatch, module: str, missing: str | None
) -> None:
    error = ImportError("cannot import name 'x'", name=missing)
    monkeypatch.setattr(importlib, "import_module", _importer(module, error))
    with pytest.raises(ImportError) as raised:
        unstable.choices()
    assert raised.value is error
