"""Every use of another project's private API, one module per runtime, each gated on the versions verified.

mcpframe reaches past the public API of a few runtimes where that is measurably cheaper or where no public
way exists to keep a behaviour exact: asyncio's current-task switch (``asyncio_tasks``), anyio's per-task
cancel-scope records and worker-thread token (``anyio_tasks``), and private names of the official SDK
(``mcp_sdk``, FastMCP's included). Private names change without notice, so:

- they appear nowhere else in ``mcpframe`` (``tests/unstable/test_quarantine.py`` greps for them);
- each module decides once, at import, between its private path and a public fallback: the private path
  only on the exact versions it was read and tested on (Python minor versions for asyncio, version ranges
  read with ``importlib.metadata`` for anyio and ``mcp``), the public one everywhere else;
- ``MCPFRAME_PUBLIC_ONLY=1`` (read once, here, at import) forces every public fallback, so CI can run the
  whole suite on them. The native core honours the same variable for its CPython-layout fast paths.

Each module exposes ``CHOICE`` (a ``Choice``: which path, and why). ``choices()`` collects them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["ENV_VAR", "PUBLIC_ONLY", "Choice", "choices", "decide", "version_of"]

ENV_VAR: Final = "MCPFRAME_PUBLIC_ONLY"
_ON: Final = frozenset({"1", "true", "yes", "on"})

PUBLIC_ONLY: Final[bool] = os.environ.get(ENV_VAR, "").strip().lower() in _ON
"""Whether ``MCPFRAME_PUBLIC_ONLY`` asked for the public fallbacks only (read once, at import)."""

_MODULES: Final = ("asyncio_tasks", "anyio_tasks", "mcp_sdk")
_OPTIONAL: Final = {"mcp_sdk": "mcp"}
"""The module whose runtime may be absent, and that runtime's top-level package."""

Version = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Choice:
    """The path one quarantine module took: ``private`` or not, and a sentence saying why."""

    private: bool
    reason: str

    @property
    def path(self) -> str:
        """``"private"`` or ``"public"``."""
        return "private" if self.private else "public"


def version_of(distribution: str) -> Version | None:
    """The installed ``distribution``'s release numbers (``"4.16.0"`` -> ``(4, 16, 0)``), or None.

    Pre- and post-release tags are dropped: ``2.3.0rc1`` reads as ``(2, 3, 0)``, which a range check then
    treats as that release (a gate lists releases, never pre-releases, so one would fall outside anyway
    only by its suffix; not worth a parser).
    """
    try:
        text = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    match = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(part) for part in match.group().split(".")) if match else None


def decide(what: str, version: Version | None, low: Version, high: Version) -> Choice:
    """The private path when ``low <= version <= high`` (compared on ``len(low)`` parts) and not public-only.

    ``what`` names the runtime in the reason, e.g. ``"anyio"``.
    """
    shown = ".".join(map(str, version)) if version is not None else "not installed"
    verified = f"{'.'.join(map(str, low))} to {'.'.join(map(str, high))}"
    if PUBLIC_ONLY:
        return Choice(False, f"{ENV_VAR} is set ({what} {shown})")
    if version is None:
        return Choice(False, f"{what} is not installed")
    size = len(low)
    if not low <= version[:size] <= high:
        return Choice(False, f"{what} {shown} is outside the verified {verified}")
    return Choice(True, f"{what} {shown} is within the verified {verified}")


def choices() -> dict[str, Choice]:
    """Each quarantine module's ``CHOICE``, by module name; a module whose runtime is absent is left out."""
    found: dict[str, Choice] = {}
    for name in _MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ImportError as exc:
            if not _absent(exc, _OPTIONAL.get(name)):
                raise  # a broken module or another missing import: not "the runtime is not installed"
            continue
        found[name] = module.CHOICE
    return found


def _absent(exc: ImportError, runtime: str | None) -> bool:
    """Whether ``exc`` says that ``runtime`` (a top-level package) itself is not installed."""
    missing = exc.name or ""
    return runtime is not None and (missing == runtime or missing.startswith(f"{runtime}."))
