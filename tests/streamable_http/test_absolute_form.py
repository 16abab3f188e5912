"""A request target in absolute-form (`POST http://host/mcp HTTP/1.1`) is guarded on its authority, not on
its `Host` header (RFC 9112 §3.2.2), on the lean server and under uvicorn, for every method."""

from __future__ import annotations

import json

import anyio
import pytest

from mcpframe.http.security import target_host

from ._server_support import JSON_AND_SSE, init_body, make_server, served

pytestmark = pytest.mark.anyio

SERVERS = ["mcpframe", "uvicorn"]


async def exchange(url: str, method: str, target: str, host: str, body: bytes = b"") -> tuple[int, bytes]:
    """`method target` with `host` sent on a socket of its own (`connection: close`): (status, body)."""
    port = int(url.split("/")[2].rpartition(":")[2])
    head = "".join(f"{k}: {v}\r\n" for k, v in JSON_AND_SSE.items())
    request = (
        f"{method} {target} HTTP/1.1\r\nhost: {host}\r\n{head}connection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body
    got = b""
    with anyio.fail_after(10):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(request)
            while True:
                try:
                    got += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
    status_line, _, rest = got.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize("http_server", SERVERS)
@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
async def test_foreign_authority_is_refused_whatever_the_host_header(http_server: str, method: str) -> None:
    async with served(make_server(), http_server=http_server) as url:
        local = url.split("/")[2]
        body = json.dumps(init_body()).encode() if method == "POST" else b""
        status, answer = await exchange(url, method, "http://evil.example/mcp", local, body)
        assert status == 421
        message = json.loads(answer)["error"]["message"]
        assert message == "Misdirected Request: host 'evil.example' is not allowed"
        # the same request in origin-form passes the guard: only the target's authority refused it
        status, _ = await exchange(url, method, "/mcp", local, body)
        assert status != 421


@pytest.mark.parametrize("http_server", SERVERS)
async def test_allowed_authority_is_served_whatever_the_host_header(http_server: str) -> None:
    async with served(make_server(), http_server=http_server) as url:
        body = json.dumps(init_body()).encode()
        status, _ = await exchange(url, "POST", url, "evil.example", body)
        assert status == 200
        status, _ = await exchange(url, "POST", "/mcp", "evil.example", body)
        assert status == 421  # origin-form: the Host header is what names the host


@pytest.mark.parametrize(
    ("target", "host"),
    [
        (b"http://evil.example/mcp", b"evil.example"),
        (b"https://127.0.0.1:8000/mcp?x=1", b"127.0.0.1:8000"),
        (b"http://[::1]:9/mcp", b"[::1]:9"),
        (b"http://user:pw@evil.example:80/mcp", b"evil.example:80"),
        (b"http://evil.example", b"evil.example"),
        (b"http://evil.example?q", b"evil.example"),
        (b"http:///mcp", b""),
    ],
)
def test_target_host_takes_the_authority(target: bytes, host: bytes) -> None:
    headers = [(b"host", b"127.0.0.1:1"), (b"accept", b"*/*"), (b"host", b"other")]
    assert target_host(target, headers) == [(b"host", host), (b"accept", b"*/*")]


@pytest.mark.parametrize("target", [b"/mcp", b"/mcp?next=http://evil.example/", b"*"])
def test_target_host_leaves_other_targets_alone(target: bytes) -> None:
    headers = [(b"host", b"127.0.0.1:1")]
    assert target_host(target, headers) is headers


def test_without_httptools_uvicorn_keeps_its_own_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    """No httptools (or a uvicorn without the hook): `None`, and `serve_http` lets uvicorn choose ("auto")."""
    import builtins  # noqa: PLC0415

    from mcpframe.http import uvicorn_host  # noqa: PLC0415

    real = builtins.__import__

    def no_httptools(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("uvicorn.protocols.http.httptools_impl"):
            raise ImportError(name)
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    uvicorn_host.host_from_target.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_httptools)
    try:
        assert uvicorn_host.host_from_target() is None
    finally:
        monkeypatch.undo()
        uvicorn_host.host_from_target.cache_clear()
    protocol = uvicorn_host.host_from_target()
    assert protocol is not None
    assert protocol.__name__ == "HostFromTarget"
