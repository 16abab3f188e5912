"""``ClientOptions``: everything a client is configured with besides where its server is.

Every way to make a client (``Client(server)``, ``Client(transport=...)``, ``Client.stdio(...)``,
``mcpframe.http.connect(url)``) takes the same keywords, typed once as ``ClientSettings`` (PEP 692
``Unpack``), so a misspelt or mistyped one is caught by mypy and by ``TypeError`` where it is written, not
deep inside whatever forwards it. The client keeps them as one frozen ``ClientOptions``.
``ClientSettings`` lists exactly the fields of ``ClientOptions`` (a test keeps the two equal).
"""

from __future__ import annotations

import dataclasses
from typing import Final, Literal, TypedDict

from mcpframe import __version__
from mcpframe.client.inbound import (
    ElicitationHandler,
    LoggingHandler,
    NotificationCallback,
    Roots,
    SamplingHandler,
)
from mcpframe.session.options import SessionOptions

__all__ = ["DEFAULT_TIMEOUT", "ClientOptions", "ClientSettings", "Mode"]

DEFAULT_TIMEOUT: Final = 60.0
"""Seconds a request waits for its response (or progress) unless told otherwise (the SDK's read timeout)."""

Mode = Literal["auto", "modern", "legacy"]
"""``"auto"``: try ``server/discover`` (2026-07-28), fall back to ``initialize``; or only one of them."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ClientOptions:
    """How a client introduces itself, negotiates, waits, and answers what the server asks of it."""

    name: str = "mcpframe-client"
    """``clientInfo.name``."""

    version: str = __version__
    """``clientInfo.version``."""

    mode: Mode = "auto"
    """Which era to speak: ``"auto"`` probes ``server/discover`` and falls back to ``initialize``."""

    timeout: float | None = DEFAULT_TIMEOUT
    """Seconds each request waits for its response (progress restarts the clock); ``None`` (or
    ``math.inf``) waits for ever. A call's own ``timeout=`` wins; there ``None`` means this value and
    ``math.inf`` no limit. The client's one request timeout: ``session_options.timeout`` must stay
    unset."""

    discover_timeout: float = 10.0
    """Seconds the ``server/discover`` probe waits before the client falls back to ``initialize``."""

    sampling_handler: SamplingHandler | None = None
    """Answers ``sampling/createMessage`` (declares the ``sampling`` capability)."""

    elicitation_handler: ElicitationHandler | None = None
    """Answers ``elicitation/create`` (declares the ``elicitation`` capability)."""

    roots: Roots | None = None
    """The roots ``roots/list`` returns, or an async function returning them."""

    logging_handler: LoggingHandler | None = None
    """Called with the params of each ``notifications/message``."""

    notification_handler: NotificationCallback | None = None
    """Called with ``(method, params)`` of every server notification."""

    session_options: SessionOptions | None = None
    """The tuning knobs of the JSON-RPC Session underneath (``None``: its defaults)."""

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "modern", "legacy"):
            raise ValueError(f"mode must be 'auto', 'modern' or 'legacy', got {self.mode!r}")
        if self.timeout is not None and self.timeout < 0:
            raise ValueError(f"timeout must be None or not negative, got {self.timeout}")
        if self.session_options is not None and self.session_options.timeout is not None:
            raise ValueError(
                "a client's request timeout is Client(timeout=...); leave SessionOptions.timeout unset "
                f"(got {self.session_options.timeout})"
            )


class ClientSettings(TypedDict, total=False):
    """The keywords every client constructor takes: the fields of ``ClientOptions``."""

    name: str
    version: str
    mode: Mode
    timeout: float | None
    discover_timeout: float
    sampling_handler: SamplingHandler | None
    elicitation_handler: ElicitationHandler | None
    roots: Roots | None
    logging_handler: LoggingHandler | None
    notification_handler: NotificationCallback | None
    session_options: SessionOptions | None
