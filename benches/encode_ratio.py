"""Native ``encode`` against ``orjson.dumps(msg) + b"\\n"`` on the bench corpora, for one interpreter.

Usage: ``python benches/encode_ratio.py [--corpus small mixed large] [--clock cpu|wall] [--rounds 30]``.
It prints the interpreter, which CPython paths the native core took (``_core._ffi_paths()``: the private
layouts where verified, the public C API elsewhere or under ``MCPFRAME_PUBLIC_ONLY=1``), then per corpus
the best time per message of each encoder and their ratio. Rounds alternate between the two encoders, so a
noisy neighbour slows both alike.

``--only native|orjson --repeat N`` runs one encoder N times over each corpus and times nothing: run it
under ``valgrind --tool=callgrind`` with two values of N and subtract, to count instructions per message
without the start-up (see ``benches/README.md``).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ is None and "mcpframe" not in sys.modules:  # pragma: no cover - run from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import orjson

from mcpframe import _core
from mcpframe.bench.corpus import CORPORA, Corpus, CorpusName, build

Run = Callable[[], list[bytes]]


def _runs(corpus: Corpus) -> dict[str, Run]:
    encode, dumps = _core.encode, orjson.dumps
    messages = list(corpus.messages)
    return {
        "native": lambda: [encode(m) for m in messages],
        "orjson": lambda: [dumps(m) + b"\n" for m in messages],
    }


def _check(corpus: Corpus, runs: dict[str, Run]) -> None:
    # A figure is worth nothing if the output is wrong: both must give the corpus bytes back.
    for name, run in runs.items():
        if b"".join(run()) != corpus.data:
            raise SystemExit(f"{name} does not reproduce the {corpus.name} corpus")


def _time(runs: dict[str, Run], rounds: int, clock: Callable[[], float]) -> tuple[dict[str, float], float]:
    """The best time of each run, and the median over rounds of the native/orjson time ratio (each
    round times both back to back, so the ratio of one round shares its moment's noise)."""
    best = dict.fromkeys(runs, float("inf"))
    ratios = []
    for _ in range(rounds):
        took = {}
        for name, run in runs.items():
            start = clock()
            run()
            took[name] = clock() - start
            best[name] = min(best[name], took[name])
        ratios.append(took["native"] / took["orjson"])
    return best, statistics.median(ratios)


def _collected(only: str, corpus: str, repeat: int) -> int:
    """Instructions callgrind counts over a whole run of this script with ``--only``/``--repeat``."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    command += [__file__, "--only", only, "--repeat", str(repeat), "--corpus", corpus]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no callgrind total in: {done.stderr[-500:]}")
    return int(found.group(1))


def _instructions(corpora: list[CorpusName], extra: int) -> None:
    # Two runs that differ only in `extra` more passes over the corpus: their difference is the
    # encoding alone, free of interpreter start-up and corpus building.
    for name in corpora:
        count = build(name).count
        per = {}
        for only in ("native", "orjson"):
            base = _collected(only, name, 1)
            per[only] = (_collected(only, name, 1 + extra) - base) / (extra * count)
        print(
            f"{name:6} native {per['native']:8.0f} instr/msg  orjson {per['orjson']:8.0f} instr/msg  "
            f"ratio {per['native'] / per['orjson']:.3f}",
            flush=True,
        )


def main() -> None:
    """Parse the arguments, then time or repeat."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", choices=CORPORA, default=list(CORPORA))
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--only", choices=("native", "orjson"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--instructions", type=int, metavar="N", help="callgrind: N extra passes")
    args = parser.parse_args()
    paths = getattr(_core, "_ffi_paths", dict)()
    print(f"python {sys.version.split()[0]}  ffi paths {paths}", flush=True)
    if args.instructions:
        _instructions(args.corpus, args.instructions)
        return
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    for name in args.corpus:
        corpus = build(name)
        runs = _runs(corpus)
        if args.only is not None:
            for _ in range(args.repeat):
                runs[args.only]()
            continue
        _check(corpus, runs)
        best, median = _time(runs, args.rounds, clock)
        per = {key: value / corpus.count * 1e6 for key, value in best.items()}
        print(
            f"{name:6} native {per['native']:8.3f} us/msg  orjson {per['orjson']:8.3f} us/msg  "
            f"best/best {best['native'] / best['orjson']:.3f}  median {median:.3f}  (MCPFRAME_PUBLIC_ONLY="
            f"{os.environ.get('MCPFRAME_PUBLIC_ONLY', '')!r})",
            flush=True,
        )


if __name__ == "__main__":
    main()
