"""The worker-thread pool the engine runs the SDK's synchronous tools on (moved to ``mcpframe._threads``).

While the engine serves on asyncio it gives each sync ``MCPServer`` tool an async stand-in (``threaded``)
that hands the call to a ``WorkerPool`` instead of ``anyio.to_thread.run_sync``; see ``mcpframe._threads``.
"""

from __future__ import annotations

from mcpframe._threads import WorkerPool, threaded

__all__ = ["WorkerPool", "threaded"]
