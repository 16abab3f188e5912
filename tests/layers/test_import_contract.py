"""The layer contract of pyproject's `[tool.importlinter]` holds on the tree, and it bites.

`make lint` runs `lint-imports`; these tests run the same check on the real package and on temporary copies
with one forbidden import written in, so a contract that has gone slack (a layer misspelt, `exhaustive`
dropped, a sibling pair no longer independent) fails here rather than passing silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "pyproject.toml"
PACKAGE = ROOT / "python" / "mcpframe"

# `lint-imports` through this interpreter, so the test does not depend on where the script was installed.
_RUN = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _lint(source_root: Path) -> subprocess.CompletedProcess[str]:
    """Check the contract on the `mcpframe` package found under `source_root`."""
    # PYTHONPATH comes before the editable install's .pth entry, so grimp finds this copy of mcpframe.
    env = {**os.environ, "PYTHONPATH": str(source_root)}
    return subprocess.run(
        [sys.executable, "-c", _RUN, "--config", str(CONFIG), "--no-cache", "--no-logo"],
        cwd=source_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package's sources with `line` appended to `module` (a path inside mcpframe)."""
    root = tmp_path / "src"
    shutil.copytree(PACKAGE, root / "mcpframe", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    target = root / "mcpframe" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    return root


def test_the_tree_keeps_the_contract() -> None:
    result = _lint(ROOT / "python")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "culprit"),
    [
        # upward: a byte pipe reaching for the server
        (
            "transports/memory.py",
            "import mcpframe.server.app",
            "mcpframe.transports.memory -> mcpframe.server.app",
        ),
        # sideways between independent siblings
        (
            "server/registry.py",
            "import mcpframe.client.app",
            "mcpframe.server.registry -> mcpframe.client.app",
        ),
        # a byte pipe may not learn JSON-RPC (the forbidden contract: the layers alone would allow it)
        ("transports/fd.py", "import mcpframe.jsonrpc", "mcpframe.transports.fd -> mcpframe.jsonrpc"),
        # the bottom layer must stay at the bottom
        ("protocol.py", "import mcpframe.session", "mcpframe.protocol -> mcpframe.session"),
        # an import only for the type checker counts too
        (
            "session/batch.py",
            "import typing\nif typing.TYPE_CHECKING:\n    import mcpframe.server.app",
            "mcpframe.session.batch -> mcpframe.server.app",
        ),
        # so does a lazy import inside a function
        (
            "core.py",
            "def _late() -> None:\n    import mcpframe.http.server",
            "mcpframe.core -> mcpframe.http.server",
        ),
    ],
)
def test_an_injected_import_breaks_it(tmp_path: Path, module: str, line: str, culprit: str) -> None:
    result = _lint(_copy_with(tmp_path, module, line))
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert culprit in result.stdout, result.stdout


def test_a_module_outside_every_layer_breaks_it(tmp_path: Path) -> None:
    """`exhaustive`: a new top-level module must be given a layer before lint passes."""
    root = _copy_with(tmp_path, "protocol.py", "")
    (root / "mcpframe" / "newcomer.py").write_text('"""Not in any layer yet."""\n', encoding="utf-8")
    result = _lint(root)
    assert result.returncode != 0
    assert "mcpframe.newcomer" in result.stdout, result.stdout
