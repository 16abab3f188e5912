"""A plain FastMCP app is carried over whole: its default middleware is no reason to warn or refuse.

FastMCP adds middleware of its own to every app (`DereferenceRefsMiddleware` in 4.x). Only middleware
that would see the handshake messages mcpframe answers itself is reported.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

pytest.importorskip("fastmcp")

from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware
from tests.compat._support import needs_private_fastmcp

from mcpframe.compat.engine import UnsupportedFeatureError, engine_server

pytestmark = needs_private_fastmcp


def plain_app() -> FastMCP:
    app = FastMCP("plain")

    @app.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return app


class ToolTimer(Middleware):
    """Only wraps tool calls: loses nothing on the engine."""

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        return await call_next(context)


class RequestAudit(Middleware):
    """Wraps every request, initialize and ping included: those never reach it on the engine."""

    async def on_request(self, context: Any, call_next: Any) -> Any:
        return await call_next(context)


class HandshakeHook(Middleware):
    async def on_initialize(self, context: Any, call_next: Any) -> Any:
        return await call_next(context)


def test_a_plain_fastmcp_app_is_served_strictly_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    app = plain_app()
    assert app.middleware, "FastMCP's own default middleware is what this test is about"
    with caplog.at_level(logging.INFO, logger="mcpframe.compat.engine"):
        server = engine_server(app, strict=True, transport="stdio")
    assert server.report is not None
    assert server.report.items == ()
    assert not caplog.records


def test_middleware_on_other_methods_only_is_carried_over() -> None:
    app = plain_app()
    app.add_middleware(ToolTimer())
    server = engine_server(app, strict=True, transport="stdio")
    assert server.report is not None
    assert server.report.items == ()


@pytest.mark.parametrize("middleware", [RequestAudit(), HandshakeHook()], ids=lambda mw: type(mw).__name__)
def test_middleware_that_sees_the_handshake_is_reported_by_name(middleware: Middleware) -> None:
    app = plain_app()
    app.add_middleware(ToolTimer())
    app.add_middleware(middleware)
    with pytest.raises(UnsupportedFeatureError) as raised:
        engine_server(app, strict=True, transport="stdio")
    [item] = raised.value.report.items
    assert item.piece == "FastMCP middleware"
    assert item.detail.startswith(f"{type(middleware).__name__}: never see initialize")
    assert "ToolTimer" not in item.detail
    assert "DereferenceRefsMiddleware" not in item.detail


def test_a_plain_callable_as_middleware_is_reported() -> None:
    async def anything(context: Any, call_next: Any) -> Any:
        return await call_next(context)

    app = plain_app()
    app.middleware.append(anything)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedFeatureError) as raised:
        engine_server(app, strict=True, transport="stdio")
    assert "FastMCP middleware" in str(raised.value)
