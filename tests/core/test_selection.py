"""Backend selection (``mcpframe.core``) and the shared exception classes."""

from __future__ import annotations

import os
from types import ModuleType

import pytest

from mcpframe import core, errors

from .test_contract import contract_names


def test_backend_exports_the_contract(backend: ModuleType) -> None:
    missing = [name for name in contract_names() if not hasattr(backend, name)]
    assert missing == []


def test_selected_backend_matches_environment(backend: ModuleType) -> None:
    chosen = os.environ.get("MCPFRAME_BACKEND", "auto").strip().lower() or "auto"
    assert core.BACKEND in ("native", "python")
    if chosen in ("native", "python"):
        assert chosen == core.BACKEND
    assert core.load_backend(core.BACKEND).Decoder is core.Decoder
    assert (core.PARSE_ERROR, core.INVALID_REQUEST) == (-32700, -32600)


def test_unknown_backend_name(backend: ModuleType) -> None:
    with pytest.raises(ValueError, match="MCPFRAME_BACKEND"):
        core.load_backend("fastest")


def test_exceptions_are_the_shared_classes(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register(1, None)
    with pytest.raises(errors.DuplicateIdError):
        correlator.register(1, None)
    with pytest.raises(errors.UnknownIdError):
        correlator.resolve(2)
    with pytest.raises(errors.EncodeError):
        backend.encode({1})
    decoder = backend.Decoder()
    decoder.close()
    with pytest.raises(errors.DecoderClosedError) as info:
        decoder.feed(b"")
    assert type(info.value) is errors.DecoderClosedError
