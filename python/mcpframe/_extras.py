"""What to type when an optional dependency is missing.

mcpframe is installed from a clone (it is not on the package index), so ``pip install 'mcpframe[http]'``
cannot work for a user. The hint names the extra's own requirements, read from the installed metadata
(pyproject's ``[project.optional-dependencies]``), which pip can always fetch.
"""

from __future__ import annotations

import re
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


def install_hint(extra: str) -> str:
    """``pip install 'httpx>=0.27' ...`` for ``extra``, or, without metadata, the clone's extra."""
    requirements = _requirements(extra)
    if not requirements:
        return f"pip install '.[{extra}]' in mcpframe's source tree"
    return "pip install " + " ".join(f"'{r}'" for r in requirements)
