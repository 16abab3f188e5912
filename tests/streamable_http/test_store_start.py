"""`serve_http` asks its shared store first (`_reach_store`): how a store that does not answer is said.

A store that fails outright (refused, authentication, DNS) stops the start: the message names the store by
its own `where` (the Redis store's URL without credentials), not by the options' URL (empty when an
application brings its own store), and the store's connections are closed. A store that is only late (a
Redis that took the connection but does not answer) used to stop it too, after `store_timeout`: it is now
a warning, and the server starts, answering the requests that need the store with 503 until it answers.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from mcpframe import core
from mcpframe.http.options import HttpOptions
from mcpframe.http.server import _reach_store, serve_http
from mcpframe.http.store import StoreUnavailable
from mcpframe.server import Server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port bound but not listening: a connection to it is refused, and nobody else takes it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


class Refusing:
    """An application's own store (no `where`) that refuses every call."""

    def __init__(self) -> None:
        self.closed = False

    async def ping(self) -> None:
        try:
            raise ConnectionRefusedError("connection refused")
        except ConnectionRefusedError as exc:
            raise StoreUnavailable("the store failed PING") from exc

    async def aclose(self) -> None:
        self.closed = True


async def test_a_store_of_the_application_is_named_by_its_type_and_closed() -> None:
    store = Refusing()
    with pytest.raises(StoreUnavailable) as caught:
        await _reach_store(store)  # type: ignore[arg-type]
    assert str(caught.value) == "cannot reach the session store (Refusing): connection refused"
    assert store.closed


async def test_a_refusing_redis_is_named_by_its_url_without_credentials_and_closed(refused_port: int) -> None:
    pytest.importorskip("redis.asyncio")
    from mcpframe.http.redis_store import RedisStore  # noqa: PLC0415 - the redis extra

    store = RedisStore(f"redis://u:s3cret@127.0.0.1:{refused_port}/0?password=s3cret", timeout=2.0)
    closed: list[bool] = []
    aclose = store.aclose

    async def recording() -> Any:
        closed.append(True)
        await aclose()

    store.aclose = recording  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailable) as caught:
        await _reach_store(store)
    said = str(caught.value)
    assert said.startswith(f"cannot reach the session store at redis://127.0.0.1:{refused_port}/0: ")
    assert "s3cret" not in said
    assert closed == [True]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that takes connections (the kernel's backlog) and never answers on them."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield sock.getsockname()[1]


async def test_a_store_that_does_not_answer_is_a_warning_and_the_server_answers_503(
    silent_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("redis.asyncio")
    pytest.importorskip("uvicorn")
    url = f"redis://127.0.0.1:{silent_port}/0?password=s3cret"
    options = HttpOptions(store=url, store_timeout=0.3, store_liveness=1.0)
    listening: list[str] = []
    ready = anyio.Event()

    def announce(where: str) -> None:
        listening.append(where)
        ready.set()

    caplog.set_level(logging.WARNING, logger="mcpframe.http")
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_http(Server("late"), port=0, options=options, ready=announce, grace=0.5))
        with anyio.fail_after(20):
            await ready.wait()
            initialize = core.encode_request(
                1,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            )
            headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
            async with httpx.AsyncClient() as client:
                response = await client.post(listening[0], content=initialize, headers=headers)
        tg.cancel_scope.cancel()
    assert response.status_code == 503
    said = [r.getMessage() for r in caplog.records if "serving anyway" in r.getMessage()]
    assert len(said) == 1
    assert f"Redis at redis://127.0.0.1:{silent_port}/0" in said[0]
    assert "s3cret" not in caplog.text
