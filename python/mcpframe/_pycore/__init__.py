"""The pure-Python backend of ``mcpframe.core``: the reference implementation of ``docs/core-contract.md``.

It exports exactly the names of the native module ``mcpframe._core``, whose stub ``_core.pyi`` is the
list (``tests/core/test_contract.py`` holds both to it; ``mcpframe._api.CoreBackend`` types it). Decoding
is one ``msgspec.json`` decode per frame, encoding one ``orjson`` dump per value; both fall back to a
slower reference path wherever those libraries differ from the contract. ``MCPFRAME_PYCORE_REFERENCE=1``
(or ``fastpaths.set_enabled(False)``) turns the libraries off: everything then takes the reference paths.
"""

from __future__ import annotations

# Imported for its side effect: it reads MCPFRAME_PYCORE_REFERENCE once, here.
from mcpframe._pycore import fastpaths  # noqa: F401
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
from mcpframe._pycore.envelope import PREVIEW_BYTES
from mcpframe._pycore.framing import DEFAULT_MAX_FRAME, Decoder, decode
from mcpframe._pycore.http_head import header_dict, plain_request
from mcpframe._pycore.message import FrameError, Message
from mcpframe._pycore.plain_call import plain_call
from mcpframe._pycore.relay import AnswerRelay, Relay
from mcpframe._pycore.span import value_span
from mcpframe._pycore.splice import splice_id

__all__ = [
    "DEFAULT_MAX_FRAME",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "PREVIEW_BYTES",
    "AnswerRelay",
    "Correlator",
    "Decoder",
    "FrameError",
    "IdMap",
    "Message",
    "Relay",
    "decode",
    "encode",
    "encode_error",
    "encode_many",
    "encode_notification",
    "encode_request",
    "encode_result",
    "header_dict",
    "plain_call",
    "plain_request",
    "splice_id",
    "value_span",
]
