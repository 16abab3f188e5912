"""Hints for a missing optional dependency name what pip can install (mcpframe itself is not on the index)."""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from mcpframe._extras import install_hint

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


@pytest.fixture(autouse=True)
def activated(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in an activated venv (or none), where a bare `pip` is this interpreter's (a venv used without
    activating it: tests/test_newcomer_extras.py)."""
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)


def _declared(extra: str) -> list[str]:
    doc = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return [r.replace(" ", "") for r in doc["project"]["optional-dependencies"][extra]]


@pytest.mark.parametrize("extra", ["http", "sdk"])
def test_the_hint_names_the_extras_requirements_as_pyproject_declares_them(extra: str) -> None:
    expected = "pip install " + " ".join(f"'{r.split(';')[0]}'" for r in _declared(extra))
    assert install_hint(extra) == expected
    assert "mcpframe[" not in install_hint(extra)


def test_without_metadata_the_hint_points_at_the_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> list[str]:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "requires", missing)
    assert install_hint("http") == "pip install '.[http]' in mcpframe's source tree"


def test_an_unknown_extra_falls_back_to_the_source_tree() -> None:
    assert install_hint("no-such-extra") == "pip install '.[no-such-extra]' in mcpframe's source tree"
