"""Invalid and hostile POST bodies: every one gets the right JSON-RPC error and HTTP status, and the session
that received it goes on serving. Batches follow `eras.batches_allowed` (only 2025-03-26 sessions).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from mcpframe import jsonrpc
from mcpframe.http.post import Body

from ._server_support import (
    JSON_AND_SSE,
    MODERN,
    answer,
    asgi_client,
    call,
    init_body,
    initialize,
    modern_meta,
    session_headers,
)

pytestmark = pytest.mark.anyio

PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
MODERN_PING = {**PING, "params": {"_meta": modern_meta()}}
MODERN_HEADERS = {**JSON_AND_SSE, "mcp-protocol-version": MODERN, "mcp-method": "ping"}
PING_RESULT = {"jsonrpc": "2.0", "id": 7, "result": {}}
TOO_LONG = "integer literal longer than 4300 digits"


def error_of(response: Any, status: int, code: int) -> dict[str, Any]:
    """The JSON-RPC error object of a refused POST, after checking its status and code."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == code
    return dict(body)


async def still_serves(client: Any, headers: dict[str, str]) -> None:
    """The session answers a ping and a tool call after whatever it was sent."""
    assert answer(await client.post("/mcp", json=PING, headers=headers)) == PING_RESULT
    echoed = answer(await client.post("/mcp", json=call("echo", {"text": "ok"}, rid=8), headers=headers))
    assert echoed["result"]["content"][0]["text"] == "ok"


@pytest.mark.parametrize("data", [b"", b" ", b"\r\n\t \n"], ids=["empty", "space", "blank"])
async def test_an_empty_or_blank_body_is_a_parse_error_everywhere(data: bytes) -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        for where in (headers, MODERN_HEADERS, JSON_AND_SSE):  # a session, stateless, no session yet
            error = error_of(await client.post("/mcp", content=data, headers=where), 400, jsonrpc.PARSE_ERROR)
            assert error["id"] is None
            assert error["error"]["message"] == "Parse error: empty body"
        await still_serves(client, headers)


INVALID = [
    pytest.param(b"{nope", jsonrpc.PARSE_ERROR, None, id="not-json"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "p\xff"}', jsonrpc.PARSE_ERROR, 1, id="not-utf8"),
    pytest.param(b"1", jsonrpc.INVALID_REQUEST, None, id="a-number"),
    pytest.param(b'"ping"', jsonrpc.INVALID_REQUEST, None, id="a-string"),
    pytest.param(b"null", jsonrpc.INVALID_REQUEST, None, id="null"),
    pytest.param(b'{"id": 3, "method": "ping"}', jsonrpc.INVALID_REQUEST, 3, id="no-jsonrpc"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 3, "method": 5}', jsonrpc.INVALID_REQUEST, 3, id="method-int"),
    # JSON-RPC 2.0 section 7's own example: not a notification, an Invalid Request with id null
    pytest.param(
        b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}', jsonrpc.INVALID_REQUEST, None, id="spec"
    ),
    pytest.param(
        b'{"jsonrpc": "2.0", "method": "x", "params": 1}', jsonrpc.INVALID_REQUEST, None, id="bad-note"
    ),
    pytest.param(
        b'{"jsonrpc": "2.0", "id": 4, "result": 1, "error": {}}', jsonrpc.INVALID_REQUEST, 4, id="both"
    ),
]


@pytest.mark.parametrize(("data", "code", "rid"), INVALID)
async def test_every_invalid_body_gets_its_error_and_400(data: bytes, code: int, rid: int | None) -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        error = error_of(await client.post("/mcp", content=data, headers=headers), 400, code)
        assert error["id"] == rid
        await still_serves(client, headers)


NOT_SUPPORTED = "Invalid Request: batches are not supported"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
async def test_a_batch_outside_2025_03_26_is_one_invalid_request(version: str) -> None:
    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client, version), version)
        refused = await client.post("/mcp", json=[PING, {**PING, "id": 8}], headers=headers)
        error = error_of(refused, 400, jsonrpc.INVALID_REQUEST)
        assert (error["id"], error["error"]["message"]) == (None, NOT_SUPPORTED)
        await still_serves(client, headers)


async def test_a_batch_in_2025_03_26_is_answered_as_one_array() -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client, "2025-03-26"), "2025-03-26")
        batch = [PING, call("echo", {"text": "b"}, rid=8), {"x": 1}]
        answers = (await client.post("/mcp", json=batch, headers=headers)).json()
        by_id = {a["id"]: a for a in answers}
        assert by_id[7]["result"] == {}
        assert by_id[8]["result"]["content"][0]["text"] == "b"
        assert by_id[None]["error"]["code"] == jsonrpc.INVALID_REQUEST  # the invalid element's own error
        empty = await client.post("/mcp", json=[], headers=headers)
        assert (
            error_of(empty, 400, jsonrpc.INVALID_REQUEST)["error"]["message"]
            == "Invalid Request: empty batch"
        )


