"""Shared fixtures: the core backends under test, and the hypothesis profiles.

``backend`` runs a test once per backend: only the one named by ``MCPFRAME_BACKEND`` when it is
``native`` or ``python``, otherwise both. ``both_backends`` gives ``(native, python)`` for differential
tests. A native extension that does not import is a failure when ``CI`` or ``MCPFRAME_REQUIRE_NATIVE=1``
is set (a build that silently tests only Python proves nothing) and a skip, with the cause, otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent

if importlib.util.find_spec("mcpframe") is None:
    # Not installed (no `maturin develop` / `pip install -e .` yet): test the source tree.
    sys.path.insert(0, str(ROOT / "python"))

_FALSY = {"", "0", "false", "no", "off"}


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in _FALSY


def native_required() -> bool:
    """Whether a missing native extension must fail the run instead of skipping."""
    return _flag("CI") or _flag("MCPFRAME_REQUIRE_NATIVE")


def selected_backends() -> list[str]:
    """The backends the ``backend`` fixture runs: the one MCPFRAME_BACKEND names, else both."""
    chosen = os.environ.get("MCPFRAME_BACKEND", "").strip().lower()
    if chosen in ("native", "python"):
        return [chosen]
    return ["native", "python"]


def _import_error_reason(name: str, exc: BaseException) -> str:
    why = (
        "CI or MCPFRAME_REQUIRE_NATIVE is set"
        if native_required()
        else "set MCPFRAME_REQUIRE_NATIVE=1 to fail"
    )
    return (
        f"the {name} core backend does not import ({type(exc).__name__}: {exc}); "
        f"build it with `make build-dev` ({why})"
    )


_UNIMPORTABLE: str | None = None
try:
    import mcpframe.core as _core_selector
except ImportError as _exc:  # MCPFRAME_BACKEND=native without the extension breaks `import mcpframe`
    if native_required():
        raise
    _UNIMPORTABLE = _import_error_reason("native", _exc)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Without an importable package nothing can be collected: end the run cleanly, saying why."""
    if _UNIMPORTABLE is not None:
        pytest.exit(f"skipped the whole run: {_UNIMPORTABLE}", returncode=0)


def load(name: str) -> ModuleType:
    """Load backend ``name`` or skip/fail (per ``native_required``) when it does not import."""
    try:
        return _core_selector.load_backend(name)
    except ImportError as exc:
        reason = _import_error_reason(name, exc)
        if native_required():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


class Backends(NamedTuple):
    """Both core backends, for differential tests."""

    native: ModuleType
    python: ModuleType


@pytest.fixture(params=selected_backends())
def backend(request: pytest.FixtureRequest) -> ModuleType:
    """The core backend module under test (``mcpframe._core`` or ``mcpframe._pycore``)."""
    return load(request.param)


@pytest.fixture
def both_backends() -> Backends:
    """``(native, python)``: always both, whatever MCPFRAME_BACKEND says."""
    return Backends(native=load("native"), python=load("python"))


settings.register_profile(
    "mcpframe",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("mcpframe"), derandomize=True, print_blob=True)
# For a long local hunt: HYPOTHESIS_PROFILE=thorough.
settings.register_profile("thorough", parent=settings.get_profile("mcpframe"), max_examples=2000)
# `make fuzz` (fuzz/run.py): the differential tests as a long hunt, HYPOTHESIS_FUZZ_EXAMPLES per test.
settings.register_profile(
    "fuzz",
    parent=settings.get_profile("mcpframe"),
    max_examples=int(os.environ.get("HYPOTHESIS_FUZZ_EXAMPLES", "3000")),
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if _flag("CI") else "mcpframe"))
