"""Instructions per decoded message, counted by ``valgrind --tool=callgrind`` (steady on a busy machine).

Each contender runs in a child process of its own under callgrind (``python -m
mcpframe.bench.callgrind --child KEY ...``): the child imports every contender's library, reads the same
slice of the corpus in the same chunks, then decodes it once through :func:`strict.run_once` (the
baseline child, ``KEY=none``, skips only that pass). A contender's figure is its child's total minus the
baseline's, divided by the slice's messages: start-up, imports and reading cancel out.
``PYTHONHASHSEED=0`` keeps the children's start-up alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpframe.bench import generated, strict

__all__ = ["BASELINE", "CallgrindMissing", "InstrRow", "SliceSpec", "count", "main"]

BASELINE = "none"


class CallgrindMissing(RuntimeError):
    """``valgrind`` is not on PATH."""


@dataclass(frozen=True)
class SliceSpec:
    """Which bytes a child decodes: a built-in corpus, or the first ``limit`` bytes of a generated one."""

    corpus: str
    seed: int = generated.DEFAULT_SEED
    count: int = generated.DEFAULT_COUNT
    limit: int | None = None
    chunk: int = generated.CHUNK
    cache: Path | None = None
    file: Path | None = None  # a built-in corpus written out once, so no child builds it under valgrind

    def argv(self) -> list[str]:
        """The child's command-line options for this slice."""
        out = ["--corpus", self.corpus, "--seed", str(self.seed), "--count", str(self.count)]
        out += ["--chunk", str(self.chunk)]
        if self.limit is not None:
            out += ["--limit", str(self.limit)]
        if self.cache is not None:
            out += ["--cache", str(self.cache)]
        if self.file is not None:
            out += ["--file", str(self.file)]
        return out

    def source(self) -> strict.Source:
        """The slice, read in chunks."""
        if self.file is not None:
            return strict.from_file(self.corpus, self.file, self.chunk, self.limit)
        if self.corpus == "generated":
            made = generated.load(self.seed, self.count, self.cache)
            return strict.from_file("generated", made.path, self.chunk, self.limit)
        return strict.builtin(self.corpus, self.chunk)  # type: ignore[arg-type]


@dataclass
class InstrRow:
    """One contender's instructions on one slice."""

    corpus: str
    key: str
    label: str
    messages: int
    nbytes: int
    instructions: int | None = None
    status: str = "ok"
    reason: str | None = None
    ratio: float | None = None  # instructions relative to orjson's on the same slice

    @property
    def per_message(self) -> float | None:
        """Instructions per message."""
        return self.instructions / self.messages if self.instructions is not None and self.messages else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**self.__dict__, "per_message": self.per_message}


def _total(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"callgrind wrote no totals to {path}")


def _child(key: str, spec: SliceSpec, out: Path) -> tuple[int, int]:
    """Run one child under callgrind: (total instructions, messages it decoded)."""
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    command += ["-m", "mcpframe.bench.callgrind", "--child", key, *spec.argv()]
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"child {key} exited with {done.returncode}: {' / '.join(tail)}")
    return _total(out), int(done.stdout.split()[-1])


def count(
    spec: SliceSpec, keys: Sequence[str], say: Callable[[str], None], keep: Path | None = None
) -> list[InstrRow]:
    """Instructions of each contender in ``keys`` on the slice ``spec`` (``keep``: a folder for the
    callgrind output files, for ``callgrind_annotate``)."""
    if shutil.which("valgrind") is None:
        raise CallgrindMissing(
            "valgrind is not installed (it counts the instructions): install it (Debian/Ubuntu: "
            "apt-get install valgrind) or use --clock wall|cpu"
        )
    source = spec.source()  # generated and cached here, so no child pays for it
    available = strict.feeders()
    with tempfile.TemporaryDirectory() as scratch:
        folder = keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        if spec.corpus != "generated" and spec.file is None:
            written = Path(scratch) / f"{spec.corpus}.ndjson"
            written.write_bytes(b"".join(source.chunks))
            spec = dataclasses.replace(spec, file=written)
        say(f"instructions {spec.corpus}: baseline child under callgrind")
        base, _ = _child(BASELINE, spec, folder / f"callgrind.{spec.corpus}.{BASELINE}")
        rows = []
        for key in keys:
            label = available[key].label if key in available else key
            row = InstrRow(spec.corpus, key, label, source.messages, source.nbytes)
            rows.append(row)
            if key not in available:
                row.status, row.reason = "unavailable", "its backend does not import here"
                continue
            say(f"instructions {spec.corpus}: {label} under callgrind")
            try:
                total, decoded = _child(key, spec, folder / f"callgrind.{spec.corpus}.{key}")
            except RuntimeError as exc:
                row.status, row.reason = "failed", str(exc)
                continue
            if decoded != source.messages:
                row.status, row.reason = "failed", f"decoded {decoded} of {source.messages} messages"
                continue
            row.instructions = total - base
    orjson_row = next((r for r in rows if r.key == "orjson" and r.instructions), None)
    for row in rows:
        if orjson_row is not None and orjson_row.instructions and row.instructions is not None:
            row.ratio = row.instructions / orjson_row.instructions
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """The child: decode the slice once with one contender (or not at all for the baseline)."""
    parser = argparse.ArgumentParser(prog="python -m mcpframe.bench.callgrind")
    parser.add_argument("--child", required=True, help=f"a contender key or {BASELINE!r}")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--seed", type=int, default=generated.DEFAULT_SEED)
    parser.add_argument("--count", type=int, default=generated.DEFAULT_COUNT)
    parser.add_argument("--chunk", type=int, default=generated.CHUNK)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--file", type=Path, help="read the corpus from this file")
    args = parser.parse_args(argv)
    spec = SliceSpec(args.corpus, args.seed, args.count, args.limit, args.chunk, args.cache, args.file)
    source = spec.source()
    available = strict.feeders()  # every library imported in every child, the baseline included
    gc.disable()  # as in the timed runs
    decoded = 0 if args.child == BASELINE else strict.run_once(available[args.child], source.chunks)
    print(decoded)
    return 0


if __name__ == "__main__":
    sys.exit(main())
