"""The pure-Python backend of ``mcpframe.core``: the reference implementation of ``docs/core-contract.md``.

It exports exactly the names of the native module ``mcpframe._core``. Decoding is one
``msgspec.json`` decode per frame, encoding one ``orjson`` dump per value; both fall back to a slower
reference path wherever those libraries differ from the contract.
"""

from __future__ import annotations

from mcpframe._pycore.correlation import Correlator, IdMap
from mcpframe._pycore.depth import MAX_DEPTH
from mcpframe._pycore.digits import MAX_INT_DIGITS
from mcpframe._pycore.encode import (
    encode,
    encode_error,
    encode_many,
    encode_notification,
    encode_request,
    encode_result,
)
from mcpframe._pycore.envelope import INVALID_REQUEST, PARSE_ERROR, PREVIEW_BYTES
from mcpframe._pycore.framing import DEFAULT_MAX_FRAME, Decoder, decode
from mcpframe._pycore.message import FrameError, Message
from mcpframe._pycore.splice import splice_id

__all__ = [
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
    "splice_id",
]
