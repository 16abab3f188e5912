"""Fixtures for the conformance suite: the installed harness and the everything server over HTTP.

`conformance_harness` installs the pinned harness once per run (`scripts/conformance.sh install`) and gives
the command to run it; `everything_http_url` serves `examples/everything.py` over Streamable HTTP on
127.0.0.1 (random port) in a child process, with the backend the test run uses (`MCPFRAME_BACKEND`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.conformance.harness import harness_command, install, serve_everything_http


@pytest.fixture(scope="session")
def conformance_harness() -> list[str]:
    """`[node, cli]` of the pinned harness, installed into .cache/conformance if needed."""
    install()
    return harness_command()


@pytest.fixture(scope="session", params=["uvicorn", "mcpframe"])
def everything_http_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of the everything example served over HTTP (SSE polling on: quiet POST streams close early), once
    on uvicorn (the `serve --http` default) and once on mcpframe's lean HTTP/1.1 server (its fast paths answer
    differently: first-step answers, the held SSE head, the task-free SSE writer)."""
    with serve_everything_http(["--http-server", request.param]) as url:
        yield url
