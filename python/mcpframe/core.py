"""The core, from the backend chosen by ``MCPFRAME_BACKEND`` (``auto`` | ``native`` | ``python``).

``auto`` (the default) uses the native extension when it imports and the pure-Python backend otherwise.
``BACKEND`` says which one is in use. Both implement ``docs/core-contract.md`` identically.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING, Literal

__all__ = [
    "BACKEND",
    "DEFAULT_MAX_FRAME",
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
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


_backend = load_backend(os.environ.get("MCPFRAME_BACKEND", "auto").strip().lower() or "auto")

BACKEND: Literal["native", "python"] = "python" if _backend.__name__ == _PYTHON else "native"

MAX_DEPTH: int = _backend.MAX_DEPTH
MAX_INT_DIGITS: int = _backend.MAX_INT_DIGITS
DEFAULT_MAX_FRAME: int = _backend.DEFAULT_MAX_FRAME
PREVIEW_BYTES: int = _backend.PREVIEW_BYTES
PARSE_ERROR: int = -32700
INVALID_REQUEST: int = -32600

if TYPE_CHECKING:
    # Both backends have this shape; the type checker sees the pure-Python one.
    from mcpframe._pycore import (
        Correlator,
        Decoder,
        FrameError,
        IdMap,
        Message,
        decode,
        encode,
        encode_error,
        encode_many,
        encode_notification,
        encode_request,
        encode_result,
        splice_id,
    )
else:
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
