"""``make fuzz``: run every fuzz target for a while, say how many inputs ran and what was found.

Targets, each for ``--seconds`` (``FUZZ_SECONDS``, default 60):
- ``stream``, ``frame``: the cargo-fuzz targets of the pure Rust core (``fuzz/fuzz_targets``), built
  with the stable toolchain: ``RUSTC_BOOTSTRAP=1`` unlocks the ``-Z`` flags cargo-fuzz passes (this
  machine has no nightly to download), and cargo-fuzz itself is installed, pinned, into
  ``.cache/tools`` on first use;
- ``python``: atheris on raw bytes, native vs python backend (``fuzz/python/fuzz_core.py``);
- ``structured``: atheris driving the hypothesis strategies of ``tests/core/strategies.py``;
- ``hypothesis``: ``tests/core/test_differential.py`` under the long ``fuzz`` profile (examples, not
  seconds: ``HYPOTHESIS_FUZZ_EXAMPLES`` per test, about 5 per second of ``--seconds`` by default).

The coverage-guided targets start from ``fuzz/seeds`` (committed) plus their own growing corpus in
``fuzz/corpus/<target>``; findings go to ``fuzz/artifacts/<target>/`` with a minimized copy
(``minimized-*``). Exit status 1 when anything was found. Nothing here runs in ``make test`` or CI.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
TOOLS = ROOT / ".cache" / "tools"
CARGO_FUZZ_VERSION = "0.13.2"
RUST_TARGETS = ("stream", "frame")
ALL_TARGETS = (*RUST_TARGETS, "python", "structured", "hypothesis")
DONE = re.compile(r"Done (\d+) runs in (\d+) second")
EXAMPLES = re.compile(r"(\d+) passing, (\d+) failing")  # hypothesis statistics, per phase


@dataclass
class Outcome:
    """What one target did."""

    target: str
    inputs: int
    seconds: float
    findings: list[str]
    note: str = ""


def run(cmd: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[int, str]:
    """Run ``cmd``, its output to ``log`` (and kept in memory for parsing); its exit status and output."""
    log.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    output = proc.stdout + proc.stderr
    log.write_text(output)
    return proc.returncode, output


def new_files(folder: Path, since: float, prefixes: tuple[str, ...]) -> list[Path]:
    """Files in ``folder`` named ``<prefix>...`` written after ``since`` (findings of this run)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.startswith(prefixes) and p.stat().st_mtime >= since)


def cargo_fuzz() -> list[str]:
    """The cargo-fuzz command, installed (pinned, from crates.io) into .cache/tools on first use."""
    binary = TOOLS / "bin" / "cargo-fuzz"
    if not binary.exists():
        print(f"installing cargo-fuzz {CARGO_FUZZ_VERSION} into {TOOLS} ...", flush=True)
        install = ["cargo", "install", "--locked", "--quiet", "--root", str(TOOLS), "cargo-fuzz"]
        subprocess.run([*install, "--version", CARGO_FUZZ_VERSION], check=True)
    return [str(binary)]


RUST_ENV = {"RUSTC_BOOTSTRAP": "1"}  # cargo-fuzz's -Z flags on a stable toolchain


def fuzz_rust(target: str, seconds: int) -> Outcome:
    """One cargo-fuzz target: build, run, minimize what it found."""
    tool, logs = cargo_fuzz(), FUZZ / "findings"
    code, out = run([*tool, "build", "-O", target], logs / f"{target}-build.log", RUST_ENV, FUZZ)
    if code != 0:
        return Outcome(target, 0, 0.0, [f"build failed: see {logs / f'{target}-build.log'}"])
    corpus, artifacts = FUZZ / "corpus" / target, FUZZ / "artifacts" / target
    corpus.mkdir(parents=True, exist_ok=True)
    started = time.time()
    flags = [f"-max_total_time={seconds}", "-print_final_stats=1"]
    cmd = [*tool, "run", "-O", target, str(corpus), str(FUZZ / "seeds"), "--", *flags]
    code, out = run(cmd, logs / f"{target}.log", RUST_ENV, FUZZ)
    found = new_files(artifacts, started, ("crash-", "oom-", "timeout-", "leak-"))
    findings = []
    for path in found:
        tmin = [*tool, "tmin", "-O", "-r", "2000", target, str(path)]
        _, tmin_out = run(tmin, logs / f"{target}-tmin.log", RUST_ENV, FUZZ)
        last = re.findall(r"cargo fuzz run .*? (\S+)\s*$", tmin_out, re.MULTILINE)
        smallest = FUZZ / last[-1] if last else "n/a"
        findings.append(f"{why(out)}\n    input {path}\n    minimized {smallest}")
    if code != 0 and not found:
        findings.append(f"exit status {code}: see {logs / f'{target}.log'}")
    return Outcome(target, *runs_of(out, started), findings)


