"""Decoding gives back every reference it takes, on both backends: once the messages and errors of a
stream are dropped, the ``Message`` type and each input ``bytes`` object have the reference counts
they had before. The native ``Message`` is a hand-written CPython type with a freelist of 1,024
dropped objects, so the streams here make more messages than that; they also hold a frame split
over chunks (rebuilt in a buffer of the decoder's own), invalid frames (``FrameError``) and lazy
payloads both built and left unbuilt. A ``bytes`` subclass instance, which may hold attributes,
is never referred to by the messages, so a cycle through it is collected (the messages in an
attribute of the chunk)."""

from __future__ import annotations

import gc
import sys
import weakref
from types import ModuleType

import pytest

LINE = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d","arguments":{"k":[%d]}}}\n'
RESULT = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"r%d"}]}}\n'
INVALID = b'{"jsonrpc":"2.0","id":%d,"method":7}\n'


def line(k: int) -> bytes:
    """A request (even `k`) or a result, or every 100th line an invalid frame."""
    template = INVALID if k % 100 == 99 else RESULT if k % 2 else LINE
    return template % ((k,) * template.count(b"%d"))


def lines(first: int, count: int) -> bytes:
    return b"".join(line(k) for k in range(first, first + count))


SPLIT = (1200, 1899, 2501)  # a request, an invalid frame, a result


def chunks() -> list[bytes]:
    """3,900 lines in four chunks, cut in the middle of the lines ``SPLIT``."""
    data = lines(0, 3900)
    cuts = [len(lines(0, k)) + 30 for k in SPLIT]
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def decode_stream(backend: ModuleType, lazy: bool, data: list[bytes]) -> None:
    """Decode the chunks `data`, check what came out, build half of the payloads, drop it all."""
    decoder = backend.Decoder(lazy=lazy)
    items = []
    for chunk in data:
        items += decoder.feed(chunk)
    items += decoder.close()
    messages = [m for m in items if isinstance(m, backend.Message)]
    errors = [e for e in items if isinstance(e, backend.FrameError)]
    assert len(messages) + len(errors) == len(items) == 3900
    assert len(errors) == 39
    assert {m.id for m in messages} == {k for k in range(3900) if k % 100 != 99}
    # the frames cut between chunks came out whole
    by_id = {m.id: m for m in messages}
    assert [by_id[k].raw for k in (SPLIT[0], SPLIT[2])] == [line(k).rstrip() for k in (SPLIT[0], SPLIT[2])]
    assert [e.raw for e in errors if e.id == SPLIT[1]] == [line(SPLIT[1]).rstrip()]
    # payloads built for half of the messages (lazy ones build them here), the others untouched
    for m in messages[::2]:
        payload = m.params if m.kind == "request" else m.result
        assert payload is not None
        assert any(r is payload for r in gc.get_referents(m))
    # drop a first part, then make more messages (reusing the dropped ones' memory)
    del items[: len(items) // 2], messages[: len(messages) // 2]
    items += backend.Decoder(lazy=lazy).feed(data[3])


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_decoding_gives_back_its_references(backend: ModuleType, lazy: bool) -> None:
    data = chunks()
    decode_stream(backend, lazy, data)  # first, for whatever a first use keeps for good
    gc.collect()
    # (counted into plain variables: an assert rewritten by pytest holds its operands)
    before_type = sys.getrefcount(backend.Message)
    before_data = [sys.getrefcount(chunk) for chunk in data]
    decode_stream(backend, lazy, data)
    gc.collect()
    after_type = sys.getrefcount(backend.Message)
    after_data = [sys.getrefcount(chunk) for chunk in data]
    assert after_type == before_type
    assert after_data == before_data


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_decode_gives_back_its_references(backend: ModuleType, lazy: bool) -> None:
    body = b"[" + b",".join(LINE.rstrip() % (k, k, k) for k in range(1100)) + b"]"
    backend.decode(body, lazy=lazy)
    gc.collect()
    before_type = sys.getrefcount(backend.Message)
    before_body = sys.getrefcount(body)
    messages = backend.decode(body, lazy=lazy)
    assert len(messages) == 1100
    assert [m.params for m in messages[::3]] == [
        {"name": f"t{k}", "arguments": {"k": [k]}} for k in range(0, 1100, 3)
    ]
    del messages
    gc.collect()
    after_type = sys.getrefcount(backend.Message)
    after_body = sys.getrefcount(body)
    assert after_type == before_type
    assert after_body == before_body


class Chunk(bytes):
    """A ``bytes`` subclass: its instances may hold attributes (but no weak reference)."""


class Probe:
    """Something weakly referable, kept by a chunk."""


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_a_bytes_subclass_holding_its_messages_is_collected(backend: ModuleType, lazy: bool) -> None:
    chunk = Chunk(lines(0, 50))
    chunk.probe = probe = Probe()  # type: ignore[attr-defined]
    ref = weakref.ref(probe)
    del probe
    chunk.messages = backend.Decoder(lazy=lazy).feed(chunk)  # type: ignore[attr-defined]
    assert len(chunk.messages) == 50  # type: ignore[attr-defined]
    del chunk
    gc.collect()
    assert ref() is None
