"""Protocol revisions as the server applies them: how each message picks its era, and request state.

Legacy revisions (2025-11-25 and older) negotiate once with `initialize`; the modern one (2026-07-28)
carries its version and the client's capabilities in every request's `_meta`. One connection serves both:
a request whose `params._meta` names a protocol version is modern, anything else follows the handshake.

The revision lists and `_meta` keys themselves live in `mcpframe.protocol`; the names re-exported here are
kept for the code and tests that import them from this module.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Any, Final

import orjson

from mcpframe import jsonrpc
from mcpframe.protocol import (
    BATCH_VERSIONS,
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    LOG_LEVEL_KEY,
    LOGGING_LEVELS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    SUPPORTED_VERSIONS,
    at_least,
    batches_allowed,
)
from mcpframe.session import JSONRPCError

__all__ = [
    "BATCH_VERSIONS",
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "LATEST_LEGACY",
    "LEGACY_VERSIONS",
    "LOG_LEVELS",
    "LOG_LEVEL_KEY",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO_KEY",
    "SUBSCRIPTION_ID_KEY",
    "SUPPORTED_VERSIONS",
    "RequestState",
    "at_least",
    "batches_allowed",
    "modern_version",
]

MISSING_REQUIRED_CLIENT_CAPABILITY: Final = jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY

LOG_LEVELS: Final[dict[str, int]] = {name: rank for rank, name in enumerate(LOGGING_LEVELS)}
"""Each log level's rank: a message passes a filter when its rank is at least the filter's."""


def modern_version(meta: dict[str, Any]) -> str | None:
    """The per-request protocol version of a modern request, None for a legacy one.

    A named version the server does not speak is refused with -32022 and the supported list.
    """
    version = meta.get(PROTOCOL_VERSION_KEY)
    if version is None:
        return None
    if version not in MODERN_VERSIONS:
        data = {"supported": list(SUPPORTED_VERSIONS), "requested": version}
        raise JSONRPCError(jsonrpc.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)
    return str(version)


class RequestState:
    """Signs and checks the opaque `requestState` of multi round-trip (input_required) results.

    The state carries the input responses gathered in earlier rounds, bound to the method and target of
    the request and to an expiry, under an HMAC with a per-server random key.
    """

    def __init__(self, key: bytes, *, ttl: float = 600.0) -> None:
        self._key = key
        self._ttl = ttl

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:16]

    def seal(self, method: str, target: str, responses: dict[str, Any]) -> str:
        """An opaque state string holding `responses` for a retry of (method, target)."""
        body = {"m": method, "t": target, "r": responses, "e": int(time.time() + self._ttl)}
        payload = orjson.dumps(body)
        return base64.urlsafe_b64encode(self._mac(payload) + payload).decode("ascii")

    def open(self, state: Any, method: str, target: str) -> dict[str, Any]:
        """The responses sealed in `state`; -32602 when it was altered, expired or is for another request."""
        try:
            raw = base64.urlsafe_b64decode(str(state).encode("ascii"))
            mac, payload = raw[:16], raw[16:]
            if not hmac.compare_digest(mac, self._mac(payload)):
                raise ValueError("bad signature")
            body = orjson.loads(payload)
            if body["m"] != method or body["t"] != target or body["e"] < time.time():
                raise ValueError("wrong request or expired")
            responses = body["r"]
            if not isinstance(responses, dict):
                raise ValueError("bad responses")
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
            raise JSONRPCError(
                jsonrpc.INVALID_PARAMS, "Invalid params: requestState is invalid or expired"
            ) from None
        return responses
