"""Request-id bookkeeping: ``Correlator`` (our pending requests) and ``IdMap`` (proxy id remapping).

Ids the caller gives may be any ``int`` or ``str``. Ids the counter hands out stay within
``1 ..= LAST_ALLOCATED_ID`` (the positive 64-bit integers) and wrap around, as in the native backend:
Go, Rust and Java peers parse request ids as 64-bit signed integers.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Final

from mcpframe._api import Id
from mcpframe._pycore.digits import MAX_INT_DIGITS, int_to_text
from mcpframe.errors import DuplicateIdError, EncodeError, PendingLimitError, UnknownIdError

__all__ = ["Correlator", "IdMap"]


LAST_ALLOCATED_ID: Final = 2**63 - 1
_INT64_MIN: Final = -(2**63)


def _id(value: object) -> Id:
    """``value`` as an exact ``int`` or ``str`` key (``TypeError`` for anything else, bools included)."""
    kind = type(value)
    if kind is int or kind is str:
        return value  # type: ignore[return-value]
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__int__(value)
    raise TypeError(f"id must be an int or a str, not {kind.__name__}")


def _int_arg(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int")
    return int.__int__(value)


def _max_pending(value: object) -> int:
    limit = _int_arg("max_pending", value)
    if not 1 <= limit <= LAST_ALLOCATED_ID:
        raise ValueError(f"max_pending must be between 1 and {LAST_ALLOCATED_ID}")
    return limit


def _first_id(value: object) -> int:
    first = _int_arg("first_id", value)
    if not 1 <= first <= LAST_ALLOCATED_ID:
        raise ValueError(f"first_id must be between 1 and {LAST_ALLOCATED_ID}")
    return first


def _conn(value: object) -> int:
    """A connection number: an int within the 64-bit range (the native table keys it as ``i64``)."""
    conn = _int_arg("conn", value)
    if not _INT64_MIN <= conn <= LAST_ALLOCATED_ID:
        raise ValueError(f"conn must be between {_INT64_MIN} and {LAST_ALLOCATED_ID}")
    return conn


def _after(ident: int) -> int:
    """The counter's successor of ``ident``: the next integer, or 1 after ``LAST_ALLOCATED_ID``."""
    return ident + 1 if ident < LAST_ALLOCATED_ID else 1


def _free_id(start: int, busy: Container[object]) -> int:
    """The first id from ``start`` on (in counter order) that is not in ``busy``.

    The tables hold far fewer than ``LAST_ALLOCATED_ID`` entries, so one is always found.
    """
    ident = start
    while ident in busy:
        ident = _after(ident)
    return ident


def id_text(ident: Id) -> str:
    """The id as an error message shows it: ``repr`` of a string, the digits of an integer.

    An integer is written out whatever ``sys.set_int_max_str_digits()`` says (``repr`` would raise past it);
    beyond ``MAX_INT_DIGITS`` digits it is named, not written: such an id can be neither decoded nor encoded.
    """
    if isinstance(ident, str):
        return repr(ident)
    try:
        return int_to_text(ident)
    except EncodeError:
        return f"<an integer of more than {MAX_INT_DIGITS} digits>"


def _duplicate(ident: Id) -> DuplicateIdError:
    return DuplicateIdError(f"request id {id_text(ident)} is already in flight")


def _unknown(ident: Id) -> UnknownIdError:
    return UnknownIdError(f"no request in flight with id {id_text(ident)}")


def _too_many(limit: int) -> PendingLimitError:
    return PendingLimitError(f"too many requests in flight (limit {limit})")


_MISSING = object()


class Correlator:
    """Pending outgoing requests: id -> waiter, with fresh integer ids and a limit."""

    __slots__ = ("_max_pending", "_next", "_pending")

    def __init__(self, *, max_pending: int = 65536, first_id: int = 1) -> None:
        self._max_pending = _max_pending(max_pending)
        self._next = _first_id(first_id)
        self._pending: dict[Id, object] = {}

    @property
    def max_pending(self) -> int:
        """How many requests may be in flight at once."""
        return self._max_pending

    def next_id(self) -> int:
        """The next integer id not in flight (counts up, skips busy ids, wraps from ``2**63 - 1`` to 1)."""
        ident = _free_id(self._next, self._pending)
        self._next = _after(ident)
        return ident

    def allocate(self, waiter: object, /) -> int:
        """``next_id()`` and ``register()`` in one call."""
        ident = self.next_id()
        self.register(ident, waiter)
        return ident

    def register(self, id: Id, waiter: object, /) -> None:
        """Record ``waiter`` for ``id`` (``DuplicateIdError`` if in flight, ``PendingLimitError`` if full)."""
        ident = _id(id)
        if ident in self._pending:
            raise _duplicate(ident)
        if len(self._pending) >= self._max_pending:
            raise _too_many(self._max_pending)
        self._pending[ident] = waiter

    def resolve(self, id: Id, /) -> object:
        """Remove and return the waiter for ``id`` (``UnknownIdError`` if none)."""
        ident = _id(id)
        waiter = self._pending.pop(ident, _MISSING)
        if waiter is _MISSING:
            raise _unknown(ident)
        return waiter

    def pop(self, id: Id, default: object = None, /) -> object:
        """Remove and return the waiter for ``id``, or ``default``."""
        return self._pending.pop(_id(id), default)

    def get(self, id: Id, default: object = None, /) -> object:
        """The waiter for ``id`` without removing it, or ``default``."""
        return self._pending.get(_id(id), default)

    def drain(self) -> list[tuple[Id, object]]:
        """Remove every pending entry and return them in registration order."""
        entries = list(self._pending.items())
        self._pending.clear()
        return entries

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, id: object, /) -> bool:
        return _id(id) in self._pending

    def __repr__(self) -> str:
        return f"Correlator(pending={len(self._pending)}, max_pending={self._max_pending})"


