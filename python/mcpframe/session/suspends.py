"""``Session.suspends``: which requests' handlers surely suspend in their first step.

A Session starts such a request in a task of its own rather than eagerly (``session/eager.py``): an eager
start would only add the hand-over of its host task (~19k instructions). The hook is asked about every
request that could start eagerly, so besides any callable it takes a ``SuspendRule``: plain data that the
Session checks itself, with no call (``Session._start``).
"""

from __future__ import annotations

import logging
from collections.abc import Container
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpframe.session.request import Request

__all__ = ["SuspendRule", "suspends_failed"]


class SuspendRule:
    """The requests of ``method`` whose ``params`` is an object with a string ``key`` member that is one
    of ``names`` surely suspend.

    ``names`` is read each time, so it can be a set its owner keeps current (a server's `def` tools).
    """

    __slots__ = ("key", "method", "names")

    def __init__(self, method: str, key: str, names: Container[str]) -> None:
        self.method = method
        self.key = key
        self.names = names

    def __repr__(self) -> str:
        return f"SuspendRule({self.method!r}, {self.key!r}, {self.names!r})"

    def __call__(self, request: Request) -> bool:
        """Whether ``request``'s handler surely suspends (what a Session checks inline, as a hook)."""
        params = request.params
        if request.method != self.method or type(params) is not dict:
            return False
        name = params.get(self.key)
        return type(name) is str and name in self.names


def suspends_failed(request: Request) -> None:
    """Log that a ``Session.suspends`` hook raised for ``request``.

    Called from the ``except`` around the hook, where the request is registered already: its caller then
    starts it in a task of its own (the safe guess: a cancel that comes first is still found) rather than
    raising on, which would leave it registered for good (its id refused as in flight), never run.
    """
    logging.getLogger("mcpframe.session").exception(
        "Session.suspends failed for %r (id %r): the request starts in a task of its own",
        request.method,
        request.id,
    )
