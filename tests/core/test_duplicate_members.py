"""A member given twice: the last one wins, on both backends, whether the decoder builds the payload
while scanning (eager: the native scan then replaces the value the first one built) or later (lazy)."""

from __future__ import annotations

from types import ModuleType

import pytest

CASES = [
    (
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1]},"params":{"b":2}}',
        "params",
        b'{"b":2}',
        {"b": 2},
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":[1],"params":{},"params":["x"]}',
        "params",
        b'["x"]',
        ["x"],
    ),
    (b'{"jsonrpc":"2.0","id":1,"result":{"a":1},"result":null}', "result", b"null", None),
    (b'{"jsonrpc":"2.0","result":[{"a":1}],"id":1,"result":{"c":[3]}}', "result", b'{"c":[3]}', {"c": [3]}),
    (b'{"jsonrpc":"2.0","id":1,"params":{"p":1},"result":"r","params":{"q":2}}', "result", b'"r"', "r"),
]


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_last_duplicate_wins(backend: ModuleType, lazy: bool, case: tuple[bytes, str, bytes, object]) -> None:
    frame, member, raw, expected = case
    messages = backend.Decoder(lazy=lazy).feed(frame + b"\n" + frame + b"\n")
    assert len(messages) == 2
    for message in messages:
        assert getattr(message, f"raw_{member}") == raw
        assert getattr(message, member) == expected
