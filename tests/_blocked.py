"""`all_blocked`: wait until every other task is blocked, for tests that assert what has (not) happened."""

from __future__ import annotations

import anyio


async def all_blocked() -> None:
    """`anyio.wait_all_tasks_blocked()`, that cannot fall in step with a task waking
    at a fixed period (uvicorn's main loop under `serve_asgi`, a poll, a sweep).

    On asyncio that wait looks again every 0.1 s while some task can run; a task that wakes every 0.1 s (or
    a divisor of it) can fall in step with it, found runnable every time, and the wait never returns. Each
    attempt is bounded by a few of those periods and the next starts at another phase of such a tick (a
    short pause in between), so it returns once every other task is blocked, as the wait itself means.
    """
    pause = 0.013
    while True:
        with anyio.move_on_after(0.35):
            await anyio.wait_all_tasks_blocked()
            return
        await anyio.sleep(pause)
        pause = pause * 1.7 % 0.09 + 0.005
