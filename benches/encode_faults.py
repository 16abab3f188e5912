"""System time and minor page faults of encoding large lines: native ``encode`` against
``orjson.dumps(msg) + b"\\n"`` (and other builds of ``_core`` with ``--build NAME=PATH``).

Usage: ``python benches/encode_faults.py [--messages 2000] [--passes 20] [--build before=/tmp/core.so]``.

The corpus: ``--messages`` tool results with texts of 100 bytes to 200 KB (sizes uniform, or with
``--spread log`` log-uniform; a seeded generator), one text item each (``--shape many``: items of 200
bytes, so that a line grows step by step); a pass keeps its lines until it ends (``--drop``: each line
is dropped as soon as it is made, a writer's pattern). Each encoder is checked against orjson's bytes
in one child process, then timed in fresh ones (glibc's malloc tunes its mmap threshold from the blocks
a process frees, so an encoder must not inherit a heap another one, or the check, left), which build
the corpus and make ``--passes`` passes while ``resource.getrusage`` brackets them. The figures are the
user and system CPU time and the minor faults of those passes alone.

What it looks for: a line that outgrows the native encoder's scratch buffer is written into a
``bytes`` object grown as it goes; shrinking it at the end with ``realloc`` can cost, above glibc's mmap
threshold, an ``mremap``, and the block later freed is the smaller one, so the threshold may stay below
the next line's request: each such line is then mapped, faulted in page by page and unmapped again,
which shows as system time and faults. (On these corpora it did not show for any build: see
``benches/README.md``.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import random
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ is None and "mcpframe" not in sys.modules:  # pragma: no cover - run from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import orjson

from mcpframe import _core


def _corpus(count: int, seed: int, spread: str, shape: str) -> list[Any]:
    """``count`` tool results with texts of 100 bytes to 200 KB (sizes uniform, or log-uniform), as
    one text item (``shape`` ``one``) or items of 200 bytes (``many``)."""
    rng = random.Random(seed)
    words = ["the", "server", "returned", "a", "list", "of", "files", "matching", "pattern", "in", "repo\n"]
    messages = []
    for i in range(count):
        if spread == "log":
            size = int(math.exp(rng.uniform(math.log(100), math.log(200_000))))
        else:
            size = rng.randint(100, 200_000)
        text = " ".join(rng.choice(words) for _ in range(size // 6 + 1))[:size]
        if shape == "many":
            # Many short items: the native buffer doubles step by step instead of growing once.
            content = [{"type": "text", "text": text[at : at + 200]} for at in range(0, len(text), 200)]
        else:
            content = [{"type": "text", "text": text}]
        messages.append({"jsonrpc": "2.0", "id": i, "result": {"content": content}})
    return messages


def _encoder(name: str, path: str) -> Callable[[Any], bytes]:
    """``orjson`` (with the newline), the installed ``_core``, or the build of ``_core`` at ``path``."""
    if name == "orjson":
        return lambda m: orjson.dumps(m) + b"\n"
    if not path:
        return _core.encode
    found = importlib.util.spec_from_file_location("mcpframe._core", path)
    if found is None or found.loader is None:
        raise SystemExit(f"not an extension module: {path}")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module.encode  # type: ignore[no-any-return]


def _child(args: argparse.Namespace) -> None:
    """One encoder in this process: check it, or time ``--passes`` passes with ``getrusage``."""
    messages = _corpus(args.messages, args.seed, args.spread, args.shape)
    encode = _encoder(args.encoder, args.path)
    if args.check:
        # In its own process: orjson's frees here would move this process's mmap threshold.
        for m in messages:
            if encode(m) != orjson.dumps(m) + b"\n":
                raise SystemExit(f"{args.encoder} does not give orjson's bytes")
        return
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(args.passes):
        if args.drop:
            for m in messages:
                encode(m)
        else:
            lines = [encode(m) for m in messages]
            del lines
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "user": after.ru_utime - before.ru_utime,
                "sys": after.ru_stime - before.ru_stime,
                "minflt": after.ru_minflt - before.ru_minflt,
            }
        )
    )


def main() -> None:
    """Run each encoder in its own child process and print their figures side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3, help="child processes per encoder (best kept)")
    parser.add_argument("--build", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--spread", choices=("uniform", "log"), default="uniform", help="text sizes")
    parser.add_argument("--shape", choices=("one", "many"), default="one", help="one text, or 200-byte items")
    parser.add_argument("--drop", action="store_true", help="drop each line at once (default: keep a pass's)")
    parser.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--encoder", help=argparse.SUPPRESS)
    parser.add_argument("--path", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.encoder:
        _child(args)
        return
    encoders = [("native", ""), ("orjson", "")]
    encoders += [tuple(spec.split("=", 1)) for spec in args.build]  # type: ignore[misc]
    common = ["--messages", str(args.messages), "--passes", str(args.passes), "--seed", str(args.seed)]
    common += ["--spread", args.spread, "--shape", args.shape]
    common += ["--drop"] if args.drop else []
    runs = f"{args.messages} messages x {args.passes} passes, best of {args.runs}"
    print(f"python {sys.version.split()[0]}  {runs}, text sizes {args.spread}, shape {args.shape}")
    for name, path in encoders:
        command = [sys.executable, __file__, *common, "--encoder", name, "--path", path]
        subprocess.run([*command, "--check"], check=True)
        runs = []
        for _ in range(args.runs):
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            runs.append(json.loads(done.stdout))
        best = min(runs, key=lambda run: run["user"] + run["sys"])
        systems = ", ".join(f"{run['sys']:.2f}" for run in runs)
        print(
            f"{name:8} user {best['user']:6.2f} s  sys {best['sys']:6.2f} s  minor faults {best['minflt']:8d}"
            f"  (sys per run: {systems})",
            flush=True,
        )


if __name__ == "__main__":
    main()
