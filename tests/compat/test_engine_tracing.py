"""OpenTelemetry on the engine: its middleware is left out only while no recording provider is installed.

Installing a tracer provider is once per process, so the installed case runs in a child interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.mcpserver import MCPServer
from tests.compat._support import needs_private_mcp

from mcpframe.compat.engine import _tracing
from mcpframe.compat.engine._server import EngineServer

INSTALLED = textwrap.dedent(
    """
    from mcp.server._otel import OpenTelemetryMiddleware
    from mcp.server.mcpserver import MCPServer
    from opentelemetry import trace

    from mcpframe.compat.engine import _fast, _tracing
    from mcpframe.compat.engine._server import EngineServer
    from tests.compat.test_engine_fast import runner_for

    class Recording(trace.TracerProvider):
        def get_tracer(self, *args, **kwargs):
            return trace.NoOpTracer()

    app = MCPServer("traced")

    @app.tool()
    def echo(text: str) -> str:
        return text

    engine = EngineServer(app)
    plain = {"name": "echo", "arguments": {"text": "x"}}
    before = (_tracing.quiet(), _fast.eligible(runner_for(app, "2025-06-18"), app, plain))
    trace.set_tracer_provider(Recording())
    chain = engine.kernel.middleware
    after = (_tracing.quiet(), _fast.eligible(runner_for(app, "2025-06-18"), app, plain))
    print(before, after, any(isinstance(m, OpenTelemetryMiddleware) for m in chain))
    """
)


@needs_private_mcp
def test_quiet_without_a_provider_leaves_the_otel_middleware_out() -> None:
    app = MCPServer("quiet")
    engine = EngineServer(app)
    assert _tracing.quiet()
    assert any(isinstance(m, OpenTelemetryMiddleware) for m in app._lowlevel_server.middleware)
    assert not any(isinstance(m, OpenTelemetryMiddleware) for m in engine.kernel.middleware)


@needs_private_mcp
def test_an_installed_provider_puts_the_otel_middleware_back_and_the_short_way_off() -> None:
    child = subprocess.run(
        [sys.executable, "-c", INSTALLED],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.split("\n")[0] == "(True, True) (False, False) True"
