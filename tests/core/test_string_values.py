"""String values of every width and length through eager decoding: the native builder counts
characters and picks the `str` kind sixteen bytes at a time, and writes ASCII runs eight at a
time, so lengths around those block sizes and non-ASCII characters at every place are covered."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from ._support import stream

# one character of each UTF-8 length and `str` kind: Latin-1 (2 bytes), the first 2-byte
# character outside Latin-1, the BMP (3 bytes) and beyond it (4 bytes)
WIDE = ["é", "ÿ", "Ā", "日", "\uffff", "😀", "\U0010ffff"]


def texts() -> list[str]:
    """ASCII runs of lengths 0 to 40 with a wide character at every place, and mixed texts."""
    out = []
    for wide in WIDE:
        for n in range(41):
            for at in range(0, n + 1, 3):
                out.append("a" * at + wide + "b" * (n - at))
    out += ["héllo wörld " * 9, "日本語のテキスト" * 5, "x😀y" * 20, "é" * 33, "😀" * 17]
    return out


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_string_values_decode_like_json(backend: ModuleType, lazy: bool) -> None:
    values = texts()
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "m", "params": {"t": v}}, ensure_ascii=False)
        for i, v in enumerate(values)
    ]
    data = ("\n".join(lines) + "\n").encode()
    messages = stream(backend, data, lazy=lazy)
    assert [m.params["t"] for m in messages] == values
