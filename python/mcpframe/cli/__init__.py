"""The ``mcpframe`` command: ``bench``, ``serve``, ``proxy`` (forwards), ``tap`` and ``probe`` (inspect).

The server is imported only when ``serve`` runs (it lives in another layer, with optional
dependencies); the benchmark machinery is light and uses only mcpframe's own dependencies.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from mcpframe import __version__, core
from mcpframe._extras import install_hint
from mcpframe.bench import generated
from mcpframe.bench.callgrind import CallgrindMissing
from mcpframe.bench.corpus import CORPORA
from mcpframe.bench.report import environment, method, render, summary, to_json
from mcpframe.bench.runner import GENERATED, Settings, run
from mcpframe.bench.svg import chart

__all__ = ["main"]

_SERVE_MODULE = "mcpframe.cli.serve"


def _version() -> str:
    """``mcpframe 0.1.0 (native core, Python 3.11.7)``: what a bug report needs first."""
    return f"mcpframe {__version__} ({core.BACKEND} core, Python {platform.python_version()})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcpframe", description="A fast, correct MCP wire layer.")
    parser.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    bench = commands.add_parser(
        "bench",
        help="decode/encode benchmarks against orjson, msgspec and the mcp SDK",
        description="Run the contenders side by side on deterministic MCP traffic and check the targets.",
    )
    bench.add_argument(
        "--corpus",
        choices=(*CORPORA, GENERATED, "all"),
        default="all",
        help="which corpus to run: a built-in one, the generated ~47 MB one (made on first use and "
        "cached), or all (default)",
    )
    bench.add_argument(
        "--seed",
        type=int,
        default=generated.DEFAULT_SEED,
        help=f"seed of the generated corpus (default: {generated.DEFAULT_SEED})",
    )
    bench.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="interleaved rounds of the strict decode section, medians reported (default: 5)",
    )
    bench.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="where the generated corpus is cached "
        "(default: $MCPFRAME_BENCH_CACHE, else ~/.cache/mcpframe/bench)",
    )
    bench.add_argument(
        "--slice-mb",
        type=float,
        default=8.0,
        metavar="MB",
        help="--clock instructions: MiB of the generated corpus each callgrind child decodes (default: 8)",
    )
    bench.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON to PATH")
    bench.add_argument("--chart", type=Path, metavar="PATH", help="write an SVG bar chart to PATH")
    bench.add_argument(
        "--quick",
        action="store_true",
        help="tiny corpora and one timed round: a smoke test, not a measurement",
    )
    bench.add_argument(
        "--chunk",
        type=int,
        default=64 * 1024,
        metavar="BYTES",
        help="feed size of the streaming decoders (default: 65536)",
    )
    bench.add_argument(
        "--clock",
        choices=("wall", "cpu", "instructions"),
        default="wall",
        help="wall time, this process's CPU time (steadier on a busy machine), or instructions counted by "
        "valgrind's callgrind (strict decode contenders only, one child each); default: wall",
    )
    bench.add_argument(
        "--targets",
        action="store_true",
        help="also judge the project's speed goals per corpus (for mcpframe's developers)",
    )
    commands.add_parser("serve", help="run an MCP server (options: mcpframe serve --help)", add_help=False)
    commands.add_parser(
        "tap", help="record the traffic of a stdio server (mcpframe tap --help)", add_help=False
    )
    commands.add_parser(
        "proxy",
        help="bridge, multiplex or gateway MCP traffic (mcpframe proxy --help)",
        add_help=False,
    )
    commands.add_parser(
        "probe",
        help="handshake with a server and list what it offers (mcpframe probe --help)",
        add_help=False,
    )
    return parser


class _Progress:
    """One line per step on stderr, rewritten in place on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._start = time.perf_counter()

    def __call__(self, step: str) -> None:
        line = f"[{time.perf_counter() - self._start:6.1f}s] {step}"
        if self._tty:
            self._stream.write(f"\r\x1b[K{line}")
        else:
            self._stream.write(f"{line}\n")
        self._stream.flush()

    def done(self) -> None:
        """Finish the in-place line."""
        self("done")
        if self._tty:
            self._stream.write("\n")


def _bench(args: argparse.Namespace) -> int:
    if args.chunk < 1:
        print("mcpframe bench: --chunk must be at least 1", file=sys.stderr)
        return 2
    if args.rounds < 1 or args.slice_mb <= 0:
        print("mcpframe bench: --rounds must be at least 1 and --slice-mb positive", file=sys.stderr)
        return 2
    corpora = (*CORPORA, GENERATED) if args.corpus == "all" else (args.corpus,)
    settings = Settings(
        corpora=corpora,
        quick=args.quick,
        chunk=args.chunk,
        clock=args.clock,
        seed=args.seed,
        rounds=args.rounds,
        cache=args.cache_dir,
        slice_bytes=int(args.slice_mb * 1024 * 1024),
    )
    env = environment()
    progress = _Progress(sys.stderr)
    try:
        results = run(settings, progress)
    except CallgrindMissing as exc:
        print(f"\nmcpframe bench: {exc}", file=sys.stderr)
        return 2
    progress.done()
    sys.stdout.write(render(results, env, targets=args.targets))
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(results, env), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)  # stdout ends with the summary
    if args.chart is not None:
        args.chart.write_text(chart(results, subtitle=summary(env), method=method(results)), encoding="utf-8")
        print(f"wrote {args.chart}", file=sys.stderr)
    return 0


def _serve(argv: list[str]) -> int:
    try:
        module = importlib.import_module(_SERVE_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name in ("mcpframe.server", _SERVE_MODULE):
            print(f"mcpframe serve: this build has no server ({_SERVE_MODULE} is missing)", file=sys.stderr)
        else:
            print(
                f"mcpframe serve: a dependency is missing ({exc}); try: {install_hint('http')}",
                file=sys.stderr,
            )
        return 2
    serve_main = getattr(module, "serve_main", None)
    if serve_main is None:
        print(f"mcpframe serve: {_SERVE_MODULE} has no serve_main()", file=sys.stderr)
        return 2
    return int(serve_main(argv))


def _probe(argv: list[str]) -> int:
    try:
        module = importlib.import_module("mcpframe.cli.probe")
    except ModuleNotFoundError as exc:
        print(
            f"mcpframe probe: a dependency is missing ({exc}); try: {install_hint('http')}", file=sys.stderr
        )
        return 2
    return int(module.probe_main(argv))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcpframe`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"]:
        return _serve(args[1:])  # everything after "serve" belongs to the server's own parser
    if args[:1] == ["tap"]:
        from .tap import tap_main  # noqa: PLC0415 - light (threads and the core), loaded when used

        return tap_main(args[1:])
    if args[:1] == ["probe"]:
        return _probe(args[1:])
    if args[:1] == ["proxy"]:
        from .proxy import proxy_main  # noqa: PLC0415 - the proxy's parser, loaded when used

        return proxy_main(args[1:])
    parser = _parser()
    namespace = parser.parse_args(args)
    if namespace.command == "bench":
        return _bench(namespace)
    parser.print_help()
    return 2
