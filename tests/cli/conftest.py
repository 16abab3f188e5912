"""`mcpframe serve` tests: a user's project on disk, and how to run the command on it in a child."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import mcpframe

# children import this checkout's mcpframe, whether or not it is installed in the interpreter
SOURCE = str(Path(mcpframe.__file__).resolve().parents[1])
SERVE = [sys.executable, "-m", "mcpframe", "serve"]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a `mcpframe serve` child: this mcpframe first, no token or debug from outside."""
    env = {k: v for k, v in os.environ.items() if k not in ("MCPFRAME_AUTH_TOKEN", "MCPFRAME_DEBUG")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))
    return {**env, **extra}


def write_project(root: Path, files: Mapping[str, str]) -> Path:
    """Write `files` (relative path -> source, dedented) under `root`; return `root`."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run in `tmp_path` with `sys.path` and `sys.modules` restored afterwards (for in-process loading)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        module = sys.modules[name]
        if str(tmp_path) in str(getattr(module, "__file__", "") or ""):
            del sys.modules[name]
    sys.modules.pop("_mcpframe_target", None)
