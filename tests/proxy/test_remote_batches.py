"""A JSON-RPC batch through `mcpframe proxy URL`, in front of mcpframe's own server on the lean HTTP server:
posted as one batch where the session negotiated 2025-03-26 (the one revision with batches), element by
element in the others, and answered to the client with one array either way (the invalid elements' errors
in it), or not at all when it has no request."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from tests.proxy._remote_support import Stdio, until
from tests.streamable_http._server_support import served

from mcpframe.http.options import HttpOptions
from mcpframe.http.server import StreamableHTTPServer
from mcpframe.proxy.remote import fast_lane, proxy_remote, remote_transport
from mcpframe.server import Server

pytestmark = pytest.mark.anyio


def _server() -> Server:
    server = Server("batches", version="1.0.0")

    @server.tool
    async def echo(text: str) -> str:
        """Says it back."""
        return text

    @server.tool
    async def forever() -> str:
        """Waits until cancelled."""
        await anyio.Event().wait()
        return "never"

    return server


class _Client(Stdio):
    """The proxy's stdio, with each line the client gets kept as it came (an array stays one line)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[Any] = []

    async def send(self, data: bytes) -> None:
        self.lines += [json.loads(line) for line in data.splitlines() if line]
        await super().send(data)

    async def handshake_at(self, version: str) -> None:
        init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        await self.write({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
        answer = await self.answer("init")
        assert answer["result"]["protocolVersion"] == version
        await self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def write_line(self, line: bytes) -> None:
        await self.input.send(line + b"\n")

    async def next_line(self) -> Any:
        """The next line the client gets (within the caller's deadline)."""
        count = len(self.lines)
        while len(self.lines) == count:
            await self.changed.wait()
        return self.lines[count]


@contextlib.asynccontextmanager
async def _proxied(version: str, *, lane: bool) -> AsyncIterator[tuple[_Client, list[bytes]]]:
    """The proxy between a client that negotiated `version` and mcpframe's server on the lean HTTP server;
    yields the client and the bodies POSTed to the server from then on."""
    server = _server()
    app = StreamableHTTPServer(server, HttpOptions())
    posted: list[bytes] = []
    real = app.wire_fast

    def recorded(target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> Any:
        posted.append(body)
        return real(target, headers, body)

    app.wire_fast = recorded  # type: ignore[method-assign]
    client = _Client()
    with anyio.fail_after(20):
        async with (
            served(server, options=app.options, http_server="mcpframe", app=app) as url,
            remote_transport(url, {}) as remote,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(lambda: proxy_remote(client, remote, lane=fast_lane(remote) if lane else None))
            await client.handshake_at(version)
            await until(lambda: any(b"notifications/initialized" in body for body in posted))
            posted.clear()
            client.lines.clear()
            yield client, posted
            tg.cancel_scope.cancel()


def _call(rid: Any, text: str) -> dict[str, Any]:
    params = {"name": "echo", "arguments": {"text": text}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _texts(answers: list[Any]) -> dict[Any, str]:
    return {answer["id"]: answer["result"]["content"][0]["text"] for answer in answers}


BATCH = [_call(1, "one"), {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, _call("two", "2")]


POSTED = {  # what reaches the server of BATCH, by the session's revision
    "2025-03-26": [BATCH],  # one POST, the batch as the client wrote it
    "2025-11-25": BATCH,  # no batches in this revision: one POST each
}


@pytest.mark.parametrize("lane", [True, False], ids=["lane", "no-lane"])
@pytest.mark.parametrize("version", list(POSTED))
async def test_a_batch_is_posted_whole_where_the_revision_has_batches_and_answered_with_one_array(
    version: str, lane: bool
) -> None:
    async with _proxied(version, lane=lane) as (client, posted):
        await client.write(BATCH)  # type: ignore[arg-type]
        answer = await client.next_line()
        assert isinstance(answer, list)
        assert _texts(answer) == {1: "one", "two": "2"}
        assert len(answer) == 2
        got = [json.loads(body) for body in posted]
        assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, POSTED[version]))
        assert client.lines == [answer]  # nothing else came


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
async def test_invalid_elements_are_answered_inside_the_batch_array(version: str) -> None:
    async with _proxied(version, lane=True) as (client, posted):
        await client.write_line(b"[5, " + json.dumps(_call(3, "t")).encode() + b"]")
        answer = await client.next_line()
        assert isinstance(answer, list)
        [error] = [item for item in answer if "error" in item]
        assert error["id"] is None
        assert error["error"]["code"] == -32600
        assert _texts([item for item in answer if "result" in item]) == {3: "t"}
        assert len(answer) == 2
        assert len(posted) == 1  # the valid element only (alone, or as a batch of one)


async def test_a_batch_without_requests_gets_no_answer_and_its_invalid_elements_one_array() -> None:
    async with _proxied("2025-03-26", lane=True) as (client, _):
        await client.write([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}])  # type: ignore[arg-type]
        await client.write_line(b"[1, 2]")
        answer = await client.next_line()
        assert [item["error"]["code"] for item in answer] == [-32600, -32600]
        await client.write(_call(9, "after"))
        assert (await client.next_line())["id"] == 9
        assert client.lines[0] == answer  # the notification's batch got nothing
        assert len(client.lines) == 2


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
async def test_a_cancelled_request_of_a_batch_is_left_out_of_its_array(version: str) -> None:
    async with _proxied(version, lane=True) as (client, posted):
        waits = {
            "jsonrpc": "2.0",
            "id": "w",
            "method": "tools/call",
            "params": {"name": "forever", "arguments": {}},
        }
        await client.write([waits, _call(4, "four")])  # type: ignore[arg-type]
        await until(lambda: len(posted) >= (1 if version == "2025-03-26" else 2))
        assert client.lines == []  # the answer to 4 is held for the array
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "w"}}
        await client.write(cancel)
        answer = await client.next_line()
        assert isinstance(answer, list)
        assert _texts(answer) == {4: "four"}
        assert len(answer) == 1
