"""The legacy HTTP+SSE tests run on asyncio through pytest's anyio plugin (mcpframe's Sessions need it)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
