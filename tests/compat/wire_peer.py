"""Transport-level peers for the compat tests (run as a subprocess).

- ``reflect``: serves the drop-in ``stdio_server()`` (limit ``MCPFRAME_COMPAT_MAX_FRAME``) and answers
  every item its read stream yields with a ``test/item`` notification describing it, printing to stdout
  on the way (stdout protection must keep that off the wire).
- ``emit``: a raw peer that, for each request line it reads, writes the request's ``params.data`` string
  to stdout as latin-1 (one byte per character).
- ``stubborn``: starts a grandchild (``sleep``), announces both pids in a ``test/pids`` notification,
  then ignores the end of its stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification

from mcpframe.compat import mcp_sdk


def describe(item: SessionMessage | Exception) -> dict[str, Any]:
    if isinstance(item, Exception):
        return {"exception": type(item).__name__, "code": getattr(item, "code", None), "text": str(item)}
    message = item.message
    return {"class": type(message).__name__, "dump": message.model_dump(mode="json", exclude_unset=True)}


async def reflect() -> None:
    limit = int(os.environ.get("MCPFRAME_COMPAT_MAX_FRAME", "1024"))
    async with mcp_sdk.stdio_server(max_frame=limit) as (read, write), write:
        async for item in read:
            print("stray print while serving")
            note = JSONRPCNotification(jsonrpc="2.0", method="test/item", params=describe(item))
            await write.send(SessionMessage(note))


def emit() -> None:
    for line in sys.stdin.buffer:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = line.decode("latin-1")  # a client told to speak latin-1
        data = json.loads(text)["params"]["data"]
        sys.stdout.buffer.write(data.encode("latin-1"))
        sys.stdout.buffer.flush()


def stubborn() -> None:
    grandchild = subprocess.Popen(["sleep", "300"])
    pids = {"child": os.getpid(), "grandchild": grandchild.pid}
    note = {"jsonrpc": "2.0", "method": "test/pids", "params": pids}
    sys.stdout.write(json.dumps(note) + "\n")
    sys.stdout.flush()
    sys.stdin.read()
    time.sleep(300)


if __name__ == "__main__":
    {"reflect": lambda: anyio.run(reflect), "emit": emit, "stubborn": stubborn}[sys.argv[1]]()