class IdMap:
    """Proxy id remapping: (connection, downstream id) <-> fresh upstream integer id."""

    __slots__ = ("_by_conn", "_by_downstream", "_by_upstream", "_held", "_max_pending", "_next")

    def __init__(self, *, max_pending: int = 65536, first_id: int = 1) -> None:
        self._max_pending = _max_pending(max_pending)
        self._next = _first_id(first_id)
        self._by_upstream: dict[int, tuple[int, Id]] = {}
        self._by_downstream: dict[tuple[int, Id], int] = {}
        self._by_conn: dict[int, dict[int, None]] = {}  # conn -> its upstream ids, in mapping order
        self._held: set[int] = set()  # upstream ids whose answers an AnswerRelay holds (`hold`)

    @property
    def max_pending(self) -> int:
        """How many mappings may exist at once."""
        return self._max_pending

    def outbound(self, conn: int, id: Id, /) -> int:
        """Map ``(conn, id)`` to a fresh upstream id and return it."""
        key = (_conn(conn), _id(id))
        if key in self._by_downstream:
            raise _duplicate(key[1])
        if len(self._by_upstream) >= self._max_pending:
            raise _too_many(self._max_pending)
        upstream = _free_id(self._next, self._by_upstream)
        self._next = _after(upstream)
        self._by_upstream[upstream] = key
        self._by_downstream[key] = upstream
        self._by_conn.setdefault(key[0], {})[upstream] = None
        return upstream

    def inbound(self, upstream_id: Id, /) -> tuple[int, Id]:
        """Remove the mapping of ``upstream_id`` and return ``(conn, downstream id)``."""
        found = self.discard(upstream_id)
        if found is None:
            raise _unknown(_id(upstream_id))
        return found

    def discard(self, upstream_id: Id, /) -> tuple[int, Id] | None:
        """Remove the mapping of ``upstream_id`` if any; return ``(conn, downstream id)`` or ``None``."""
        ident = _id(upstream_id)
        key = self._by_upstream.pop(ident, None) if isinstance(ident, int) else None
        if key is None:
            return None
        upstream = self._by_downstream.pop(key)
        self._held.discard(upstream)
        owned = self._by_conn[key[0]]
        del owned[upstream]
        if not owned:
            del self._by_conn[key[0]]
        return key

    def upstream(self, conn: int, id: Id, /) -> int | None:
        """The upstream id of ``(conn, id)`` without removing it, or ``None``."""
        return self._by_downstream.get((_conn(conn), _id(id)))

    def hold(self, upstream_id: Id, /) -> bool:
        """Mark the mapping of ``upstream_id``: an ``AnswerRelay`` holds its answer for the proxy instead
        of relaying it. ``False`` if there is no such mapping."""
        ident = _id(upstream_id)
        if not isinstance(ident, int) or ident not in self._by_upstream:
            return False
        self._held.add(ident)
        return True

    def pending(self, conn: int, /) -> list[tuple[int, Id]]:
        """``(upstream id, downstream id)`` of each mapping of ``conn``, by upstream id."""
        owned = self._by_conn.get(_conn(conn), {})
        return sorted((upstream, self._by_upstream[upstream][1]) for upstream in owned)

    def drop_connection(self, conn: int, /) -> list[int]:
        """Forget every mapping of ``conn``; return their upstream ids in mapping order."""
        owned = self._by_conn.pop(_conn(conn), {})
        for upstream in owned:
            del self._by_downstream[self._by_upstream.pop(upstream)]
            self._held.discard(upstream)
        return list(owned)

    def __len__(self) -> int:
        return len(self._by_upstream)

    def __repr__(self) -> str:
        return f"IdMap(pending={len(self._by_upstream)}, max_pending={self._max_pending})"
