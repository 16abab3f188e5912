"""Streamable HTTP server parts on their own: the event store, header parsing, SSE formatting."""

from __future__ import annotations

import socket

import pytest

from mcpframe import protocol
from mcpframe.cli.serve import serve_main
from mcpframe.http import headers as http_headers
from mcpframe.http.client_wire import encode_header_value, mcp_name
from mcpframe.http.events import MemoryEventStore, split_event_id
from mcpframe.http.headers import Accepts, decode_header_value, is_json_content, mirror_mismatch
from mcpframe.http.post import one_line
from mcpframe.http.streams import format_event

pytestmark = pytest.mark.anyio


async def test_memory_event_store_replays_per_stream_and_session() -> None:
    store = MemoryEventStore(max_events_per_stream=3)
    prime = await store.store("s1", "A", None)
    first = await store.store("s1", "A", b"1")
    await store.store("s1", "B", b"other stream")
    await store.store("s1", "A", b"2")
    replay = await store.replay("s1", prime)
    assert replay is not None
    assert replay.stream_id == "A"
    assert [m for _, m in replay.events] == [b"1", b"2"]
    again = await store.replay("s1", first)
    assert again is not None
    assert [m for _, m in again.events] == [b"2"]
    assert await store.replay("s2", first) is None  # another session cannot resume it
    assert await store.replay("s1", "A.99") is None
    assert await store.replay("s1", "garbage") is None
    later = [await store.store("s1", "A", str(n).encode()) for n in range(5)]
    assert await store.replay("s1", prime) is None  # what followed it fell off the bound: no silent gap
    bounded = await store.replay("s1", later[1])  # the next event after it is the oldest kept
    assert bounded is not None
    assert [m for _, m in bounded.events] == [b"2", b"3", b"4"]
    await store.forget("s1")
    assert await store.replay("s1", first) is None
    assert len(store) == 0


def test_event_ids() -> None:
    assert split_event_id("abc-_x.12") == ("abc-_x", 12)
    for bad in ("abc", ".1", "a.", "a.b", "a.-1", "a." + "9" * 30):
        assert split_event_id(bad) is None


@pytest.mark.parametrize(
    ("header", "json", "sse"),
    [
        (None, True, True),
        ("application/json, text/event-stream", True, True),
        ("text/event-stream, application/json", True, True),
        ("text/event-stream", False, True),
        ("application/json;q=0.9", True, False),
        ("*/*", True, True),
        ("text/html", False, False),
        ("application/json, text/event-stream;q=0", True, False),
    ],
)
def test_accept_parsing(header: str | None, json: bool, sse: bool) -> None:
    assert Accepts.parse(header) == Accepts(json, sse)


def test_content_type_and_mirror_values() -> None:
    assert is_json_content("application/json; charset=utf-8")
    assert is_json_content("application/vnd.x+json")
    assert not is_json_content("text/plain")
    assert not is_json_content(None)
    assert decode_header_value("plain") == "plain"
    assert decode_header_value("=?base64?w6k=?=") == "é"
    assert decode_header_value("=?base64?!!?=") is None
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read", "mcp-name": "file:///a"}
    assert mirror_mismatch(headers, "resources/read", {"uri": "file:///a", "_meta": meta}) is None
    assert mirror_mismatch(headers, "resources/read", {"uri": "file:///b", "_meta": meta}) is not None
    assert mirror_mismatch(headers, "tools/list", {"_meta": meta}) is not None


def test_one_list_of_http_facts_that_server_and_client_agree_on() -> None:
    assert all(name == name.lower() for name in http_headers.MCP_HEADERS)  # ASGI hands them lower-cased
    assert len(set(http_headers.MCP_HEADERS)) == len(http_headers.MCP_HEADERS)
    assert min(protocol.MODERN_VERSIONS) == http_headers.FIRST_STATELESS
    assert all(v < http_headers.FIRST_STATELESS for v in protocol.LEGACY_VERSIONS)
    # every target the server checks, the client names; what the client encodes, the server decodes
    for method, param in http_headers.NAME_PARAMS.items():
        assert http_headers.CLIENT_NAME_PARAMS[method] == param
        params = {param: "t\u00e9st", "_meta": {protocol.PROTOCOL_VERSION_KEY: protocol.LATEST_MODERN}}
        sent = {
            http_headers.MCP_PROTOCOL_VERSION: protocol.LATEST_MODERN,
            http_headers.MCP_METHOD: method,
            http_headers.MCP_NAME: encode_header_value(mcp_name(method, params) or ""),
        }
        assert mirror_mismatch(sent, method, params) is None


def test_sse_framing_and_one_line() -> None:
    assert format_event(b'{"a":1}\n', "s.1") == b'id: s.1\nevent: message\ndata: {"a":1}\n\n'
    assert format_event(b"x\ny") == b"event: message\ndata: x\ndata: y\n\n"
    assert one_line(b'{\r\n  "a": "b"\n}\n') == b'{    "a": "b" }\n'


async def test_memory_event_store_keeps_the_latest_streams() -> None:
    store = MemoryEventStore(max_streams_per_session=2)
    first = await store.store("s", "A", None)
    await store.store("s", "A", b"a")
    second = await store.store("s", "B", None)
    await store.store("s", "C", None)
    assert await store.replay("s", first) is None  # A was evicted
    assert await store.replay("s", second) is not None
    with pytest.raises(ValueError, match="at least 1"):
        MemoryEventStore(max_streams_per_session=0)


def test_serve_http_cli_reports_a_busy_port(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        assert serve_main(["examples.everything:server", "--http", "--port", str(port)]) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
