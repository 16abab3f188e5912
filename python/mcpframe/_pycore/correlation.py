"""Request-id bookkeeping: ``Correlator`` (our pending requests) and ``IdMap`` (proxy id remapping)."""

from __future__ import annotations

from mcpframe.errors import DuplicateIdError, PendingLimitError, UnknownIdError

__all__ = ["Correlator", "IdMap"]

Id = int | str


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


def _int_option(name: str, value: object, minimum: int | None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")
    return int(value)


def _duplicate(ident: Id) -> DuplicateIdError:
    return DuplicateIdError(f"request id {ident!r} is already in flight")


def _unknown(ident: Id) -> UnknownIdError:
    return UnknownIdError(f"no request in flight with id {ident!r}")


def _too_many(limit: int) -> PendingLimitError:
    return PendingLimitError(f"too many requests in flight (limit {limit})")


_MISSING = object()


class Correlator:
    """Pending outgoing requests: id -> waiter, with fresh integer ids and a limit."""

    __slots__ = ("_max_pending", "_next", "_pending")

    def __init__(self, *, max_pending: int = 65536, first_id: int = 1) -> None:
        self._max_pending = _int_option("max_pending", max_pending, 1)
        self._next = _int_option("first_id", first_id, None)
        self._pending: dict[Id, object] = {}

    @property
    def max_pending(self) -> int:
        """How many requests may be in flight at once."""
        return self._max_pending

    def next_id(self) -> int:
        """The next integer id not in flight (monotonic; ids in flight are skipped)."""
        ident = self._next
        while ident in self._pending:
            ident += 1
        self._next = ident + 1
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

    __slots__ = ("_by_conn", "_by_downstream", "_by_upstream", "_max_pending", "_next")

    def __init__(self, *, max_pending: int = 65536, first_id: int = 1) -> None:
        self._max_pending = _int_option("max_pending", max_pending, 1)
        self._next = _int_option("first_id", first_id, None)
        self._by_upstream: dict[int, tuple[int, Id]] = {}
        self._by_downstream: dict[tuple[int, Id], int] = {}
        self._by_conn: dict[int, dict[int, None]] = {}  # conn -> its upstream ids, in mapping order

    @property
    def max_pending(self) -> int:
        """How many mappings may exist at once."""
        return self._max_pending

    def outbound(self, conn: int, id: Id, /) -> int:
        """Map ``(conn, id)`` to a fresh upstream id and return it."""
        key = (_int_option("conn", conn, None), _id(id))
        if key in self._by_downstream:
            raise _duplicate(key[1])
        if len(self._by_upstream) >= self._max_pending:
            raise _too_many(self._max_pending)
        upstream = self._next
        while upstream in self._by_upstream:
            upstream += 1
        self._next = upstream + 1
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
        owned = self._by_conn[key[0]]
        del owned[upstream]
        if not owned:
            del self._by_conn[key[0]]
        return key

    def upstream(self, conn: int, id: Id, /) -> int | None:
        """The upstream id of ``(conn, id)`` without removing it, or ``None``."""
        return self._by_downstream.get((_int_option("conn", conn, None), _id(id)))

    def drop_connection(self, conn: int, /) -> list[int]:
        """Forget every mapping of ``conn``; return their upstream ids in mapping order."""
        owned = self._by_conn.pop(_int_option("conn", conn, None), {})
        for upstream in owned:
            del self._by_downstream[self._by_upstream.pop(upstream)]
        return list(owned)

    def __len__(self) -> int:
        return len(self._by_upstream)

    def __repr__(self) -> str:
        return f"IdMap(pending={len(self._by_upstream)}, max_pending={self._max_pending})"
