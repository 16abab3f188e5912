"""The Streamable HTTP client's wire helpers: the SSE parser and the MCP request headers."""

from __future__ import annotations

import base64
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpframe.http.client_wire import (
    SSEEvent,
    SSEEventTooLarge,
    SSEParser,
    encode_header_value,
    mcp_name,
    stamped_version,
)


def parse(*chunks: bytes) -> tuple[list[SSEEvent], SSEParser]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.close()
    return events, parser


STREAM = (
    b": keep-alive comment\n"
    b"id: p-0\nretry: 500\ndata:\n\n"  # a priming event: empty data
    b'event: message\nid: p-1\ndata: {"a":1}\n\n'
    b"data: line one\ndata:line two\n\n"
    b"event: custom\ndata: x\n\n"
)
EXPECTED = [
    SSEEvent("message", b"", "p-0"),
    SSEEvent("message", b'{"a":1}', "p-1"),
    SSEEvent("message", b"line one\nline two", "p-1"),
    SSEEvent("custom", b"x", "p-1"),
]


@pytest.mark.parametrize("terminator", [b"\n", b"\r\n", b"\r"])
def test_events_with_any_line_terminator(terminator: bytes) -> None:
    events, parser = parse(STREAM.replace(b"\n", terminator))
    assert events == EXPECTED
    assert parser.last_event_id == "p-1"
    assert parser.retry == 500


def test_an_event_up_to_max_event_passes_and_one_past_it_is_refused() -> None:
    parser = SSEParser(max_event=16)
    assert parser.feed(b"data: " + b"a" * 7 + b"\ndata: " + b"b" * 7 + b"\n\n") == [
        SSEEvent("message", b"a" * 7 + b"\n" + b"b" * 7, None)
    ]
    parser.feed(b"data: " + b"c" * 7 + b"\n")
    parser.feed(b"data: " + b"c" * 7 + b"\n")  # 16 bytes of data: still within
    with pytest.raises(SSEEventTooLarge, match="exceeds 16 bytes"):  # data lines add up
        parser.feed(b"data: c\n")


@pytest.mark.parametrize("piece", [1, 100, 4096])
def test_a_line_that_never_ends_is_refused_once_past_max_event(piece: int) -> None:
    parser = SSEParser(max_event=4096)
    fed = 0
    refused = False
    while not refused and fed <= 10 * 4096:
        fed += piece
        try:
            parser.feed(b"d" * piece)
        except SSEEventTooLarge:
            refused = True
    assert refused
    assert fed <= 4096 + piece  # refused as soon as the line passed the bound, not later


def test_the_default_bound_is_the_core_frame_limit() -> None:
    from mcpframe import core  # noqa: PLC0415

    assert SSEParser().max_event == core.DEFAULT_MAX_FRAME


def test_priming_event_sets_id_and_retry() -> None:
    events, parser = parse(b"id: event-2\nretry: 500\ndata: \n\n")
    assert events == [SSEEvent("message", b"", "event-2")]
    assert (parser.last_event_id, parser.retry) == ("event-2", 500)


def test_event_without_data_is_not_dispatched_but_keeps_its_id() -> None:
    events, parser = parse(b"id: only-id\nretry: 250\n\nevent: x\n\n")
    assert events == []
    assert (parser.last_event_id, parser.retry) == ("only-id", 250)


def test_field_details() -> None:
    events, parser = parse(
        b"retry: soon\ndata:  two spaces\nunknown: x\nid: bad\x00id\ndata\n\nid\ndata: after empty id\n\n"
    )
    # only one leading space is stripped; `data` alone adds an empty line; a non-digit retry is ignored
    assert events[0] == SSEEvent("message", b" two spaces\n", None)
    assert events[1] == SSEEvent("message", b"after empty id", "")
    assert parser.retry is None


def test_unterminated_event_is_dropped_at_close() -> None:
    events, parser = parse(b"data: complete\n\ndata: cut off\nid: late\n")
    assert events == [SSEEvent("message", b"complete", None)]
    assert parser.last_event_id == "late"


def test_crlf_split_across_chunks_is_one_terminator() -> None:
    events, _ = parse(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n")
    assert events == [SSEEvent("message", b"a", None), SSEEvent("message", b"b", None)]


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_chunking_never_changes_the_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert parse(*chunks)[0] == EXPECTED


MIXED = STREAM[:60] + STREAM[60:].replace(b"\n", b"\r\n")  # LF lines (split at once), then CRLF ones


@given(st.lists(st.integers(min_value=0, max_value=len(MIXED)), max_size=12))
def test_lf_chunks_then_crlf_chunks_give_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(MIXED)]
    chunks = [MIXED[a:b] for a, b in itertools.pairwise(bounds)]
    assert parse(*chunks)[0] == EXPECTED


def test_large_event_in_small_chunks() -> None:
    payload = b"x" * 300_000
    data = b"data: " + payload + b"\n\n"
    events, _ = parse(*(data[i : i + 1000] for i in range(0, len(data), 1000)))
    assert events == [SSEEvent("message", payload, None)]


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("add", True),
        ("file:///tmp/a b.txt", True),
        ("café", False),
        ("tööl_unicode", False),
        (" padded", False),
        ("tab\tinside", False),
        ("a\r\nInjected: 1", False),
        ("=?base64?YQ==?=", False),
    ],
)
def test_header_values(value: str, plain: bool) -> None:
    encoded = encode_header_value(value)
    if plain:
        assert encoded == value
    else:
        assert encoded.startswith("=?base64?")
        assert encoded.endswith("?=")
        assert base64.b64decode(encoded[9:-2]).decode("utf-8") == value
    assert encoded.isascii()
    assert "\n" not in encoded


def test_mcp_name_and_modern_version() -> None:
    assert mcp_name("tools/call", {"name": "add"}) == "add"
    assert mcp_name("prompts/get", {"name": "review"}) == "review"
    assert mcp_name("resources/read", {"uri": "test://a", "name": "ignored"}) == "test://a"
    assert mcp_name("tools/list", {"name": "x"}) is None
    assert mcp_name("tools/call", {"name": 3}) is None
    assert mcp_name("tools/call", None) is None
    for method in ("tasks/get", "tasks/result", "tasks/cancel", "tasks/update"):  # the tasks extension
        assert mcp_name(method, {"taskId": "t-1"}) == "t-1"
    assert mcp_name("tasks/list", {"cursor": "c"}) is None
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    assert stamped_version(meta) == "2026-07-28"
    assert stamped_version({"_meta": {}}) is None
    assert stamped_version({"_meta": "x"}) is None
    assert stamped_version([1]) is None
