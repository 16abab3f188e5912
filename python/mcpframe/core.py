"""The core, from the backend chosen by ``MCPFRAME_BACKEND`` (``auto`` | ``native`` | ``python``).

``auto`` (the default) uses the native extension when it imports and the pure-Python backend otherwise.
``BACKEND`` says which one is in use. Both implement ``docs/core-contract.md`` identically.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Literal

__all__ = [
    "BACKEND",
    "DEFAULT_MAX_FRAME",
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "PARSE_ERROR",
    "PREVIEW_BYTES",
    "Correlator",
    "Decoder",
    "FrameError",
    "IdMap",
    "Message",
    "decode",
    "encode",
    "encode_error",
    "encode_many",
    "encode_notification",
    "encode_request",
    "encode_result",
    "load_backend",
    "splice_id",
]


def load_backend(name: str) -> ModuleType:
    """Return the backend module for ``name`` (``auto``, ``native`` or ``python``)."""
    if name == "python":
        from mcpframe import _pycore

        return _pycore
    if name == "native":
        from mcpframe import _core

        return _core
    if name == "auto":
        try:
            from mcpframe import _core
        except ImportError:
            from mcpframe import _pycore

            return _pycore
        return _core
    raise ValueError(f"MCPFRAME_BACKEND must be 'auto', 'native' or 'python', not {name!r}")


_backend = load_backend(os.environ.get("MCPFRAME_BACKEND", "auto").strip().lower() or "auto")

BACKEND: Literal["native", "python"] = "python" if _backend.__name__.endswith("_pycore") else "native"

MAX_DEPTH: int = _backend.MAX_DEPTH
DEFAULT_MAX_FRAME: int = _backend.DEFAULT_MAX_FRAME
PREVIEW_BYTES: int = _backend.PREVIEW_BYTES
PARSE_ERROR: int = -32700
INVALID_REQUEST: int = -32600

Decoder = _backend.Decoder
Message = _backend.Message
FrameError = _backend.FrameError
Correlator = _backend.Correlator
IdMap = _backend.IdMap
decode = _backend.decode
encode = _backend.encode
encode_many = _backend.encode_many
encode_request = _backend.encode_request
encode_notification = _backend.encode_notification
encode_result = _backend.encode_result
encode_error = _backend.encode_error
splice_id = _backend.splice_id