async def test_an_invalid_notification_in_a_batch_gets_its_own_invalid_request() -> None:
    async with asgi_client(response_mode="auto") as (client, _):
        headers = session_headers(await initialize(client, "2025-03-26"), "2025-03-26")
        batch = [PING, {"jsonrpc": "2.0", "method": 1, "params": "bar"}]  # JSON-RPC 2.0 section 7's example
        answers = (await client.post("/mcp", json=batch, headers=headers)).json()
        assert len(answers) == 2
        ping, invalid = sorted(answers, key=lambda a: a["id"] is None)
        assert ping == PING_RESULT
        assert (invalid["id"], invalid["error"]["code"]) == (None, jsonrpc.INVALID_REQUEST)
        assert invalid["error"]["message"].startswith("Invalid Request")


async def test_a_batch_before_initialize_or_stateless_is_one_invalid_request() -> None:
    async with asgi_client() as (client, http):
        first = await client.post("/mcp", json=[init_body()], headers=JSON_AND_SSE)
        error = error_of(first, 400, jsonrpc.INVALID_REQUEST)
        assert (error["id"], error["error"]["message"]) == (None, NOT_SUPPORTED)
        assert http.sessions.sessions == {}
        stateless = await client.post("/mcp", json=[MODERN_PING, MODERN_PING], headers=MODERN_HEADERS)
        error = error_of(stateless, 400, jsonrpc.INVALID_REQUEST)
        assert (error["id"], error["error"]["message"]) == (None, NOT_SUPPORTED)
        echo = call("echo", {"text": "s"}, **modern_meta())
        headers = {**MODERN_HEADERS, "mcp-method": "tools/call", "mcp-name": "echo"}
        assert (
            answer(await client.post("/mcp", json=echo, headers=headers))["result"]["content"][0]["text"]
            == "s"
        )


def big(digits: int) -> str:
    return "9" * digits


HOSTILE: dict[str, tuple[dict[str, Any], int | None]] = {  # where "N" goes, and the id its error carries
    "id": ({"jsonrpc": "2.0", "id": "N", "method": "ping"}, None),
    "params": (call("echo", {"text": "x", "n": "-N"}, rid=5), 5),
    "result": ({"jsonrpc": "2.0", "id": 5, "result": {"n": "N"}}, 5),
}


def hostile(where: str, digits: int) -> tuple[bytes, int | None]:
    """A body with an integer literal of `digits` digits at `where`, and the id its error must carry."""
    template, rid = HOSTILE[where]
    text = json.dumps(template).replace('"N"', big(digits)).replace('"-N"', "-" + big(digits))
    return text.encode(), rid


@pytest.mark.parametrize("digits", [4301, 100_000])
@pytest.mark.parametrize("where", ["id", "params", "result"])
async def test_an_over_long_integer_is_an_invalid_request_and_the_session_goes_on(
    where: str, digits: int
) -> None:
    data, rid = hostile(where, digits)
    async with asgi_client() as (client, http):
        headers = session_headers(await initialize(client))
        error = error_of(
            await client.post("/mcp", content=data, headers=headers), 400, jsonrpc.INVALID_REQUEST
        )
        assert TOO_LONG in error["error"]["message"]
        if where != "result":  # a rejected response's error may or may not name its id
            assert error["id"] == rid
        await still_serves(client, headers)
        assert len(http.sessions.sessions) == 1


@pytest.mark.parametrize("digits", [4301, 100_000])
async def test_an_over_long_integer_stateless_and_in_a_batch_element(digits: int) -> None:
    number = big(digits)
    async with asgi_client(response_mode="auto") as (client, _):
        text = json.dumps(call("echo", {"text": "x"}, rid=6, **modern_meta()))
        modern = text.replace('"text": "x"', f'"text": "x", "n": {number}').encode()
        headers = {**MODERN_HEADERS, "mcp-method": "tools/call", "mcp-name": "echo"}
        error = error_of(await client.post("/mcp", content=modern, headers=headers), 400, -32600)
        assert (error["id"], TOO_LONG in error["error"]["message"]) == (6, True)
        headers = session_headers(await initialize(client, "2025-03-26"), "2025-03-26")
        hostile_ping = f'{{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {{"n": {number}}}}}'
        batch = f"[{json.dumps(PING)}, {hostile_ping}]".encode()
        answers = {a["id"]: a for a in (await client.post("/mcp", content=batch, headers=headers)).json()}
        assert answers[7] == PING_RESULT
        assert answers[9]["error"]["code"] == jsonrpc.INVALID_REQUEST
        assert TOO_LONG in answers[9]["error"]["message"]


async def test_an_unexpected_exception_is_a_500_with_a_jsonrpc_error_and_the_session_survives(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Body:
        raise RuntimeError("a bug")

    async with asgi_client() as (client, _):
        headers = session_headers(await initialize(client))
        with monkeypatch.context() as patch, caplog.at_level(logging.ERROR, "mcpframe.http"):
            patch.setattr(Body, "decode", broken)
            failed = await client.post("/mcp", json=PING, headers=headers)
        error = error_of(failed, 500, jsonrpc.INTERNAL_ERROR)
        assert error["id"] is None
        assert "RuntimeError" in error["error"]["message"]
        (record,) = [r for r in caplog.records if r.name == "mcpframe.http" and r.levelno == logging.ERROR]
        assert record.exc_info is not None
        assert "a bug" in str(record.exc_info[1])
        await still_serves(client, headers)
