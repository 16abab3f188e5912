"""``Message.method`` on both backends when a stream repeats methods and mixes in near misses: the
native decoder shares one ``str`` per method name through a small cache keyed by the name's length
and a few of its bytes, so these feed names of every length that differ from a cached one in a
single byte (anywhere, those the key does not read included) and check that every message still
gets its own method."""

from __future__ import annotations

from types import ModuleType

import pytest

BASE = "notifications/resources/list_changed/extra"


def names() -> list[str]:
    """Names of every length up to ``len(BASE)``, each followed by its one-byte variants."""
    out = []
    for n in range(len(BASE) + 1):
        name = BASE[:n]
        out.append(name)
        for k in range(n):
            out.append(name[:k] + ("X" if name[k] != "X" else "Y") + name[k + 1 :])
            out.append(name)  # the cached name again, right after its near miss
    return out


def request(k: int, method: str) -> bytes:
    text = method.replace("/", "\\/") if k % 5 == 4 else method  # some escaped (decoded) names
    return b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{}}' % (k, text.encode())


@pytest.mark.parametrize("lazy", [False, True])
def test_each_message_has_its_method(backend: ModuleType, lazy: bool) -> None:
    methods = [*names(), "caf\u00e9/\U0001f680", "caf\u00e9/\U0001f681", "tools/call", "tools/calm"]
    data = b"".join(request(k, m) + b"\n" for k, m in enumerate(methods))
    decoder = backend.Decoder(lazy=lazy)
    got = decoder.feed(data[:70_000]) + decoder.feed(data[70_000:]) + decoder.close()
    assert [m.method for m in got] == methods
    assert [m.id for m in got] == list(range(len(methods)))


@pytest.mark.parametrize("lazy", [False, True])
def test_methods_of_separate_decoders(backend: ModuleType, lazy: bool) -> None:
    first = backend.Decoder(lazy=lazy).feed(request(1, "tools/call") + b"\n")
    second = backend.Decoder(lazy=lazy).feed(request(2, "tools/calm") + b"\n")
    (body,) = backend.decode(request(3, "tools/cal"), lazy=lazy)
    assert [first[0].method, second[0].method, body.method] == ["tools/call", "tools/calm", "tools/cal"]
