"""The `Context` a handler receives when it declares a parameter annotated `Context`.

It speaks for one incoming request: progress, logging (filtered by the client's level), cancellation, and
requests back to the client. On legacy revisions those are real server-to-client requests; on 2026-07-28
they become an `input_required` result that the client answers by retrying (multi round-trip), so the
handler simply runs again and this time `elicit()` / `sample()` return the client's answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from mcpframe import protocol
from mcpframe.session import JSONRPCError, Request

from .eras import LOG_LEVELS, MISSING_REQUIRED_CLIENT_CAPABILITY

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = ["CallInfo", "Context", "InputRequired"]


class InputRequired(Exception):
    """Raised inside a modern-era handler that needs client input; becomes an `input_required` result."""

    def __init__(self, requests: dict[str, Any]) -> None:
        super().__init__("input required")
        self.requests = requests


@dataclasses.dataclass(slots=True)
class CallInfo:
    """The era-specific facts of one request, decided before its handler runs."""

    version: str
    modern: bool
    client_capabilities: dict[str, Any]
    log_level: int | None
    responses: dict[str, Any] = dataclasses.field(default_factory=dict)
    asked: int = 0


class Context:
    """Request-scoped helpers for tools, resources and prompts."""

    def __init__(self, request: Request, call: CallInfo, connection: ServerConnection) -> None:
        self._request = request
        self._call = call
        self._connection = connection

    @property
    def request_id(self) -> int | str:
        """The JSON-RPC id of the request being served."""
        return self._request.id

    @property
    def protocol_version(self) -> str:
        """The protocol revision of this request (negotiated, or from its `_meta`)."""
        return self._call.version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared (at initialize, or in this request's `_meta`)."""
        return self._call.client_capabilities

    @property
    def lifespan_context(self) -> Any:
        """What the server's `lifespan` yielded (`None` without one), as FastMCP and the SDK name it."""
        return self._connection.server.lifespan_state

    @property
    def is_cancelled(self) -> bool:
        """True once the client cancelled this request (check it in long synchronous loops)."""
        return self._request.cancelled

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send `notifications/progress` if the client asked for progress (else nothing)."""
        await self._request.report_progress(progress, total, message)

    async def log(self, level: str, data: Any, *, logger: str | None = None) -> None:
        """Send `notifications/message` when `level` passes the client's filter."""
        rank = LOG_LEVELS.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        threshold = self._call.log_level
        if threshold is None or rank < threshold:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._request.send_notification(protocol.NOTIFICATIONS_MESSAGE, params)

    async def debug(self, data: Any) -> None:
        """Log at `debug`."""
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        """Log at `info`."""
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        """Log at `warning`."""
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        """Log at `error`."""
        await self.log("error", data)

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
        """Ask the user for input through the client (`elicitation/create`); returns the ElicitResult."""
        params = {"mode": "form", "message": message, "requestedSchema": requested_schema}
        if not self._call.modern:
            params.pop("mode")
        return await self._ask("elicitation", protocol.ELICITATION_CREATE, params)

    async def sample(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: dict[str, Any] | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        metadata: dict[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Ask the client's model for a completion (`sampling/createMessage`); returns the result.

        The keywords are the request's optional fields (`systemPrompt`, `temperature`, ...), sent when
        given; `extra` adds any other field verbatim, by its wire name (e.g. `{"tools": [...]}`).
        """
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens}
        optional = {
            "systemPrompt": system_prompt,
            "temperature": temperature,
            "stopSequences": None if stop_sequences is None else list(stop_sequences),
            "modelPreferences": model_preferences,
            "includeContext": include_context,
            "metadata": metadata,
        }
        params.update((key, value) for key, value in optional.items() if value is not None)
        params.update(extra or {})
        return await self._ask("sampling", protocol.SAMPLING_CREATE_MESSAGE, params)

    async def list_roots(self) -> list[dict[str, Any]]:
        """The client's roots (`roots/list`)."""
        result = await self._ask("roots", protocol.ROOTS_LIST, None)
        roots = result.get("roots", [])
        return roots if isinstance(roots, list) else []

    async def _ask(self, capability: str, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        if capability not in self._call.client_capabilities:
            text = f"the client did not declare the {capability!r} capability, which {method} needs"
            if not self._call.modern:
                raise RuntimeError(text)
            data: dict[str, Any] = {"requiredCapabilities": {capability: {}}}
            raise JSONRPCError(MISSING_REQUIRED_CLIENT_CAPABILITY, text, data)
        if not self._call.modern:
            result = await self._request.send_request(method, params)
            return result if isinstance(result, dict) else {}
        key = f"{method.split('/', maxsplit=1)[0]}-{self._call.asked}"
        self._call.asked += 1
        if key in self._call.responses:
            answer = self._call.responses[key]
            return answer if isinstance(answer, dict) else {}
        request: dict[str, Any] = {"method": method}
        if params is not None:
            request["params"] = params
        raise InputRequired({key: request})
