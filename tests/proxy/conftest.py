"""Fixtures of the proxy tests shared with other suites (the conformance harness)."""

from __future__ import annotations

from tests.conformance.conftest import conformance_harness

__all__ = ["conformance_harness"]
