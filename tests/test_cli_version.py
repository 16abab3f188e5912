"""``mcpframe --version``: one line, the package version, the core backend in use and the Python version."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

from mcpframe import __version__, core


def test_version_names_package_core_and_python() -> None:
    child = subprocess.run(
        [sys.executable, "-m", "mcpframe", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=dict(os.environ, MCPFRAME_BACKEND=core.BACKEND),
    )
    assert child.returncode == 0, child.stderr
    expected = f"mcpframe {__version__} ({core.BACKEND} core, Python {platform.python_version()})\n"
    assert child.stdout == expected
