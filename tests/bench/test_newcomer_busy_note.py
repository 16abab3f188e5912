"""`mcpframe bench` says so when the machine was busier than its cores during a wall-clock run.

The README's set-up command runs the bench on whatever machine the newcomer has; on a shared one the
first run printed the python encoder at 45 µs per message where the README says 3.6 (load average 10 on
2 cores), with nothing in the report to tell noise from a regression. `--clock cpu` gave 5.9.
"""

from __future__ import annotations

import contextlib
import io
import os

import pytest

from mcpframe import cli
from mcpframe.bench.report import busy_note


@pytest.mark.parametrize(
    ("clock", "cpus", "load", "noted"),
    [
        ("wall", 2, 9.8, True),
        ("wall", 2, 2.0, False),  # the bench itself and one other task: each has a core
        ("cpu", 2, 9.8, False),  # CPU time is not inflated by others' work
        ("instructions", 2, 9.8, False),
        ("wall", 2, None, False),  # no load average on this platform
        ("wall", None, 9.8, False),  # cores unknown
    ],
)
def test_the_note_only_for_a_busy_wall_clock_run(
    clock: str, cpus: int | None, load: float | None, noted: bool
) -> None:
    note = busy_note(clock, cpus, load)
    assert (note is not None) == noted
    if note is not None:
        assert note == (
            "note: load average 9.8 on 2 CPUs during the run: other work shared the cores, so these "
            "wall-clock figures are noisy; --clock cpu counts this process's CPU time only"
        )


def test_the_report_carries_it_under_the_timing_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (10_000.0, 1.0, 1.0))
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["bench", "--quick", "--corpus", "small", "--clock", "wall"]) == 0
    lines = stdout.getvalue().splitlines()
    assert lines[2].startswith("timing: ")
    assert lines[3].startswith(f"note: load average 10000.0 on {os.cpu_count()} CPUs during the run: ")
