"""The stdio proxy's answer to a bad frame says where it is (`data.offset`) exactly as `mcpframe serve`
does for the same input: the offset of the frame in the client's stream, however many frames the proxy
relayed or held before it (the held ones were counted with an extra CRLF each, and blank lines and a
stream-start BOM not at all), for a parse error (`-32700`) and an invalid request (`-32600`), with both
pumps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import child_env

ROOT = Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-m", "mcpframe", "serve", "examples.everything:server"]

INIT = (
    b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}'
)
STREAM = b"\r\n".join(
    [
        b"\xef\xbb\xbf" + INIT,
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b"",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"progressToken":"p"}}}',  # held
        b'{"jsonrpc":"2.0","id":"bad","method":"ping","params":{"x":1 2}}',
        b"  ",
        b'{"jsonrpc":"2.0","id":3,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":4,"method":7}',
        b'{"id":5,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":6,"method":"ping"}\n\n{"jsonrpc":"2.0","id":7,"method":"ping"',
        b'{"jsonrpc":"2.0","id":"last","method":"ping"}',
        b"",
    ]
)


def _errors(command: list[str]) -> list[Any]:
    done = subprocess.run(
        command, input=STREAM, capture_output=True, env=child_env(), cwd=str(ROOT), timeout=60, check=False
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(answer.get("id") == "last" for answer in answers), done.stderr[-2000:]
    return [(answer["id"], answer["error"]) for answer in answers if "error" in answer]


@pytest.mark.parametrize("pump", ["thread", "loop"])
def test_the_proxy_says_where_a_bad_frame_is_as_serve_does(pump: str) -> None:
    served = _errors(SERVE)
    proxied = _errors([sys.executable, "-m", "mcpframe", "proxy", "--pump", pump, "--", *SERVE])
    assert [error["code"] for _, error in served] == [-32700, -32600, -32600, -32600, -32700]
    assert [error["data"]["offset"] for _, error in served] == [
        STREAM.index(b'{"jsonrpc":"2.0","id":"bad"'),
        STREAM.index(b'{"jsonrpc":"2.0","id":1.5'),
        STREAM.index(b'{"jsonrpc":"2.0","id":4,"method":7'),
        STREAM.index(b'{"id":5'),
        STREAM.index(b'{"jsonrpc":"2.0","id":7'),
    ]
    assert proxied == served
