"""`_for_child` finds a request's progress token with one look at the frame when the token's key is written
once and nothing is escaped, and looks at the `_meta` again only otherwise (to refuse a token named twice);
either way the child gets the token the decoded message holds (of duplicate keys, the last), rewritten.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpframe import core
from mcpframe.proxy import listen_stateless
from mcpframe.proxy.listen_stateless import _for_child


def _message(raw: bytes) -> Any:
    [message] = core.decode(raw, max_frame=1 << 20)
    return message


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    looks: list[tuple[str, ...]] = []
    real = core.value_span

    def value_span(frame: bytes, path: Any) -> tuple[int, int] | None:
        looks.append(tuple(path))
        return real(frame, path)

    monkeypatch.setattr(listen_stateless.core, "value_span", value_span)
    return looks


@pytest.mark.parametrize(
    ("params", "looks"),
    [
        (b'{"name":"x","_meta":{"progressToken":"t"},"arguments":{}}', 1),
        # the key twice in the frame (a decoy in the arguments): the `_meta` is looked at again
        (b'{"arguments":{"progressToken":1},"_meta":{"progressToken":"t"}}', 2),
        # something escaped somewhere: the key might be escaped too
        (b'{"arguments":{"s":"a\\"b"},"_meta":{"progressToken":"t"}}', 2),
    ],
)
def test_the_meta_is_looked_at_again_only_when_the_token_could_be_named_twice(
    monkeypatch: pytest.MonkeyPatch, params: bytes, looks: int
) -> None:
    raw = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":%s}' % params
    message = _message(raw)
    counted = _counted(monkeypatch)
    frame, token = _for_child(message, 42)
    assert token == b'"t"'
    assert len(counted) == looks
    decoded = json.loads(frame)
    assert decoded["id"] == 42
    assert decoded["params"]["_meta"]["progressToken"] == 42
    assert decoded["params"].get("arguments") == json.loads(params).get("arguments")


@pytest.mark.parametrize(
    "params",
    [
        # two `_meta` members: the decoded message keeps the last, a child may keep the first
        b'{"_meta":{"a":1},"_meta":{"progressToken":5}}',
        b'{"_meta":{"progressToken":4},"_meta":{"progressToken":5}}',
        b'{"_meta":{"progressToken":4},"_meta":{"b":1}}',
        b'{"\\u005fmeta":{"progressToken":4},"_meta":{"b":1}}',  # the first one escaped
        b'{"_meta":{"progressToken":4},"\\u005fmeta":{"b":1}}',
    ],
)
def test_params_naming_meta_twice_are_refused(params: bytes) -> None:
    raw = b'{"jsonrpc":"2.0","id":7,"method":"m","params":%s}' % params
    with pytest.raises(ValueError, match="params names _meta more than once"):
        _for_child(_message(raw), 42)


@pytest.mark.parametrize(
    "params",
    [
        b'{"arguments":{"_meta":{"progressToken":1}},"_meta":{"progressToken":5}}',  # one in the arguments
        b'{"arguments":{"s":"\\u00e9"},"_meta":{"progressToken":5}}',  # an escape elsewhere
    ],
)
def test_a_meta_named_once_in_params_is_rewritten(params: bytes) -> None:
    raw = b'{"jsonrpc":"2.0","id":7,"method":"m","params":%s}' % params
    frame, got = _for_child(_message(raw), 42)
    assert got == b"5"
    decoded = _message(frame)
    assert decoded.id == 42
    assert decoded.params["_meta"] == {"progressToken": 42}
