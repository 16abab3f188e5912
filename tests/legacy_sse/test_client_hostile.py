"""The legacy SSE client against failing and hostile servers: every failure is a clear error, never a hang;
and the auto probe's rules (what it probes on, what it leaves alone)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from tests.streamable_http._client_support import serve_asgi

from mcpframe import jsonrpc
from mcpframe.client import Client
from mcpframe.http import connect, connect_sse
from mcpframe.http.client_sse import SSEConnectError, SSETransport, same_origin
from mcpframe.http.client_sse_auto import AutoTransport
from mcpframe.http.options import HttpClientOptions
from mcpframe.session import JSONRPCError

from ._client_support import FakeLegacy

pytestmark = pytest.mark.anyio


def text_of(result: dict[str, Any]) -> str:
    return "".join(item.get("text", "") for item in result["content"])


async def test_a_scripted_legacy_server_end_to_end() -> None:
    fake = FakeLegacy()
    async with serve_asgi(fake, "/sse") as url, connect_sse(url, mode="legacy") as client:
        with anyio.fail_after(10):
            assert client.protocol_version == "2024-11-05"
            assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
            await client.ping()
    assert fake.seen[0] == ("GET", "/sse")
    assert {path for verb, path in fake.seen if verb == "POST"} == {"/messages/"}
    methods = [body.get("method") for body in fake.bodies]
    assert methods[:2] == ["initialize", "notifications/initialized"]


async def test_no_endpoint_event_is_a_timeout_error() -> None:
    fake = FakeLegacy(endpoint=None)
    options = HttpClientOptions(connect_timeout=2.0)  # bounds the connect too: room for a loaded box
    async with serve_asgi(fake, "/sse") as url:
        with (
            anyio.fail_after(10),
            pytest.raises(SSEConnectError, match=r"no `endpoint` event .* within 2 s"),
        ):
            async with connect_sse(url, http_options=options):
                pass


@pytest.mark.parametrize(
    "endpoint",
    ["http://attacker.example/messages/?session_id=abc", "//attacker.example/m", "https://127.0.0.1/m"],
)
async def test_an_endpoint_on_another_origin_is_refused(endpoint: str) -> None:
    fake = FakeLegacy(endpoint=endpoint)
    async with serve_asgi(fake, "/sse") as url:
        with anyio.fail_after(10), pytest.raises(SSEConnectError, match="another origin"):
            async with connect_sse(url):
                pass
    assert [verb for verb, _ in fake.seen] == ["GET"]  # nothing was posted anywhere


def test_same_origin() -> None:
    assert same_origin("http://h:80/a", "http://h/b?x=1")
    assert same_origin("https://H:443/a", "https://h/b")
    assert not same_origin("http://h:8000/a", "http://h:8001/a")
    assert not same_origin("http://h/a", "https://h/a")
    assert not same_origin("http://h:x/a", "http://h/a")


async def test_a_stream_that_drops_mid_call_fails_the_call() -> None:
    fake = FakeLegacy()
    async with serve_asgi(fake, "/sse") as url, connect_sse(url, mode="legacy", timeout=60) as client:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def drop() -> None:
                    await fake.posted.wait()
                    fake.end_stream()

                tg.start_soon(drop)
                with pytest.raises(JSONRPCError) as caught:
                    await client.call_tool("hang", {})
    assert caught.value.code == jsonrpc.CONNECTION_CLOSED
    assert "ended the SSE stream before answering" in str(caught.value)


async def test_an_sse_event_past_max_message_fails_the_call_and_is_not_buffered() -> None:
    fake = FakeLegacy()
    options = HttpClientOptions(max_message=4096)
    async with (
        serve_asgi(fake, "/sse") as url,
        connect_sse(url, mode="legacy", timeout=60, http_options=options) as client,
    ):
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def flood() -> None:  # an event whose data never ends, in 1 KiB pieces
                    await fake.posted.wait()
                    await fake.send_raw(b"event: message\ndata: ")
                    for _ in range(8):
                        await fake.send_raw(b"x" * 1024)

                tg.start_soon(flood)
                with pytest.raises(JSONRPCError) as caught:
                    await client.call_tool("hang", {})
    assert caught.value.code == jsonrpc.CONNECTION_CLOSED
    assert "exceeds 4096 bytes (HttpClientOptions.max_message)" in str(caught.value)


async def test_a_post_answered_404_fails_its_request_clearly() -> None:
    def gone(path: str, body: Any) -> int | None:
        return 404 if body.get("method") == "tools/call" else None

    fake = FakeLegacy(refuse=gone)
    async with serve_asgi(fake, "/sse") as url, connect_sse(url, mode="legacy") as client:
        with anyio.fail_after(10):
            with pytest.raises(JSONRPCError, match="no longer knows this legacy SSE session") as caught:
                await client.call_tool("add", {"a": 1, "b": 1})
            assert caught.value.code == jsonrpc.CONNECTION_CLOSED
            await client.ping()  # the connection survives


async def test_a_post_answered_500_fails_its_request_with_the_status() -> None:
    fake = FakeLegacy(refuse=lambda path, body: 500 if body.get("method") == "ping" else None)
    async with serve_asgi(fake, "/sse") as url, connect_sse(url, mode="legacy") as client:
        with anyio.fail_after(10), pytest.raises(JSONRPCError, match=r"HTTP 500: nope"):
            await client.ping()


async def test_a_refusal_whose_body_never_ends_does_not_hold_the_client() -> None:
    fake = FakeLegacy(refuse=lambda path, body: 500 if body.get("method") == "ping" else None, endless=True)
    async with serve_asgi(fake, "/sse") as url, connect_sse(url, mode="legacy") as client:
        with anyio.fail_after(10):
            with pytest.raises(JSONRPCError, match=r"HTTP 500: nope nope"):
                await client.ping()
            assert text_of(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


async def test_a_refused_get_says_so() -> None:
    fake = FakeLegacy()
    async with serve_asgi(fake, "/sse") as url:
        with anyio.fail_after(10), pytest.raises(SSEConnectError, match=r"GET .*/nothing answered HTTP 405"):
            async with connect_sse(url.replace("/sse", "/nothing")):
                pass


async def test_the_inbox_is_bounded_and_loses_nothing() -> None:
    fake = FakeLegacy()
    options = HttpClientOptions(max_buffer=2)
    async with serve_asgi(fake, "/sse") as url, SSETransport(url, options=options) as transport:
        with anyio.fail_after(10):
            for i in range(20):
                frame = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i
                await transport.send(frame)  # answered on the stream; nobody reads yet
            got = b""
            while got.count(b"\n") < 20:
                got += await transport.receive()
    assert [json.loads(line)["id"] for line in got.splitlines() if line] == list(range(20))


# ---------------------------------------------------------------------- the auto probe


@pytest.mark.parametrize("status", [404, 405])
async def test_auto_probes_on_404_and_405(status: int) -> None:
    fake = FakeLegacy(probe_status=status)
    async with serve_asgi(fake, "/sse") as url:
        transport = AutoTransport(url)
        async with Client(opener=lambda: transport, mode="legacy") as client:
            with anyio.fail_after(10):
                assert transport.kind == "sse"
                assert text_of(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
    assert fake.seen[:3] == [("POST", "/sse"), ("GET", "/sse"), ("POST", "/messages/")]
    assert fake.bodies[0]["method"] == fake.bodies[1]["method"] == "initialize"  # the same, sent again


async def test_auto_probes_on_400_only_for_initialize() -> None:
    fake = FakeLegacy(probe_status=400)
    async with serve_asgi(fake, "/sse") as url, connect(url) as client:  # mode auto: server/discover first
        with anyio.fail_after(10):
            assert client.protocol_version == "2024-11-05"
    # discover's 400 proved nothing (a Streamable HTTP server may say so outside a session); initialize's did
    assert fake.seen[:4] == [("POST", "/sse"), ("POST", "/sse"), ("GET", "/sse"), ("POST", "/messages/")]
    assert [body["method"] for body in fake.bodies[:3]] == ["server/discover", "initialize", "initialize"]


@pytest.mark.parametrize("status", [401, 403, 500, 503])
async def test_auto_never_probes_on_other_errors(status: int) -> None:
    fake = FakeLegacy(probe_status=status)
    async with serve_asgi(fake, "/sse") as url:
        with anyio.fail_after(10), pytest.raises(JSONRPCError, match=f"HTTP {status}"):
            async with connect(url, mode="legacy"):
                pass
    assert ("GET", "/sse") not in fake.seen


async def test_auto_keeps_the_post_answer_when_there_is_no_sse_stream() -> None:
    fake = FakeLegacy(probe_status=404)
    async with serve_asgi(fake, "/sse") as url:
        with anyio.fail_after(10), pytest.raises(JSONRPCError, match="HTTP 404"):
            async with connect(url.replace("/sse", "/mcp"), mode="legacy"):
                pass
    assert fake.seen == [("POST", "/mcp"), ("GET", "/mcp")]  # probed once, then the 404 is the answer


async def test_auto_keeps_the_post_answer_when_the_stream_names_no_endpoint(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeLegacy(endpoint=None)
    options = HttpClientOptions(connect_timeout=2.0)  # bounds the connect too: room for a loaded box
    async with serve_asgi(fake, "/sse") as url:
        with anyio.fail_after(10), pytest.raises(JSONRPCError, match="HTTP 405"):
            async with connect(url, mode="legacy", http_options=options):
                pass
    assert "the legacy SSE probe failed: no `endpoint` event" in caplog.text


def test_connect_refuses_an_unknown_transport() -> None:
    with pytest.raises(ValueError, match="transport must be 'auto', 'streamable-http' or 'sse'"):
        connect("http://127.0.0.1:9/mcp", transport="websocket")  # type: ignore[arg-type]