def why(output: str) -> str:
    """The failure in its own words: a Rust panic's message (with left/right), the uncaught Python
    exception (a ``Mismatch`` with both backends' views), or the sanitizer's report line."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if " panicked at " in line or "Uncaught Python exception" in line:
            return " | ".join(part.strip()[:300] for part in lines[i + 1 : i + 4])
        if "ERROR: AddressSanitizer" in line or "ERROR: libFuzzer: out-of-memory" in line:
            return line
    return "see the log"


def runs_of(output: str, started: float) -> tuple[int, float]:
    """Inputs run, from libFuzzer's last ``Done N runs`` line or its ``#N`` status lines; seconds."""
    done = DONE.findall(output)
    if done:
        return int(done[-1][0]), float(done[-1][1])
    counts = re.findall(r"^#(\d+)\s", output, re.MULTILINE)
    return (int(counts[-1]) if counts else 0), time.time() - started


def fuzz_python(target: str, seconds: int) -> Outcome:
    """The atheris target, on raw bytes (``python``) or through the strategies (``structured``)."""
    try:
        import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401, PLC0415
    except ImportError:
        return Outcome(target, 0, 0.0, [], "skipped: atheris is not installed (pip install -e '.[dev]')")
    corpus, artifacts = FUZZ / "corpus" / target, FUZZ / "artifacts" / target
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    script = str(FUZZ / "python" / "fuzz_core.py")
    mode = ["--structured"] if target == "structured" else []
    seeds = [] if mode else [str(FUZZ / "seeds")]
    flags = [f"-max_total_time={seconds}", f"-artifact_prefix={artifacts}/", "-print_final_stats=1"]
    started = time.time()
    log = FUZZ / "findings" / f"{target}.log"
    code, out = run([sys.executable, script, *mode, *flags, str(corpus), *seeds], log)
    found = new_files(artifacts, started, ("stream-",) if mode else ("crash-", "oom-", "timeout-"))
    findings = []
    for path in found:
        run([sys.executable, script, "--minimize", str(path)], FUZZ / "findings" / f"{target}-minimize.log")
        smallest = path.with_name(f"minimized-{path.name}")
        findings.append(f"{why(out)}\n    input {path}\n    minimized {smallest}")
    if code != 0 and not found:
        findings.append(f"exit status {code}: see {log}")
    return Outcome(target, *runs_of(out, started), findings)


def fuzz_hypothesis(seconds: int) -> Outcome:
    """The differential tests under the long profile; falsifying examples are in the log."""
    examples = os.environ.get("HYPOTHESIS_FUZZ_EXAMPLES", str(max(5 * seconds, 100)))
    env = {"HYPOTHESIS_PROFILE": "fuzz", "HYPOTHESIS_FUZZ_EXAMPLES": examples}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--hypothesis-show-statistics"]
    started = time.time()
    log = FUZZ / "findings" / "hypothesis.log"
    code, out = run([*cmd, "tests/core/test_differential.py"], log, env)
    inputs = sum(int(passing) + int(failing) for passing, failing in EXAMPLES.findall(out))
    failed = re.findall(r"^FAILED (\S+)", out, re.MULTILINE)
    findings = [f"{name} (falsifying example in {log})" for name in failed]
    if code not in (0, 1):
        findings.append(f"pytest exit status {code}: see {log}")
    return Outcome("hypothesis", inputs, time.time() - started, findings, f"{examples} examples per test")


def report(outcomes: list[Outcome]) -> None:
    """A table, then every finding."""
    print(f"\n{'target':<12} {'inputs':>10} {'seconds':>8} {'inputs/s':>9}  findings")
    for o in outcomes:
        rate = f"{o.inputs / o.seconds:,.0f}" if o.seconds else "-"
        print(f"{o.target:<12} {o.inputs:>10,} {o.seconds:>8.0f} {rate:>9}  {len(o.findings)} {o.note}")
    for o in outcomes:
        for finding in o.findings:
            print(f"FINDING {o.target}: {finding}")


def main() -> int:
    """Parse the options, run the chosen targets in turn, report; 1 if anything was found."""
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", "60")))
    parser.add_argument("--targets", default=os.environ.get("FUZZ_TARGETS", ",".join(ALL_TARGETS)))
    args = parser.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    unknown = set(targets) - set(ALL_TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; choose from {', '.join(ALL_TARGETS)}")
    if any(t in RUST_TARGETS for t in targets) and shutil.which("cargo") is None:
        parser.error("cargo is needed for the Rust targets (or pick --targets python,structured,hypothesis)")
    outcomes = []
    for target in targets:
        print(f"fuzzing {target} for {args.seconds} s ...", flush=True)
        if target in RUST_TARGETS:
            outcomes.append(fuzz_rust(target, args.seconds))
        elif target == "hypothesis":
            outcomes.append(fuzz_hypothesis(args.seconds))
        else:
            outcomes.append(fuzz_python(target, args.seconds))
    report(outcomes)
    return 1 if any(o.findings for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
