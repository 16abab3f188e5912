"""A ``Message`` refuses pickling and copying with one clear ``TypeError`` in both backends, for every
pickle protocol: before, protocols 0 and 1 wrote a message that could not be loaded back."""

from __future__ import annotations

import copy
import pickle
from types import ModuleType

import pytest

from ._support import stream

FRAME = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":[1,2.5]}}\n'
MESSAGE = r"cannot pickle 'Message' object: pickle its raw bytes \(message\.raw\) and decode them again"


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_refused_for_every_protocol(backend: ModuleType, lazy: bool, protocol: int) -> None:
    (message,) = stream(backend, FRAME, lazy=lazy)
    with pytest.raises(TypeError, match=MESSAGE):
        pickle.dumps(message, protocol)


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copy_refused(backend: ModuleType, how: object) -> None:
    (message,) = stream(backend, FRAME)
    with pytest.raises(TypeError, match=MESSAGE):
        how(message)  # type: ignore[operator]


def test_raw_round_trips_instead(backend: ModuleType) -> None:
    """What the message says to do works: its raw bytes pickle, and decode to an equal message."""
    (message,) = stream(backend, FRAME)
    raw = pickle.loads(pickle.dumps(message.raw))
    (again,) = stream(backend, raw + b"\n")
    assert again == message
