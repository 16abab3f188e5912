"""A message whose payload refers back to it is collected by the cyclic garbage collector, on both
backends. The native ``Message`` reuses the memory of dropped messages (a freelist), and a reused one
starts untracked by the collector: one that holds a payload value must be tracked all the same."""

from __future__ import annotations

import gc
import weakref
from types import ModuleType

import pytest

REQUEST = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"n","arguments":{}}}\n'


class Probe:
    """Something weakly referable to put in a payload."""


def chunk(count: int) -> bytes:
    return b"".join(REQUEST % k for k in range(count))


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_a_message_in_a_cycle_is_collected(backend: ModuleType, lazy: bool) -> None:
    # dropped messages first, so that the next ones can be reused ones
    backend.Decoder(lazy=True).feed(chunk(200))
    messages = backend.Decoder(lazy=lazy).feed(chunk(50))
    probes = []
    for message in messages:
        params = message.params  # a lazy message builds it here
        params["self"] = message
        params["probe"] = probe = Probe()
        probes.append(weakref.ref(probe))
    del messages, message, params, probe
    gc.collect()
    assert [ref() for ref in probes] == [None] * 50


def test_lazy_messages_without_a_value_are_not_tracked(backend: ModuleType) -> None:
    if backend.__name__ != "mcpframe._core":
        pytest.skip("tracking is an implementation detail of the native Message")
    backend.Decoder(lazy=False).feed(chunk(200))  # dropped tracked messages, for reuse
    lazy = backend.Decoder(lazy=True).feed(chunk(50))
    eager = backend.Decoder(lazy=False).feed(chunk(50))
    assert not any(gc.is_tracked(m) for m in lazy)
    assert all(gc.is_tracked(m) for m in eager)
    assert lazy[0].params == {"name": "n", "arguments": {}}
    assert gc.is_tracked(lazy[0])
