"""``Correlator`` (pending outgoing requests) and ``IdMap`` (proxy id remapping)."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from mcpframe.errors import DuplicateIdError, MCPFrameError, PendingLimitError, UnknownIdError


def exact(text: str) -> str:
    return f"^{re.escape(text)}$"


# ---- Correlator ---------------------------------------------------------------------------------


def test_next_id_is_monotonic(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    assert [correlator.next_id() for _ in range(3)] == [1, 2, 3]
    assert len(correlator) == 0  # next_id registers nothing


def test_first_id(backend: ModuleType) -> None:
    correlator = backend.Correlator(first_id=10)
    assert correlator.next_id() == 10
    assert correlator.allocate("w") == 11


def test_next_id_skips_busy_ids(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register(1, "a")
    correlator.register(2, "b")
    correlator.register(4, "c")
    assert correlator.next_id() == 3
    assert correlator.next_id() == 5
    assert correlator.allocate("d") == 6


def test_string_ids_do_not_block_integers(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register("1", "a")
    assert correlator.next_id() == 1


def test_allocate_register_resolve(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    waiter = object()
    rid = correlator.allocate(waiter)
    assert rid == 1
    assert rid in correlator
    assert len(correlator) == 1
    assert correlator.get(rid) is waiter
    assert correlator.resolve(rid) is waiter
    assert rid not in correlator
    assert len(correlator) == 0


def test_one_and_string_one_are_distinct(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register(1, "int")
    correlator.register("1", "str")
    assert len(correlator) == 2
    assert correlator.resolve("1") == "str"
    assert 1 in correlator
    assert "1" not in correlator
    assert correlator.get(1) == "int"


def test_big_int_and_negative_ids(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register(2**70, "big")
    correlator.register(-5, "neg")
    correlator.register("", "empty")
    assert correlator.resolve(2**70) == "big"
    assert correlator.pop(-5) == "neg"
    assert correlator.get("") == "empty"


@pytest.mark.parametrize(
    ("rid", "text"),
    [(1, "request id 1 is already in flight"), ("a", "request id 'a' is already in flight")],
    ids=["int", "str"],
)
def test_duplicate_register(backend: ModuleType, rid: object, text: str) -> None:
    correlator = backend.Correlator()
    correlator.register(rid, "first")
    with pytest.raises(DuplicateIdError, match=exact(text)) as info:
        correlator.register(rid, "second")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, MCPFrameError)
    assert correlator.get(rid) == "first"
    assert len(correlator) == 1


@pytest.mark.parametrize(
    ("rid", "text"),
    [(5, "no request in flight with id 5"), ("x", "no request in flight with id 'x'")],
    ids=["int", "str"],
)
def test_resolve_unknown(backend: ModuleType, rid: object, text: str) -> None:
    correlator = backend.Correlator()
    correlator.register(1, "w")
    with pytest.raises(UnknownIdError, match=exact(text)) as info:
        correlator.resolve(rid)
    assert isinstance(info.value, KeyError)
    assert str(info.value) == text


def test_resolve_twice(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    rid = correlator.allocate("w")
    correlator.resolve(rid)
    with pytest.raises(UnknownIdError, match=exact("no request in flight with id 1")):
        correlator.resolve(rid)


def test_resolve_string_of_int_id_is_unknown(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register(1, "w")
    with pytest.raises(UnknownIdError, match=exact("no request in flight with id '1'")):
        correlator.resolve("1")


def test_pop_and_get(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register("a", "w")
    assert correlator.pop("b") is None
    assert correlator.pop("b", "default") == "default"
    assert correlator.get("b") is None
    assert correlator.get("b", 0) == 0
    assert correlator.get("a") == "w"
    assert len(correlator) == 1
    assert correlator.pop("a", "default") == "w"
    assert correlator.pop("a", "default") == "default"
    assert len(correlator) == 0


def test_none_waiter_is_stored(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register(3, None)
    assert 3 in correlator
    assert correlator.get(3, "default") is None
    assert correlator.resolve(3) is None


def test_drain_in_registration_order(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register(5, "five")
    correlator.register("b", "bee")
    correlator.register(1, "one")
    correlator.register("a", "ay")
    correlator.resolve("b")
    correlator.register("b", "bee again")  # re-registered: now last
    assert correlator.drain() == [(5, "five"), (1, "one"), ("a", "ay"), ("b", "bee again")]
    assert len(correlator) == 0
    assert correlator.drain() == []
    assert 5 not in correlator


def test_pending_limit(backend: ModuleType) -> None:
    correlator = backend.Correlator(max_pending=2)
    assert correlator.max_pending == 2
    correlator.register(1, "a")
    correlator.allocate("b")
    text = exact("too many requests in flight (limit 2)")
    with pytest.raises(PendingLimitError, match=text) as info:
        correlator.register("x", "c")
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(PendingLimitError, match=text):
        correlator.allocate("c")
    assert len(correlator) == 2
    assert "x" not in correlator
    correlator.resolve(1)
    correlator.register("x", "c")
    assert len(correlator) == 2


def test_duplicate_checked_when_full(backend: ModuleType) -> None:
    correlator = backend.Correlator(max_pending=1)
    correlator.register(1, "a")
    with pytest.raises(MCPFrameError):
        correlator.register(1, "b")
    assert correlator.get(1) == "a"


def test_default_max_pending(backend: ModuleType) -> None:
    assert backend.Correlator().max_pending == 65536


@pytest.mark.parametrize(
    "bad", [True, False, 1.0, None, (1,)], ids=["true", "false", "float", "none", "tuple"]
)
def test_bad_id_types(backend: ModuleType, bad: object) -> None:
    correlator = backend.Correlator()
    with pytest.raises(TypeError):
        correlator.register(bad, "w")
    assert len(correlator) == 0


def test_bool_id_refused_by_lookups(backend: ModuleType) -> None:
    correlator = backend.Correlator()
    correlator.register(1, "w")
    with pytest.raises(TypeError):
        correlator.resolve(True)
    with pytest.raises(TypeError):
        correlator.pop(True)
    with pytest.raises(TypeError):
        correlator.get(True)
    assert correlator.get(1) == "w"


def test_options_are_keyword_only(backend: ModuleType) -> None:
    with pytest.raises(TypeError):
        backend.Correlator(10)
    with pytest.raises(TypeError):
        backend.IdMap(10)


# ---- ids of any size; the counter's range ------------------------------------------------------

LAST = 2**63 - 1  # the largest id the counter hands out
FIRST_ID_RANGE = f"first_id must be between 1 and {LAST}"

# Ids a caller may register: exact at any size, negative, and strings (the JavaScript edge 2**53,
# the int64 edges, the uint64 edges, beyond).
ANY_IDS = [
    2**53 - 1,
    2**53,
    2**53 + 1,
    LAST,
    2**63,
    2**64 - 1,
    2**64,
    2**70,
    0,
    -1,
    -(2**63),
    -(2**63) - 1,
    -(2**64),
    -(2**70),
    "x",
    "",
    str(2**64),
]


class Int(int):
    pass


@pytest.mark.parametrize("rid", ANY_IDS, ids=repr)
def test_ids_of_any_size_in_every_correlator_method(backend: ModuleType, rid: int | str) -> None:
    correlator = backend.Correlator()
    twin = str(rid) if isinstance(rid, int) else None  # the string spelling is another id
    correlator.register(rid, "w")
    if twin is not None:
        correlator.register(twin, "twin")
    assert rid in correlator
    assert correlator.get(rid) == "w"
    with pytest.raises(DuplicateIdError, match=exact(f"request id {rid!r} is already in flight")):
        correlator.register(rid, "again")
    assert correlator.pop(rid) == "w"
    assert correlator.pop(rid, "gone") == "gone"
    with pytest.raises(UnknownIdError, match=exact(f"no request in flight with id {rid!r}")):
        correlator.resolve(rid)
    correlator.register(rid, "w2")
    assert correlator.resolve(rid) == "w2"
    correlator.register(rid, "w3")
    drained = dict(correlator.drain())
    assert drained[rid] == "w3"
    assert [type(key) for key in drained if key == rid] == [type(rid)]
    assert len(drained) == (2 if twin is not None else 1)


@pytest.mark.parametrize("rid", ANY_IDS, ids=repr)
def test_ids_of_any_size_in_every_idmap_method(backend: ModuleType, rid: int | str) -> None:
    idmap = backend.IdMap()
    up = idmap.outbound(7, rid)
    assert idmap.upstream(7, rid) == up
    with pytest.raises(DuplicateIdError, match=exact(f"request id {rid!r} is already in flight")):
        idmap.outbound(7, rid)
    assert idmap.inbound(up) == (7, rid)
    assert idmap.upstream(7, rid) is None
    up = idmap.outbound(7, rid)
    assert idmap.discard(up) == (7, rid)
    # As an upstream id: never one the counter handed out (or one no longer mapped): unknown.
    assert idmap.discard(rid) is None
    with pytest.raises(UnknownIdError, match=exact(f"no request in flight with id {rid!r}")):
        idmap.inbound(rid)
    assert len(idmap) == 0


@pytest.mark.parametrize("first_id", [1, 2, 2**53 + 1, LAST - 1, LAST, Int(LAST)], ids=repr)
def test_first_id_within_range(backend: ModuleType, first_id: int) -> None:
    assert backend.Correlator(first_id=first_id).next_id() == first_id
    assert backend.IdMap(first_id=first_id).outbound(1, "a") == first_id


@pytest.mark.parametrize("first_id", [0, -1, -(2**63), 2**63, 2**64 - 1, 2**64, 2**70, -(2**70)], ids=repr)
def test_first_id_out_of_range(backend: ModuleType, first_id: int) -> None:
    for table in (backend.Correlator, backend.IdMap):
        with pytest.raises(ValueError, match=exact(FIRST_ID_RANGE)):
            table(first_id=first_id)


@pytest.mark.parametrize("first_id", [1.0, "1", True, None], ids=repr)
def test_first_id_must_be_an_int(backend: ModuleType, first_id: object) -> None:
    for table in (backend.Correlator, backend.IdMap):
        with pytest.raises(TypeError, match=exact("first_id must be an int")):
            table(first_id=first_id)
        # the type is checked before the range: an out-of-range max_pending still wins
        with pytest.raises(ValueError, match=exact(f"max_pending must be between 1 and {LAST}")):
            table(max_pending=0, first_id=first_id)


@pytest.mark.parametrize("limit", [0, -1, 2**63, 2**70, -(2**64)], ids=repr)
def test_max_pending_range(backend: ModuleType, limit: int) -> None:
    for table in (backend.Correlator, backend.IdMap):
        with pytest.raises(ValueError, match=exact(f"max_pending must be between 1 and {LAST}")):
            table(max_pending=limit)
        assert table(max_pending=LAST).max_pending == LAST


def test_counter_wraps_to_one_skipping_busy_ids(backend: ModuleType) -> None:
    correlator = backend.Correlator(first_id=LAST - 1)
    for busy in (LAST, 1, 3, 2**63, "2"):
        correlator.register(busy, "busy")
    assert correlator.allocate("a") == LAST - 1
    assert correlator.next_id() == 2  # LAST and 1 are in flight; 2**63 is beyond the range
    assert correlator.allocate("b") == 4
    correlator.resolve(LAST)
    assert correlator.next_id() == 5  # counting on from 4, not back to the freed id
    assert correlator.get(LAST - 1) == "a"


def test_idmap_counter_wraps_to_one(backend: ModuleType) -> None:
    idmap = backend.IdMap(first_id=LAST - 1)
    assert [idmap.outbound(1, rid) for rid in ("a", "b", "c")] == [LAST - 1, LAST, 1]
    assert idmap.inbound(LAST) == (1, "b")
    assert idmap.inbound(1) == (1, "c")
    assert idmap.outbound(2, "a") == 2
    assert sorted(idmap.drop_connection(1)) == [LAST - 1]


@pytest.mark.parametrize("conn", [-(2**63) - 1, 2**63, 2**64, -(2**70)], ids=repr)
def test_conn_is_a_64_bit_int(backend: ModuleType, conn: int) -> None:
    idmap = backend.IdMap()
    text = exact(f"conn must be between {-(2**63)} and {LAST}")
    with pytest.raises(ValueError, match=text):
        idmap.outbound(conn, 1)
    with pytest.raises(ValueError, match=text):
        idmap.upstream(conn, 1)
    with pytest.raises(ValueError, match=text):
        idmap.drop_connection(conn)
    assert len(idmap) == 0
    for edge in (-(2**63), LAST):
        up = idmap.outbound(edge, 1)
        assert idmap.upstream(edge, 1) == up
        assert idmap.inbound(up) == (edge, 1)


# ---- IdMap --------------------------------------------------------------------------------------


def test_outbound_gives_fresh_ids(backend: ModuleType) -> None:
    idmap = backend.IdMap()
    assert idmap.outbound(1, 1) == 1
    assert idmap.outbound(2, 1) == 2  # same downstream id on another connection
    assert idmap.outbound(1, "1") == 3  # 1 and "1" are distinct
    assert idmap.outbound(1, 2**70) == 4
    assert len(idmap) == 4
    assert idmap.inbound(1) == (1, 1)
    assert idmap.outbound(1, 1) == 5  # fresh, not reused
    assert idmap.upstream(1, 1) == 5


def test_first_id_for_idmap(backend: ModuleType) -> None:
    idmap = backend.IdMap(first_id=100)
    assert idmap.outbound(7, "a") == 100


def test_inbound_returns_and_removes(backend: ModuleType) -> None:
    idmap = backend.IdMap()
    up_int = idmap.outbound(3, 9)
    up_str = idmap.outbound(3, "9")
    assert idmap.inbound(up_str) == (3, "9")
    assert type(idmap.inbound(up_int)[1]) is int
    assert len(idmap) == 0
    with pytest.raises(UnknownIdError, match=exact(f"no request in flight with id {up_int}")):
        idmap.inbound(up_int)


def test_inbound_string_id_is_unknown(backend: ModuleType) -> None:
    idmap = backend.IdMap()
    upstream = idmap.outbound(1, 1)
    with pytest.raises(UnknownIdError, match=exact(f"no request in flight with id '{upstream}'")):
        idmap.inbound(str(upstream))
    assert len(idmap) == 1


def test_duplicate_outbound(backend: ModuleType) -> None:
    idmap = backend.IdMap()
    idmap.outbound(1, "r")
    idmap.outbound(1, 7)
    with pytest.raises(DuplicateIdError, match=exact("request id 'r' is already in flight")):
        idmap.outbound(1, "r")
    with pytest.raises(DuplicateIdError, match=exact("request id 7 is already in flight")):
        idmap.outbound(1, 7)
    assert len(idmap) == 2
    assert idmap.outbound(2, "r") == 3


def test_discard_and_upstream(backend: ModuleType) -> None:
    idmap = backend.IdMap()
    upstream = idmap.outbound(4, "q")
    assert idmap.upstream(4, "q") == upstream
    assert idmap.upstream(4, "nope") is None
    assert idmap.upstream(5, "q") is None
    assert idmap.discard(upstream) == (4, "q")
    assert idmap.discard(upstream) is None
    assert idmap.upstream(4, "q") is None
    idmap.outbound(4, "q")  # the downstream id is free again


def test_drop_connection(backend: ModuleType) -> None:
    idmap = backend.IdMap()
    a1 = idmap.outbound(1, "a")
    b1 = idmap.outbound(2, "a")
    a2 = idmap.outbound(1, 2)
    a3 = idmap.outbound(1, "c")
    idmap.inbound(a3)
    assert sorted(idmap.drop_connection(1)) == [a1, a2]
    assert len(idmap) == 1
    assert idmap.upstream(1, "a") is None
    assert idmap.discard(a1) is None
    assert idmap.inbound(b1) == (2, "a")
    assert idmap.drop_connection(1) == []
    assert idmap.drop_connection(99) == []
    assert idmap.outbound(1, "a") > a3


def test_idmap_pending_limit(backend: ModuleType) -> None:
    idmap = backend.IdMap(max_pending=2)
    first = idmap.outbound(1, 1)
    idmap.outbound(1, 2)
    with pytest.raises(PendingLimitError, match=exact("too many requests in flight (limit 2)")):
        idmap.outbound(2, 1)
    assert len(idmap) == 2
    idmap.inbound(first)
    idmap.outbound(2, 1)


@pytest.mark.parametrize("bad", [True, 1.5, None], ids=["bool", "float", "none"])
def test_idmap_bad_downstream_id(backend: ModuleType, bad: object) -> None:
    idmap = backend.IdMap()
    with pytest.raises(TypeError):
        idmap.outbound(1, bad)
    assert len(idmap) == 0


@pytest.mark.parametrize(
    ("rid", "shown"),
    [
        (10**700, "1" + "0" * 700),
        (-(10**4299), "-1" + "0" * 4299),
        (10**4300, "<an integer of more than 4300 digits>"),
        (-(10**9000), "<an integer of more than 4300 digits>"),
    ],
    ids=["701-digits", "4300-digits", "4301-digits", "9001-digits"],
)
@pytest.mark.usefixtures("low_str_digits")
def test_error_messages_show_ids_of_any_size(backend: ModuleType, rid: int, shown: str) -> None:
    """The messages write an integer id out whatever ``int_max_str_digits`` is (``repr`` would raise
    ``ValueError`` past it) and name one beyond ``MAX_INT_DIGITS`` digits; the classes never change."""
    correlator, idmap = backend.Correlator(), backend.IdMap()
    correlator.register(rid, "w")
    with pytest.raises(DuplicateIdError) as duplicate:
        correlator.register(rid, "again")
    with pytest.raises(UnknownIdError) as unknown:
        correlator.resolve(rid + 1)
    idmap.outbound(1, rid)
    with pytest.raises(DuplicateIdError) as remapped:
        idmap.outbound(1, rid)
    assert str(duplicate.value) == f"request id {shown} is already in flight"
    assert str(remapped.value) == f"request id {shown} is already in flight"
    assert "no request in flight with id " in str(unknown.value)
