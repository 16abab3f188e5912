"""The shared store's URL as messages print it: no user, no password, no query (a `?password=` is one)."""

from __future__ import annotations

import pytest

from mcpframe.http.store import _where


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://user:s3cret@127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://127.0.0.1:6379/0?password=s3cret", "redis://127.0.0.1:6379/0"),
        ("redis://u@h:1/0?username=u&password=s3cret#frag", "redis://h:1/0"),
        ("rediss://:s3cret@[::1]:6380/2?ssl_cert_reqs=none", "rediss://[::1]:6380/2"),
        ("unix:///run/redis.sock?db=0&password=s3cret", "unix:///run/redis.sock"),
        ("redis://cache", "redis://cache"),
    ],
)
def test_the_store_url_is_shown_without_credentials(url: str, shown: str) -> None:
    assert _where(url) == shown
