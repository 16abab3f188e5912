"""What a ``Message`` object is, on both backends: unhashable (it defines ``__eq__``), and each one
keeps its own members whatever became of the messages decoded before it. The native ``Message`` is
a hand-written CPython type that reuses the memory of dropped messages (a freelist of 1,024), so
these tests drop and keep messages across several chunks, more than the freelist holds."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

LINE = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d","arguments":{"k":[%d]}}}\n'


def lines(first: int, count: int) -> bytes:
    return "".join(LINE % (k, k, k) for k in range(first, first + count)).encode()


def expected(k: int) -> dict[str, object]:
    return {"name": f"t{k}", "arguments": {"k": [k]}}


def test_message_is_unhashable(backend: ModuleType) -> None:
    (message,) = backend.decode(b'{"jsonrpc":"2.0","id":1,"method":"m"}')
    with pytest.raises(TypeError):
        hash(message)
    assert backend.Message.__hash__ is None


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_messages_keep_their_own_members_across_reuse(backend: ModuleType, lazy: bool) -> None:
    decoder = backend.Decoder(lazy=lazy)
    kept = []
    first = 0
    for count in (1500, 700, 2100):
        data = lines(first, count)
        messages = decoder.feed(data)
        assert len(messages) == count
        kept += messages[::3]  # the others are dropped here, and their memory may be reused
        first += count
    ids = [m.id for m in kept]
    assert ids == sorted(ids)
    for message in kept:
        k = message.id
        assert message.kind == "request"
        assert message.method == "tools/call"
        assert message.params == expected(k)
        assert json.loads(message.raw) == {
            "jsonrpc": "2.0",
            "id": k,
            "method": "tools/call",
            "params": expected(k),
        }
        assert message.raw_id == str(k).encode()
        assert message.lazy is lazy
        assert message.batch is None


def test_payload_built_on_access_survives_the_decoder(backend: ModuleType) -> None:
    messages = backend.Decoder(lazy=True).feed(lines(0, 40))
    params = [m.params for m in messages]
    again = [m.params for m in messages]
    assert all(a is b for a, b in zip(params, again, strict=True))  # built once, then kept
    del messages
    assert params == [expected(k) for k in range(40)]
