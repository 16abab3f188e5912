"""A short seeded run of the hostile-input fuzzer (`tests/fuzz/hostile.py`) on every surface, in CI.

Each surface gets a fixed number of hostile inputs from a fixed seed (the same inputs every run, whatever the
machine's speed), each followed by a valid call that must be answered, right. A finding fails the test with
the step and the input that led to it; `python -m tests.fuzz.hostile SURFACE --seed 20261125` replays it
(longer).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import selected_backends
from tests.fuzz.hostile import SURFACES, child_env, run_surface

pytest.importorskip("uvicorn")
pytest.importorskip("httptools")

SEED = 20261125
STEPS = {"stdio": 1500, "proxy-url": 400, "client": 500, "lean": 120, "uvicorn": 120, "listen": 120}


@pytest.mark.parametrize("backend", selected_backends())
@pytest.mark.parametrize("surface", SURFACES)
def test_hostile_inputs_leave_every_surface_answering(
    surface: str, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPFRAME_BACKEND", backend)
    assert child_env()["MCPFRAME_BACKEND"] == backend
    report = run_surface(surface, SEED, 120.0, tmp_path, max_steps=STEPS[surface], incomplete_wait=0.05)
    assert report.steps == STEPS[surface], report.summary()
    assert report.findings == [], report.summary()
