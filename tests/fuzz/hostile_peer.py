"""A hostile MCP server on stdio, for fuzzing the client: ``python hostile_peer.py SEED``.

It answers ``initialize`` properly (and ``server/discover`` with "method not found", so the client falls back
to it); before each answer to ``tools/call add`` it writes hostile frames (``mutations.hostile_frame``, plus
server-to-client requests, notifications and responses to requests never sent), then the right answer.
The client's answers to its requests are read and ignored.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz.mutations import hostile_frame, split_framing

TO_CLIENT = (
    b'{"jsonrpc":"2.0","id":"s-1","method":"ping"}',
    b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":"s-2","method":"roots/list"}',
    b'{"jsonrpc":"2.0","id":"s-3","method":"sampling/createMessage","params":{}}',
    b'{"jsonrpc":"2.0","id":"s-4","method":"elicitation/create","params":[]}',
    b'{"jsonrpc":"2.0","id":"s-5","method":"no/such"}',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":[],"data":null}}',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"nope","progress":1}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
    b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}',
    b'{"jsonrpc":"2.0","id":987654321,"result":{"content":[]}}',
    b'{"jsonrpc":"2.0","id":"never","error":{"code":-1,"message":"x"}}',
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
)


def answer(message: dict[str, object]) -> bytes | None:
    """The honest answer to ``message``, or ``None`` for what needs none."""
    method, rid = message.get("method"), message.get("id")
    if rid is None or method is None:
        return None
    if method == "initialize":
        result: object = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/call":
        args = (message.get("params") or {}).get("arguments") or {}  # type: ignore[union-attr]
        result = {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode() + b"\n"
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n"


def main() -> None:
    rng = random.Random(int(sys.argv[1]))
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        reply = answer(message) if isinstance(message, dict) else None
        if reply is None:
            continue
        if message.get("method") == "tools/call":
            for _ in range(rng.randint(1, 3)):
                frame = rng.choice(TO_CLIENT) if rng.random() < 0.3 else hostile_frame(rng)
                out.write(split_framing(rng, frame))
        out.write(reply)
        out.flush()


if __name__ == "__main__":
    main()
