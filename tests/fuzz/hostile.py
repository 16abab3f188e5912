"""Hostile input against every listening surface of mcpframe, seeded and reproducible.

    PYTHONPATH=python python -m tests.fuzz.hostile [--seconds 120] [--seed 1] [SURFACE ...]

Surfaces: ``stdio`` (``mcpframe serve examples/quickstart_server.py``), ``lean`` (the same with ``--http
--http-server mcpframe``), ``uvicorn`` (``--http``), ``listen`` (``mcpframe proxy --listen`` in front of the
stdio server), ``proxy-url`` (``mcpframe proxy URL`` on stdio, in front of the lean server), ``client``
(``mcpframe.Client`` reading from ``hostile_peer.py``). After every hostile input a valid ``tools/call add``
must be answered, right; see ``stdio_drive``, ``http_drive`` and ``client_drive`` for what else counts as a
finding. The children's stderr goes to ``--logs`` (default /tmp/mcpframe-hostile). Exit status 1 on findings.
``tests/fuzz/test_hostile_fuzz.py`` runs a few hundred inputs of each in CI.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
from tests.fuzz.client_drive import drive_client
from tests.fuzz.http_drive import drive_http, wait_for_url
from tests.fuzz.stdio_drive import Report, drive_stdio

ROOT = Path(__file__).resolve().parents[2]
SERVER = "examples/quickstart_server.py"
SURFACES = ("stdio", "lean", "uvicorn", "listen", "proxy-url", "client")


def child_env(**extra: str) -> dict[str, str]:
    """This checkout's mcpframe first on the children's path."""
    path = os.pathsep.join(filter(None, [str(ROOT / "python"), str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def http_command(surface: str) -> list[str]:
    py = sys.executable
    if surface == "listen":
        return [py, "-m", "mcpframe", "proxy", "--listen", "http://127.0.0.1:0/mcp", "--", py, SERVER]
    server = ["--http-server", "mcpframe"] if surface == "lean" else ["--http-server", "uvicorn"]
    return [py, "-m", "mcpframe", "serve", SERVER, "--http", "--port", "0", *server]


def run_surface(surface: str, seed: int, seconds: float, logs: Path, **limits: float) -> Report:
    """One surface for ``seconds`` (or ``limits["max_steps"]`` inputs)."""
    log = logs / f"{surface}-{seed}.stderr"
    steps = int(limits.get("max_steps", 10**9))
    common: dict[str, object] = {"seed": seed, "seconds": seconds, "max_steps": steps, "cwd": str(ROOT)}
    if surface == "stdio":
        command = [sys.executable, "-m", "mcpframe", "serve", SERVER]
        return drive_stdio(command, surface=surface, env=child_env(), stderr_log=log, **common)
    if surface in ("lean", "uvicorn", "listen"):
        wait = limits.get("incomplete_wait", 1.0)
        return drive_http(
            http_command(surface),
            surface=surface,
            env=child_env(),
            stderr_log=log,
            incomplete_wait=wait,
            **common,
        )
    if surface == "proxy-url":
        return _proxy_url(seed, log, common)
    return anyio.run(lambda: drive_client(seed=seed, seconds=seconds, max_steps=steps, stderr_log=log))


def _proxy_url(seed: int, log: Path, common: dict[str, object]) -> Report:
    upstream = subprocess.Popen(
        http_command("lean"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=child_env(),
        cwd=ROOT,
    )
    try:
        with open(log.with_suffix(".upstream"), "wb") as up_log:
            assert upstream.stderr is not None
            url = wait_for_url(upstream.stderr, up_log)
            command = [sys.executable, "-m", "mcpframe", "proxy", url]
            return drive_stdio(command, surface="proxy-url", env=child_env(), stderr_log=log, **common)
    finally:
        upstream.kill()
        upstream.wait()


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "surfaces", nargs="*", metavar="SURFACE", help=f"any of {', '.join(SURFACES)} (default: all)"
    )
    parser.add_argument("--seconds", type=float, default=120.0, help="per surface (default 120)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--logs", type=Path, default=Path("/tmp/mcpframe-hostile"))
    args = parser.parse_args(argv)
    if unknown := set(args.surfaces) - set(SURFACES):
        parser.error(f"unknown surface(s): {', '.join(sorted(unknown))}")
    args.logs.mkdir(parents=True, exist_ok=True)
    logging.getLogger("mcpframe").setLevel(logging.ERROR)  # a client warning per rejected frame: by design
    found = 0
    for surface in args.surfaces or SURFACES:
        report = run_surface(surface, args.seed, args.seconds, args.logs)
        out(report.summary())
        found += len(report.findings)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
