"""What to type when an optional dependency is missing.

mcpframe is installed from a clone (it is not on the package index), so ``pip install 'mcpframe[http]'``
cannot work for a user. The hint names the extra's own requirements, read from the installed metadata
(pyproject's ``[project.optional-dependencies]``), which pip can always fetch. In a venv that is not the
activated one (``.venv/bin/mcpframe``, as the README runs it) the hint names that venv's pip by its path.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import sysconfig
from importlib import metadata

__all__ = ["install_hint"]

_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _requirements(extra: str) -> list[str]:
    try:
        declared = metadata.requires("mcpframe") or []
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return []
    found = []
    for requirement in declared:
        spec, _, marker = requirement.partition(";")
        if any(name == extra for name in _EXTRA.findall(marker)):
            found.append(spec.strip().replace(" ", ""))
    return found


def _pip() -> str:
    """``pip``, or this venv's own pip by its path when the venv is not the activated one.

    The README runs ``.venv/bin/mcpframe`` without activating the venv; a bare ``pip`` typed then is
    another Python's (or refused as an externally managed environment), and the hint would not help.
    """
    if sys.prefix == sys.base_prefix:  # not a venv: whatever pip the user has
        return "pip"
    active = os.environ.get("VIRTUAL_ENV")
    if active and os.path.realpath(active) == os.path.realpath(sys.prefix):
        return "pip"
    return shlex.quote(os.path.join(sysconfig.get_path("scripts"), "pip"))


def install_hint(extra: str) -> str:
    """``pip install 'httpx>=0.27' ...`` for ``extra``, or, without metadata, the clone's extra."""
    requirements = _requirements(extra)
    if not requirements:
        return f"{_pip()} install '.[{extra}]' in mcpframe's source tree"
    return f"{_pip()} install " + " ".join(f"'{r}'" for r in requirements)
