"""A scripted stdio MCP peer for the proxy tests: plain `json`, one line per frame, no mcpframe.

It answers `initialize` (counting them: a restarted peer that was not initialized again refuses other
requests, so a test can see the proxy replay the handshake) and a few test methods:
`echo` (its params back), `slow` (never answered; a `notifications/cancelled` for it is reported back as a
`test/cancelled` notification carrying the id the peer itself saw), `progress` (two progress
notifications with the request's token), `ask` (sends the client a request `params.method` with a string
id of its own, answers with the client's answer), `notify` (sends `params.notifications`), `garbage` (a
line of non-JSON first), `crash` (exits with `params.status`).
"""

import json
import os
import sys

STATE = {"initialized": 0}
slow: set[object] = set()
asked: dict[str, object] = {}


def write(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(id: object, value: object) -> None:
    write({"jsonrpc": "2.0", "id": id, "result": value})


def initialize(id: object, params: dict) -> None:
    STATE["initialized"] += 1
    capabilities = {"tools": {"listChanged": True}, "resources": {"subscribe": True}, "logging": {}}
    info = {"name": "peer", "version": "1"}
    result(
        id,
        {"protocolVersion": params.get("protocolVersion"), "capabilities": capabilities, "serverInfo": info},
    )


def progress(id: object, params: dict) -> None:
    token = params["_meta"]["progressToken"]
    for done in (1, 2):
        body = {"progressToken": token, "progress": done}
        write({"jsonrpc": "2.0", "method": "notifications/progress", "params": body})
    result(id, {"token_seen": token})


def ask(id: object, params: dict) -> None:
    own = f"peer-{len(asked)}"
    asked[own] = id
    write({"jsonrpc": "2.0", "id": own, "method": params["method"], "params": params.get("params", {})})


def notify(id: object, params: dict) -> None:
    for name, body in params["notifications"]:
        write({"jsonrpc": "2.0", "method": name, "params": body})
    result(id, {})


def garbage(id: object, params: dict) -> None:
    sys.stdout.write("this is not json\n")
    result(id, {"after": "garbage"})


METHODS = {
    "echo": lambda id, params: result(id, {"params": params, "initializations": STATE["initialized"]}),
    "slow": lambda id, params: slow.add(id),
    "progress": progress,
    "ask": ask,
    "notify": notify,
    "garbage": garbage,
    "pid": lambda id, params: result(id, {"pid": os.getpid()}),
    "crash": lambda id, params: os._exit(params["status"]),
    "resources/subscribe": lambda id, params: result(id, {}),
    "resources/unsubscribe": lambda id, params: result(id, {}),
}


def request(message: dict) -> None:
    id, method, params = message["id"], message["method"], message.get("params") or {}
    if method == "initialize":
        initialize(id, params)
    elif not STATE["initialized"]:
        write({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": "not initialized"}})
    elif method in METHODS:
        METHODS[method](id, params)
    else:
        write({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": f"no method {method}"}})


def notification(message: dict) -> None:
    if message["method"] == "notifications/cancelled":
        rid = message["params"]["requestId"]
        write(
            {"jsonrpc": "2.0", "method": "test/cancelled", "params": {"requestId": rid, "known": rid in slow}}
        )
        slow.discard(rid)


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "method" in message and "id" in message:
            request(message)
        elif "method" in message:
            notification(message)
        else:
            origin = asked.pop(message["id"])
            result(origin, {"answer": message.get("result", message.get("error"))})


if __name__ == "__main__":
    main()
