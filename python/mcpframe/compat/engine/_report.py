"""The start-up report: what of an SDK server the engine drop-in cannot carry over, found before serving.

Every item names the piece and says what happens to it instead. ``warning`` items change behaviour (they
are logged as one warning, or refused with ``strict=True``); ``note`` items are logged at info level and
never refused (they only matter to code that reads transport details).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Literal

from mcp.server.lowlevel.server import Server as LowLevelServer
from mcp.server.subscriptions import ListenHandler

from mcpframe._unstable import mcp_sdk as unstable
from mcpframe.protocol import PING, SERVER_DISCOVER, SUBSCRIPTIONS_LISTEN

from ._fastmcp import is_fastmcp

__all__ = ["StartupReport", "Unsupported", "UnsupportedFeatureError", "inspect_app"]

logger = logging.getLogger("mcpframe.compat.engine")

_KNOWN_MIDDLEWARE = frozenset({"OpenTelemetryMiddleware", "RequestStateBoundary", "FastMCPServerMiddleware"})
_OWN_WORDS = "mcpframe answers it itself"


@dataclasses.dataclass(frozen=True, slots=True)
class Unsupported:
    """One piece of the SDK server that is not carried over as it is."""

    piece: str
    detail: str
    severity: Literal["warning", "note"] = "warning"

    def __str__(self) -> str:
        return f"{self.piece}: {self.detail}"


@dataclasses.dataclass(frozen=True, slots=True)
class StartupReport:
    """Everything found at start-up; empty ``items`` means the server is carried over whole."""

    server: str
    transport: str
    items: tuple[Unsupported, ...] = ()

    @property
    def warnings(self) -> tuple[Unsupported, ...]:
        """The items that change behaviour."""
        return tuple(item for item in self.items if item.severity == "warning")

    def text(self) -> str:
        """A readable multi-line summary."""
        lines = [f"mcpframe engine drop-in for {self.server!r} over {self.transport}:"]
        lines += [f"  - [{item.severity}] {item}" for item in self.items]
        return "\n".join(lines)

    def log(self) -> None:
        """One warning listing every item when any changes behaviour, else one info line."""
        if not self.items:
            return
        level = logging.WARNING if self.warnings else logging.INFO
        logger.log(level, "%s", self.text())


class UnsupportedFeatureError(RuntimeError):
    """Raised with ``strict=True`` when the report has warnings; ``report`` holds them all."""

    def __init__(self, report: StartupReport) -> None:
        super().__init__(report.text())
        self.report = report


def _auth(app: Any) -> list[Unsupported]:
    settings = getattr(app, "settings", None)
    found = (
        getattr(settings, "auth", None) is not None
        or unstable.auth_configured(app)
        or (not hasattr(app, "settings") and getattr(app, "auth", None) is not None)  # FastMCP
    )
    if not found:
        return []
    detail = (
        "the SDK's OAuth/token verification is not carried over; the server runs without it "
        "(over HTTP give mcpframe's own bearer check: http_options=HttpOptions(auth=BearerAuth(...)))"
    )
    return [Unsupported("auth", detail)]


def _routes(app: Any, transport: str) -> list[Unsupported]:
    routes = unstable.custom_routes(app)
    if transport != "http" or not routes:
        return []
    paths = ", ".join(sorted({str(getattr(route, "path", route)) for route in routes}))
    return [Unsupported("custom HTTP routes", f"{paths} are not served (mount them beside the MCP app)")]


def _middleware(lowlevel: LowLevelServer[Any]) -> list[Unsupported]:
    names = [getattr(mw, "__name__", None) or type(mw).__name__ for mw in lowlevel.middleware]
    extra = [name for name in names if name not in _KNOWN_MIDDLEWARE]
    if not extra:
        return []
    detail = (
        f"{', '.join(extra)} wrap every method the SDK server serves, but not initialize, ping, "
        f"server/discover, subscriptions/listen or notifications/initialized ({_OWN_WORDS})"
    )
    return [Unsupported("server middleware", detail)]


def _owned_handlers(lowlevel: LowLevelServer[Any]) -> list[Unsupported]:
    items: list[Unsupported] = []
    ping = lowlevel.get_request_handler(PING)
    if ping is not None and getattr(ping.handler, "__name__", "") != "_ping_handler":
        items.append(Unsupported("ping handler", f"a custom ping handler is not called ({_OWN_WORDS})"))
    discover = lowlevel.get_request_handler(SERVER_DISCOVER)
    if discover is not None and getattr(discover.handler, "__name__", "") != "_handle_discover":
        items.append(
            Unsupported("server/discover handler", f"a custom discover handler is not called ({_OWN_WORDS})")
        )
    listen = lowlevel.get_request_handler(SUBSCRIPTIONS_LISTEN)
    if listen is not None and not isinstance(listen.handler, ListenHandler):
        items.append(
            Unsupported(
                "subscriptions/listen handler", f"a custom listen handler is not called ({_OWN_WORDS})"
            )
        )
    return items


_HANDSHAKE_HOOKS = ("__call__", "on_message", "on_request", "on_notification", "on_initialize", "on_discover")
"""The FastMCP ``Middleware`` hooks that see the messages mcpframe answers itself (``initialize``,
``server/discover``, ``ping``, ``notifications/initialized``)."""


def _sees_handshake(middleware: object) -> bool:
    """Whether a FastMCP middleware would act on a message the engine never hands to FastMCP.

    Middleware that only overrides the per-method hooks of other methods (``on_call_tool``,
    ``on_list_tools``, ...), as FastMCP's default ``DereferenceRefsMiddleware`` does, loses nothing; any
    other callable is assumed to.
    """
    try:
        from fastmcp.server.middleware import Middleware  # noqa: PLC0415 - FastMCP apps only
    except ImportError:
        return True
    if not isinstance(middleware, Middleware):
        return True
    kind = type(middleware)
    return any(getattr(kind, hook) is not getattr(Middleware, hook) for hook in _HANDSHAKE_HOOKS)


def _fastmcp(app: Any) -> list[Unsupported]:
    middleware = getattr(app, "middleware", None)
    if not is_fastmcp(app) or not isinstance(middleware, list):
        return []
    affected = [mw for mw in middleware if _sees_handshake(mw)]
    if not affected:
        return []
    names = ", ".join(type(mw).__name__ for mw in affected)
    return [
        Unsupported(
            "FastMCP middleware",
            f"{names}: never see initialize, server/discover, ping or notifications/initialized "
            "(mcpframe answers those itself)",
        )
    ]


def _transport_notes(transport: str) -> list[Unsupported]:
    if transport != "http":
        return []
    detail = (
        "handlers see no HTTP request object (ctx.headers and request_context.request are None) and "
        "ctx.close_sse_stream() does nothing (mcpframe's HttpOptions.close_idle_streams polls instead)"
    )
    return [Unsupported("HTTP request details", detail, "note")]


def inspect_app(app: Any, lowlevel: LowLevelServer[Any], transport: str) -> StartupReport:
    """Everything of ``app`` the engine drop-in does not carry over as it is, on ``transport``."""
    items = [
        *_auth(app),
        *_routes(app, transport),
        *_middleware(lowlevel),
        *_fastmcp(app),
        *_owned_handlers(lowlevel),
        *_transport_notes(transport),
    ]
    return StartupReport(lowlevel.name, transport, tuple(items))
