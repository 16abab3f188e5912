"""One rule for a UTF-8 byte order mark (`EF BB BF`), the same on both backends: one right before a message
is dropped wherever a message starts (a stdio line, the first or any later one; an HTTP body), as RFC 8259
§8.1 lets a parser do; one anywhere else (a second one, one after a space, one inside a batch) is content,
refused with -32700 whose `detail` says so in plain words (not the stdlib's "decode using utf-8-sig")."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from mcpframe.session.batch import error_answer

BOM = b"\xef\xbb\xbf"
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
PLAIN = "a UTF-8 byte order mark (EF BB BF) is allowed only right before a message, not in it"


def _data(error: object) -> object:
    """The `data` of the -32700 answer to `error`."""
    return json.loads(error_answer(error))["error"]["data"]  # type: ignore[arg-type]


def test_a_bom_before_every_line_is_dropped_and_counted_in_the_offsets(backend: ModuleType) -> None:
    stream = BOM + PING + b"\n" + BOM + PING + b"\r\n" + b"\n" + BOM + PING
    decoder = backend.Decoder()
    items = [*decoder.feed(stream), *decoder.close()]
    assert [(item.raw, item.offset) for item in items] == [(PING, 3), (PING, 47), (PING, 93)]
    # cut anywhere, the same
    for cut in range(1, len(stream)):
        decoder = backend.Decoder()
        again = [*decoder.feed(stream[:cut]), *decoder.feed(stream[cut:]), *decoder.close()]
        assert [(item.raw, item.offset) for item in again] == [(PING, 3), (PING, 47), (PING, 93)]


@pytest.mark.parametrize(
    ("stream", "offset", "at"),
    [
        pytest.param(BOM + BOM + PING + b"\n", 3, 0, id="two-at-the-stream-start"),
        pytest.param(PING + b"\n" + BOM + BOM + PING + b"\n", 44, 0, id="two-before-a-later-line"),
        pytest.param(PING + b"\n " + BOM + PING + b"\n", 41, 1, id="after-a-space"),
        pytest.param(b"[" + BOM + PING + b"]\n", 0, 1, id="inside-a-batch"),
    ],
)
def test_a_bom_anywhere_else_is_a_parse_error_that_says_so(
    backend: ModuleType, stream: bytes, offset: int, at: int
) -> None:
    items = backend.Decoder().feed(stream)
    [error] = [item for item in items if not hasattr(item, "kind")]
    assert (error.code, error.offset) == (-32700, offset)
    assert _data(error) == {"offset": offset, "at": at, "detail": PLAIN}


def test_an_http_body_follows_the_same_rule(backend: ModuleType) -> None:
    [message] = backend.decode(BOM + PING)
    assert (message.raw, message.offset) == (PING, 3)
    [error] = backend.decode(BOM + BOM + PING)
    assert _data(error) == {"offset": 3, "at": 0, "detail": PLAIN}


def test_the_relay_of_a_proxy_forwards_a_line_without_its_bom(backend: ModuleType) -> None:
    relay = backend.Relay(backend.IdMap(), 1)
    note = b'{"jsonrpc":"2.0","method":"n"}'
    out, held = relay.feed(note + b"\n" + BOM + note + b"\n")
    assert (out, held) == (note + b"\n" + note + b"\n", [])
