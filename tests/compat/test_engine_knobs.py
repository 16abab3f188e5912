"""The engine drop-in's session knobs (keywords of ``serve``, ``serve_async``) become one SessionOptions."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from mcpframe.compat import engine
from mcpframe.session import SessionOptions


def test_knobs_are_the_session_options_fields() -> None:
    base = SessionOptions(max_in_flight=4)
    tuned = engine._knobs(base, {"max_frame": 4096, "drain_timeout": 0.5})
    assert tuned == SessionOptions(max_in_flight=4, max_frame=4096, drain_timeout=0.5)
    assert engine._knobs(base, {}) == base


def test_an_unknown_knob_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'max_inflight': .*max_in_flight"):
        engine._knobs(SessionOptions(), {"max_inflight": 3})


def test_a_knob_out_of_range_is_refused_by_the_options() -> None:
    with pytest.raises(ValueError, match="max_in_flight must be at least 1"):
        engine._knobs(SessionOptions(), {"max_in_flight": 0})
