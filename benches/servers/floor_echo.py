"""The floor: no framework, a bare stdin/stdout loop with orjson answering what the benchmark sends.

It reads stdin in 64 KiB chunks, splits lines, answers `initialize`, `ping`, `tools/list` and
`tools/call` of `echo`, ignores notifications, and writes all the answers of one chunk with one `write`.
No validation beyond what orjson does, no concurrency, no cancellation: what any real server must add on
top of this is exactly the overhead the benchmark compares against.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

TOOL = {
    "name": "echo",
    "description": "Return `text` unchanged.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one request, or None for a notification."""
    if "id" not in message:
        return None
    method = message.get("method")
    params = message.get("params") or {}
    if method == "tools/call" and params.get("name") == "echo":
        text = params["arguments"]["text"]
        result: Any = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench-floor", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    """Serve until stdin ends."""
    pending = b""
    while chunk := os.read(0, 65536):
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        out = []
        for line in lines:
            if line.strip():
                reply = answer(orjson.loads(line))
                if reply is not None:
                    out.append(orjson.dumps(reply))
        if out:
            out.append(b"")
            data = memoryview(b"\n".join(out))
            while data:
                data = data[os.write(1, data) :]


if __name__ == "__main__":
    main()
