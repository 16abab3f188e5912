"""A child process for the stdio tests: serves a tiny Session on its own stdio.

Modes (argv[1]): ``serve`` answers ``echo`` (printing noise to stdout and letting a grandchild write to
stdout while handling), ``pid`` (spawns a grandchild that sleeps, returns both pids), ``ping``; after stdin
EOF it prints ``after`` to the (restored) stdout. ``stubborn`` serves like ``serve`` but ignores EOF and
keeps running until killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio

from mcpframe.session import Request, Session
from mcpframe.transports import stdio_server

GRANDCHILDREN: list[subprocess.Popen[bytes]] = []


async def handler(req: Request) -> Any:
    if req.method == "echo":
        print("noise from print() while serving")
        subprocess.run([sys.executable, "-c", "print('noise from a grandchild')"], check=True)
        os.write(1, b"noise written to fd 1\n")
        return req.params
    if req.method == "pid":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        GRANDCHILDREN.append(child)
        return {"pid": os.getpid(), "grandchild": child.pid}
    return {}


async def main(mode: str) -> None:
    async with stdio_server() as transport:
        await Session(transport, request_handler=handler).run()
    if mode == "stubborn":
        await anyio.sleep_forever()
    print("after")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "serve")
