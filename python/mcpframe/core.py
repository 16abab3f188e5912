"""The core, from the backend chosen by ``MCPFRAME_BACKEND`` (``auto`` | ``native`` | ``python``).

``auto`` (the default) uses the native extension when it imports and the pure-Python backend otherwise.
``BACKEND`` says which one is in use. Both implement ``docs/core-contract.md`` identically.

The names are the chosen backend's ``__all__``, re-exported as they are: the list itself is written
once, in the native module's stub ``_core.pyi``, which is also what type checkers see here. Both
backends are held to it: by mypy through ``mcpframe._api.CoreBackend``, at run time by
``tests/core/test_contract.py`` (same names, same signatures).
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Final, Literal

from mcpframe import jsonrpc

if TYPE_CHECKING:
    # The contract, with its precise types (the star import follows the stub's ``__all__``).
    from mcpframe._core import *  # noqa: F403

_NATIVE = "mcpframe._core"
_PYTHON = "mcpframe._pycore"


def load_backend(name: str) -> ModuleType:
    """Return the backend module for ``name`` (``auto``, ``native`` or ``python``)."""
    if name == "python":
        return importlib.import_module(_PYTHON)
    if name == "native":
        return importlib.import_module(_NATIVE)
    if name == "auto":
        try:
            return importlib.import_module(_NATIVE)
        except ImportError:
            return importlib.import_module(_PYTHON)
    raise ValueError(f"MCPFRAME_BACKEND must be 'auto', 'native' or 'python', not {name!r}")


_OLDEST_PYTHON: Final = (3, 11)
"""The oldest Python mcpframe runs on (pyproject's ``requires-python``)."""


def _check_python() -> None:
    """Refuse an older Python in one sentence. pip enforces ``requires-python``, but the pure-Python route
    from a clone (``PYTHONPATH=python``) never meets pip: on 3.10 the import would fail deep in the python
    backend with ``re.error: multiple repeat`` (possessive quantifiers came with 3.11)."""
    if sys.version_info[:2] < _OLDEST_PYTHON:
        found = ".".join(map(str, sys.version_info[:3]))
        raise ImportError(
            f"mcpframe needs Python 3.11, 3.12 or 3.13; this is Python {found} ({sys.executable}): "
            "make the venv with a supported one, e.g. `python3.11 -m venv .venv`"
        )


_check_python()
_backend = load_backend(os.environ.get("MCPFRAME_BACKEND", "auto").strip().lower() or "auto")

BACKEND: Literal["native", "python"] = "python" if _backend.__name__ == _PYTHON else "native"

# The codes of invalid input (the contract's table of constants): JSON-RPC's own, not a backend's.
PARSE_ERROR: Final = jsonrpc.PARSE_ERROR
INVALID_REQUEST: Final = jsonrpc.INVALID_REQUEST

if not TYPE_CHECKING:
    globals().update({name: getattr(_backend, name) for name in _backend.__all__})

__all__ = ["BACKEND", "INVALID_REQUEST", "PARSE_ERROR", "load_backend"]
__all__ += list(_backend.__all__)  # a call, which griffe (the docs site) skips instead of misreading
