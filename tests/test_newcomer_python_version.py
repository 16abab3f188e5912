"""An older Python is refused in one sentence, before any backend loads.

pip enforces `requires-python`, but the README's pure-Python route from a clone (`PYTHONPATH=python`)
never meets pip: on Python 3.10 `import mcpframe` used to fail deep in the python backend with
`re.error: multiple repeat`. The child pretends to be 3.10 by replacing `sys.version_info` before the import.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PRETEND = "import sys; sys.version_info = ({version}, 'final', 0); import mcpframe"


def _import_as(version: str, backend: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCPFRAME_BACKEND": backend}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", PRETEND.format(version=version)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("backend", ["native", "python", "auto"])
def test_python_3_10_is_refused_with_the_versions_that_work(backend: str) -> None:
    done = _import_as("3, 10, 13", backend)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: mcpframe needs Python 3.11, 3.12 or 3.13; this is Python 3.10.13 "
        f"({sys.executable}): make the venv with a supported one, e.g. `python3.11 -m venv .venv`"
    )
    assert "re.error" not in done.stderr


def test_the_oldest_supported_python_imports() -> None:
    done = _import_as("3, 11, 0", "python")
    assert done.returncode == 0, done.stderr
