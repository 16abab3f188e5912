"""`serve_http` asks its shared store first (`_reach_store`): how a store that does not answer is said.

The message names the store by its own `where` (the Redis store's URL without credentials), not by the
options' URL (empty when an application brings its own store), and the store's connections are closed
when serving does not start.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from mcpframe.http.server import _reach_store
from mcpframe.http.store import StoreUnavailable

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
