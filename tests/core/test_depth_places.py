"""The depth limit holds wherever the nesting is: the native scan bounds each value by what is left
of the limit where it sits (it no longer counts brackets first), so every place a value can be is
checked at 128 levels (accepted) and 129 (the depth failure), eager and lazy, whole and in chunks."""

from __future__ import annotations

from types import ModuleType

import pytest
from tests.core.contract_text import DEPTH, PARSE


def arrays(n: int, inner: str = "") -> str:
    return "[" * n + inner + "]" * n


# Each builds a frame whose deepest point is level `n` (the envelope object or the batch is level 1).
PLACES = {
    "params": lambda n: f'{{"jsonrpc":"2.0","id":1,"method":"m","params":{arrays(n - 1)}}}',
    "result-object": lambda n: f'{{"jsonrpc":"2.0","id":1,"result":{arrays(n - 2, "{}")}}}',
    "id": lambda n: f'{{"jsonrpc":"2.0","id":{arrays(n - 1)},"result":1}}',
    "unknown-member": lambda n: f'{{"x":{arrays(n - 1)},"jsonrpc":"2.0","id":1,"result":1}}',
    "method": lambda n: f'{{"jsonrpc":"2.0","method":{arrays(n - 1)}}}',
    "error-data": lambda n: (
        f'{{"jsonrpc":"2.0","id":1,"error":{{"code":1,"message":"m","data":{arrays(n - 2)}}}}}'
    ),
    "batch-params": lambda n: f'[{{"jsonrpc":"2.0","method":"m","params":{arrays(n - 2)}}}]',
    "batch-element": lambda n: f"[{arrays(n - 1)}]",
    "bare": arrays,
}


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("place", sorted(PLACES))
def test_depth_limit_in_every_place(backend: ModuleType, place: str, lazy: bool) -> None:
    within = PLACES[place](128).encode()
    over = PLACES[place](129).encode()
    for item in backend.decode(within, lazy=lazy):
        assert "nesting" not in getattr(item, "message", ""), item
    # fed in small pieces too, so a frame gathered from several chunks takes its own path
    decoder = backend.Decoder(lazy=lazy)
    pieces = [item for i in range(0, len(over), 7) for item in decoder.feed(over[i : i + 7])]
    for items in (backend.decode(over, lazy=lazy), pieces + decoder.close()):
        (error,) = items
        assert (error.code, error.message, error.offset) == (PARSE, DEPTH, 0)


def test_depth_failure_wins_over_an_earlier_syntax_error(backend: ModuleType) -> None:
    frame = b'{"a":x,"b":' + arrays(128).encode() + b"}"
    (error,) = backend.decode(frame)
    assert (error.code, error.message) == (PARSE, DEPTH)
