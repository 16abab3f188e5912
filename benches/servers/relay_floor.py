"""Hand-written floors for a stdio -> stdio proxy: bytes copied both ways, nothing parsed (bench_proxy.py).

    python relay_floor.py loop|threads command args...

`loop`: one asyncio loop, a readiness callback per direction (`loop.add_reader`, `os.readv` into a reused
buffer, `os.write`): what any event-loop proxy pays per hop before it does anything. `threads`: a thread
per direction blocked in `os.readv` then `os.write`, no event loop at all. Neither is a proxy (no ids
rewritten, no frames validated, writes block): they bound what the mcpframe proxy's own design can reach.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading

_CHUNK = 262144


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _copy(src: int, dst: int) -> None:
    """Blocking copy until EOF (the `threads` floor)."""
    buf = memoryview(bytearray(_CHUNK))
    while n := os.readv(src, (buf,)):
        _write_all(dst, buf[:n].tobytes())


async def _loop(child_in: int, child_out: int) -> None:
    """Both directions in readiness callbacks; returns at the client's EOF (the `loop` floor)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def relay(src: int, dst: int) -> None:
        buf = memoryview(bytearray(_CHUNK))

        def on_readable() -> None:
            n = os.readv(src, (buf,))
            if not n:
                loop.remove_reader(src)
                if not done.done():
                    done.set_result(None)
                return
            _write_all(dst, buf[:n].tobytes())  # the writes block: the floor has no flow control to do

        os.set_blocking(src, False)
        loop.add_reader(src, on_readable)

    relay(0, child_in)
    relay(child_out, 1)
    await done


def main() -> None:
    mode, command = sys.argv[1], sys.argv[2:]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None
    assert child.stdout is not None
    child_in, child_out = child.stdin.fileno(), child.stdout.fileno()
    if mode == "threads":
        threading.Thread(target=_copy, args=(child_out, 1), daemon=True).start()
        _copy(0, child_in)
    else:
        asyncio.run(_loop(child_in, child_out))
    child.stdin.close()
    child.wait()


if __name__ == "__main__":
    main()
