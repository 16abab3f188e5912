"""The contract's error codes and messages, and frame builders, shared by the validation tests."""

from __future__ import annotations

PARSE = -32700
INVALID = -32600
BAD_JSON = "Parse error: invalid JSON"
DEPTH = "Parse error: nesting deeper than 128 levels"
NOT_OBJECT = "Invalid Request: expected a JSON object"
NO_JSONRPC = 'Invalid Request: missing "jsonrpc"'
BAD_JSONRPC = 'Invalid Request: "jsonrpc" must be "2.0"'
METHOD_TYPE = 'Invalid Request: "method" must be a string'
REQ_WITH_RESULT = 'Invalid Request: a request cannot have "result" or "error"'
PARAMS_TYPE = 'Invalid Request: "params" must be an object or an array'
NULL_REQ_ID = "Invalid Request: request id must not be null"
ID_TYPE = 'Invalid Request: "id" must be a string or an integer'
BOTH = 'Invalid Request: a response cannot have both "result" and "error"'
NEITHER = 'Invalid Request: missing "method", "result" or "error"'
RESP_NO_ID = 'Invalid Request: a response must have an "id"'
NULL_RESULT_ID = 'Invalid Request: a result must have a non-null "id"'
ERROR_TYPE = 'Invalid Request: "error" must be an object'
CODE_TYPE = 'Invalid Request: "error.code" must be an integer'
MESSAGE_TYPE = 'Invalid Request: "error.message" must be a string'


def utf8_at(i: int) -> str:
    return f"Parse error: invalid UTF-8 at byte {i} of the frame"


def nest(depth: int) -> bytes:
    """A request whose nesting is exactly ``depth`` (the envelope object is level 1)."""
    inner = b"[" * (depth - 1) + b"]" * (depth - 1)
    return b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + (inner or b"{}") + b"}"
