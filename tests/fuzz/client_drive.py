"""Drive ``mcpframe.Client`` against a hostile stdio server (``hostile_peer.py``): every call must still get
its own right answer, at once, whatever the server wrote before it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
from tests.fuzz.stdio_drive import Report, rss_kib

from mcpframe.client import Client

PEER = Path(__file__).resolve().parent / "hostile_peer.py"


async def drive_client(
    *, seed: int, seconds: float, max_steps: int = 10**9, stderr_log: Path | None = None
) -> Report:
    """Call ``add`` over and over on a hostile server for ``seconds`` (or ``max_steps`` calls)."""
    report = Report("client", seed)
    start = time.monotonic()
    with open(stderr_log or "/dev/null", "wb") as log:
        async with Client.stdio(sys.executable, [str(PEER), str(seed)], stderr=log, timeout=60) as client:
            step = 0
            report.rss_kib.append(rss_kib(os.getpid()))
            while time.monotonic() - start < seconds and step < max_steps:
                step += 1
                report.steps = step
                try:
                    with anyio.fail_after(60):
                        result = await client.call_tool("add", {"a": step, "b": 1})
                except Exception as exc:  # every failure is a finding: the peer always answers correctly
                    report.findings.append(f"step {step}: {type(exc).__name__}: {str(exc)[:300]}")
                    if len(report.findings) > 20:
                        break
                    continue
                text = (result.get("content") or [{}])[0].get("text")
                if text != str(step + 1):
                    report.findings.append(f"step {step}: wrong answer {str(result)[:300]}")
    report.rss_kib.append(rss_kib(os.getpid()))
    report.seconds = time.monotonic() - start
    return report
