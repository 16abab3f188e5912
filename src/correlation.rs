//! Request-id correlation (no PyO3): the table of pending outgoing requests (`PendingTable`, behind
//! `Correlator`) and the proxy's id remapping (`IdRemap`, behind `IdMap`). Both are generic over what
//! they store for each id, so the Python bindings keep Python objects in them and the unit tests
//! plain values. Ids are `RequestId`s, where the integer `1` and the string `"1"` are different.
//!
//! Ids the caller registers may be any integer or string; ids the counter hands out stay within
//! `FIRST_ALLOCATED_ID..=LAST_ALLOCATED_ID` (the positive `i64`s) and wrap around, because the peers
//! a proxy talks to (Go, Rust, Java SDKs) parse request ids as 64-bit signed integers.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt;

use num_bigint::BigInt;

/// The tables' map: aHash, keyed at random per process (as resistant to chosen colliding ids as
/// std's SipHash for these keys, and several times cheaper per small key: the proxy's hot path hashes
/// a few ids per forwarded call).
type Map<K, V> = HashMap<K, V, ahash::RandomState>;

/// A JSON-RPC request id: an integer (exact at any size) or a string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer that fits in an `i64`.
    Int(i64),
    /// An integer outside the `i64` range (never holds a value that fits in `Int`).
    Big(BigInt),
    /// A string id.
    Str(Box<str>),
}

impl RequestId {
    /// The id for an integer of any size, in its canonical variant.
    pub fn from_bigint(value: BigInt) -> Self {
        match i64::try_from(&value) {
            Ok(small) => RequestId::Int(small),
            Err(_) => RequestId::Big(value),
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        RequestId::Int(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        RequestId::Str(value.into())
    }
}

/// The smallest id the counter hands out, and where it starts again after `LAST_ALLOCATED_ID`.
pub const FIRST_ALLOCATED_ID: i64 = 1;

/// The largest id the counter hands out: `2**63 - 1`, the largest id every 64-bit peer can parse.
pub const LAST_ALLOCATED_ID: i64 = i64::MAX;

/// Why a table operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PendingError {
    /// The id is already in flight.
    Duplicate,
    /// The table holds `max_pending` entries already.
    Limit(usize),
    /// No id is in flight under this key.
    Unknown,
}

/// A `first_id` outside `FIRST_ALLOCATED_ID..=LAST_ALLOCATED_ID`; its `Display` is the contract's
/// message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FirstIdOutOfRange;

impl fmt::Display for FirstIdOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "first_id must be between {FIRST_ALLOCATED_ID} and {LAST_ALLOCATED_ID}"
        )
    }
}

impl std::error::Error for FirstIdOutOfRange {}

struct Slot<W> {
    seq: u64,
    waiter: W,
}

/// Pending requests keyed by id, with integer id allocation (counting up, wrapping from
/// `LAST_ALLOCATED_ID` to `FIRST_ALLOCATED_ID`) and a size limit.
pub struct PendingTable<W> {
    slots: Map<RequestId, Slot<W>>,
    max_pending: usize,
    /// The next candidate id, always within `FIRST_ALLOCATED_ID..=LAST_ALLOCATED_ID`.
    next: i64,
    seq: u64,
}

impl<W> PendingTable<W> {
    /// An empty table allowing `max_pending` entries, allocating ids from `first_id` upwards;
    /// `first_id` must be within `FIRST_ALLOCATED_ID..=LAST_ALLOCATED_ID`.
    pub fn new(max_pending: usize, first_id: i64) -> Result<Self, FirstIdOutOfRange> {
        if !(FIRST_ALLOCATED_ID..=LAST_ALLOCATED_ID).contains(&first_id) {
            return Err(FirstIdOutOfRange);
        }
        Ok(PendingTable {
            slots: Map::default(),
            max_pending,
            next: first_id,
            seq: 0,
        })
    }

    /// Number of pending entries.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no entry is pending.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The configured limit.
    pub fn max_pending(&self) -> usize {
        self.max_pending
    }

    /// Whether `id` is in flight.
    pub fn contains(&self, id: &RequestId) -> bool {
        self.slots.contains_key(id)
    }

    /// The next integer id that is not in flight: one larger than the last, skipping ids in
    /// flight, and `FIRST_ALLOCATED_ID` again after `LAST_ALLOCATED_ID`.
    pub fn next_id(&mut self) -> i64 {
        // The table holds far fewer than 2**63 - 1 entries, so a free id is always found.
        loop {
            let candidate = self.advance();
            if !self.slots.contains_key(&RequestId::Int(candidate)) {
                return candidate;
            }
        }
    }

    /// The next candidate id, in flight or not: `self.next`, which moves one on (wrapping from
    /// `LAST_ALLOCATED_ID` to `FIRST_ALLOCATED_ID`).
    fn advance(&mut self) -> i64 {
        let candidate = self.next;
        self.next = if candidate == LAST_ALLOCATED_ID {
            FIRST_ALLOCATED_ID
        } else {
            candidate + 1
        };
        candidate
    }

    /// Add `waiter` under `id`; a duplicate is reported before the limit.
    pub fn register(&mut self, id: RequestId, waiter: W) -> Result<(), PendingError> {
        if self.slots.contains_key(&id) {
            return Err(PendingError::Duplicate);
        }
        if self.slots.len() >= self.max_pending {
            return Err(PendingError::Limit(self.max_pending));
        }
        let seq = self.seq;
        self.seq += 1;
        self.slots.insert(id, Slot { seq, waiter });
        Ok(())
    }

    /// `next_id()` then `register()`: the id is consumed even when registration fails.
    pub fn allocate(&mut self, waiter: W) -> Result<i64, PendingError> {
        if self.slots.len() >= self.max_pending {
            self.next_id(); // consumed, as documented
            return Err(PendingError::Limit(self.max_pending));
        }
        // `next_id` and `register` in one lookup per candidate: a free id is inserted where it was
        // found missing.
        loop {
            let candidate = self.advance();
            if let Entry::Vacant(slot) = self.slots.entry(RequestId::Int(candidate)) {
                let seq = self.seq;
                self.seq += 1;
                slot.insert(Slot { seq, waiter });
                return Ok(candidate);
            }
        }
    }

    /// Remove and return the waiter for `id`.
    pub fn remove(&mut self, id: &RequestId) -> Option<W> {
        self.slots.remove(id).map(|slot| slot.waiter)
    }

    /// The waiter for `id`, left in place.
    pub fn get(&self, id: &RequestId) -> Option<&W> {
        self.slots.get(id).map(|slot| &slot.waiter)
    }

    /// The waiter for `id`, left in place, to change.
    pub fn get_mut(&mut self, id: &RequestId) -> Option<&mut W> {
        self.slots.get_mut(id).map(|slot| &mut slot.waiter)
    }

    /// Every waiter, in no particular order (for garbage-collector traversal).
    pub fn waiters(&self) -> impl Iterator<Item = &W> {
        self.slots.values().map(|slot| &slot.waiter)
    }

    /// Remove every entry and return them in registration order.
    pub fn drain(&mut self) -> Vec<(RequestId, W)> {
        let mut entries: Vec<(u64, RequestId, W)> = self
            .slots
            .drain()
            .map(|(id, slot)| (slot.seq, id, slot.waiter))
            .collect();
        entries.sort_unstable_by_key(|entry| entry.0);
        entries.into_iter().map(|(_, id, w)| (id, w)).collect()
    }
}

/// A proxy's mapping from (connection, downstream id) to a fresh upstream integer id and back.
/// `D` is what is stored beside each mapping and handed back by `inbound` (the bindings keep the
/// original downstream id object there).
pub struct IdRemap<D> {
    upstream: PendingTable<(i64, RequestId, D)>,
    by_conn: Map<i64, Map<RequestId, i64>>,
}

impl<D> IdRemap<D> {
    /// An empty map allowing `max_pending` entries, allocating upstream ids from `first_id`
    /// (within `FIRST_ALLOCATED_ID..=LAST_ALLOCATED_ID`, wrapping like `PendingTable`).
    pub fn new(max_pending: usize, first_id: i64) -> Result<Self, FirstIdOutOfRange> {
        Ok(IdRemap {
            upstream: PendingTable::new(max_pending, first_id)?,
            by_conn: Map::default(),
        })
    }

    /// Number of live mappings.
    pub fn len(&self) -> usize {
        self.upstream.len()
    }

    /// Whether there is no mapping.
    pub fn is_empty(&self) -> bool {
        self.upstream.is_empty()
    }

    /// The configured limit.
    pub fn max_pending(&self) -> usize {
        self.upstream.max_pending()
    }

    /// Map `(conn, id)` to a fresh upstream id; a duplicate is reported before the limit, and a
    /// refused mapping consumes no id.
    pub fn outbound(&mut self, conn: i64, id: RequestId, data: D) -> Result<i64, PendingError> {
        // One lookup per table: the connection's, the id's within it (kept to insert into), the
        // upstream id's.
        let ids = self.by_conn.entry(conn).or_default();
        let refused = match ids.entry(id) {
            Entry::Occupied(_) => PendingError::Duplicate,
            Entry::Vacant(_) if self.upstream.len() >= self.upstream.max_pending() => {
                PendingError::Limit(self.upstream.max_pending())
            }
            Entry::Vacant(slot) => {
                let up = self.upstream.allocate((conn, slot.key().clone(), data))?;
                slot.insert(up);
                return Ok(up);
            }
        };
        if ids.is_empty() {
            self.by_conn.remove(&conn); // as `inbound` leaves it: no empty map kept per connection
        }
        Err(refused)
    }

    /// The upstream id of `(conn, id)`, if mapped.
    pub fn upstream(&self, conn: i64, id: &RequestId) -> Option<i64> {
        self.by_conn.get(&conn)?.get(id).copied()
    }

    /// Remove the mapping of `upstream_id` and return `(conn, downstream id, data)`.
    pub fn inbound(&mut self, upstream_id: &RequestId) -> Option<(i64, RequestId, D)> {
        let (conn, id, data) = self.upstream.remove(upstream_id)?;
        if let Some(ids) = self.by_conn.get_mut(&conn) {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_conn.remove(&conn);
            }
        }
        Some((conn, id, data))
    }

    /// `(conn, downstream id, data)` of `upstream_id`, left in place.
    pub fn peek(&self, upstream_id: i64) -> Option<&(i64, RequestId, D)> {
        self.upstream.get(&RequestId::Int(upstream_id))
    }

    /// The data of `upstream_id`'s mapping, to change.
    pub fn data_mut(&mut self, upstream_id: i64) -> Option<&mut D> {
        let entry = self.upstream.get_mut(&RequestId::Int(upstream_id))?;
        Some(&mut entry.2)
    }

    /// The `(upstream id, downstream id)` of every mapping of `conn`, by upstream id.
    pub fn pending(&self, conn: i64) -> Vec<(i64, &RequestId)> {
        let mut out: Vec<(i64, &RequestId)> = match self.by_conn.get(&conn) {
            Some(ids) => ids.iter().map(|(id, up)| (*up, id)).collect(),
            None => return Vec::new(),
        };
        out.sort_unstable_by_key(|(up, _)| *up);
        out
    }

    /// Forget every mapping of `conn`; return their upstream ids in allocation order.
    pub fn drop_connection(&mut self, conn: i64) -> Vec<i64> {
        let mut ups: Vec<i64> = match self.by_conn.remove(&conn) {
            Some(ids) => ids.into_values().collect(),
            None => return Vec::new(),
        };
        ups.sort_unstable();
        for up in &ups {
            self.upstream.remove(&RequestId::Int(*up));
        }
        ups
    }

    /// Every stored `data`, in no particular order (for garbage-collector traversal).
    pub fn data(&self) -> impl Iterator<Item = &D> {
        self.upstream.waiters().map(|(_, _, data)| data)
    }

    /// Remove every mapping.
    pub fn clear(&mut self) {
        self.upstream.drain();
        self.by_conn.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_big_and_str_ids_are_distinct() {
        let mut table = PendingTable::new(10, 1).unwrap();
        table.register(1.into(), "int").unwrap();
        table.register("1".into(), "str").unwrap();
        let big = RequestId::from_bigint(BigInt::from(1u8) << 70);
        assert!(matches!(big, RequestId::Big(_)));
        table.register(big.clone(), "big").unwrap();
        assert_eq!(RequestId::from_bigint(BigInt::from(7)), RequestId::Int(7));
        assert_eq!(table.remove(&"1".into()), Some("str"));
        assert_eq!(table.remove(&big), Some("big"));
        assert_eq!(table.remove(&1.into()), Some("int"));
        assert!(table.is_empty());
    }

    #[test]
    fn duplicate_then_limit() {
        let mut table = PendingTable::new(2, 1).unwrap();
        table.register(5.into(), ()).unwrap();
        assert_eq!(table.register(5.into(), ()), Err(PendingError::Duplicate));
        table.register(6.into(), ()).unwrap();
        assert_eq!(table.register(5.into(), ()), Err(PendingError::Duplicate));
        assert_eq!(table.register(7.into(), ()), Err(PendingError::Limit(2)));
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn allocation_is_monotonic_and_skips_busy_ids() {
        let mut table = PendingTable::new(10, 1).unwrap();
        table.register(2.into(), 'x').unwrap();
        table.register(3.into(), 'y').unwrap();
        assert_eq!(table.allocate('a'), Ok(1));
        assert_eq!(table.next_id(), 4);
        table.remove(&2.into());
        assert_eq!(table.allocate('b'), Ok(5));
        assert_eq!(table.get(&5.into()), Some(&'b'));
    }

    #[test]
    fn failed_allocate_consumes_the_id() {
        let mut table = PendingTable::new(1, 10).unwrap();
        assert_eq!(table.allocate(()), Ok(10));
        assert_eq!(table.allocate(()), Err(PendingError::Limit(1)));
        assert_eq!(table.next_id(), 12);
    }

    #[test]
    fn first_id_must_be_a_positive_i64() {
        for bad in [0, -1, i64::MIN] {
            assert_eq!(
                PendingTable::<()>::new(1, bad).err(),
                Some(FirstIdOutOfRange)
            );
            assert!(IdRemap::<()>::new(1, bad).is_err());
        }
        assert_eq!(
            FirstIdOutOfRange.to_string(),
            "first_id must be between 1 and 9223372036854775807"
        );
        let mut low = PendingTable::<()>::new(1, FIRST_ALLOCATED_ID).unwrap();
        assert_eq!(low.next_id(), 1);
        let mut high = PendingTable::<()>::new(1, LAST_ALLOCATED_ID).unwrap();
        assert_eq!(high.next_id(), i64::MAX);
    }

    #[test]
    fn counter_wraps_to_one_skipping_busy_ids() {
        let mut table = PendingTable::new(10, i64::MAX - 1).unwrap();
        table.register(i64::MAX.into(), 'm').unwrap();
        table.register(1.into(), 'a').unwrap();
        table.register(3.into(), 'c').unwrap();
        assert_eq!(table.allocate('x'), Ok(i64::MAX - 1));
        assert_eq!(table.next_id(), 2); // MAX and 1 are busy
        assert_eq!(table.next_id(), 4); // 3 is busy
        assert!(table.contains(&(i64::MAX - 1).into()));
        assert_eq!(table.len(), 4);
    }

    #[test]
    fn remap_counter_wraps_to_one() {
        let mut map = IdRemap::new(10, i64::MAX).unwrap();
        assert_eq!(map.outbound(1, "a".into(), ()), Ok(i64::MAX));
        assert_eq!(map.outbound(1, "b".into(), ()), Ok(1));
        assert_eq!(map.inbound(&1.into()), Some((1, "b".into(), ())));
        assert_eq!(map.inbound(&i64::MAX.into()), Some((1, "a".into(), ())));
    }

    #[test]
    fn drain_returns_registration_order() {
        let mut table = PendingTable::new(100, 1).unwrap();
        let ids: Vec<RequestId> = (0..50)
            .map(|i| {
                if i % 3 == 0 {
                    format!("s{i}").as_str().into()
                } else {
                    (100 - i).into()
                }
            })
            .collect();
        for (i, id) in ids.iter().enumerate() {
            table.register(id.clone(), i).unwrap();
        }
        table.remove(&ids[10]);
        let drained = table.drain();
        let expected: Vec<(RequestId, usize)> = ids
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i != 10)
            .map(|(i, id)| (id, i))
            .collect();
        assert_eq!(drained, expected);
        assert!(table.is_empty());
    }

    #[test]
    fn remap_round_trip() {
        let mut map = IdRemap::new(10, 1).unwrap();
        assert_eq!(map.outbound(7, 1.into(), "a"), Ok(1));
        assert_eq!(map.outbound(8, 1.into(), "b"), Ok(2));
        assert_eq!(map.outbound(7, "1".into(), "c"), Ok(3));
        assert_eq!(map.outbound(7, 1.into(), "d"), Err(PendingError::Duplicate));
        assert_eq!(map.upstream(8, &1.into()), Some(2));
        assert_eq!(map.inbound(&2.into()), Some((8, 1.into(), "b")));
        assert_eq!(map.inbound(&2.into()), None);
        assert_eq!(map.upstream(8, &1.into()), None);
        assert_eq!(map.inbound(&"1".into()), None);
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn remap_limit_and_drop_connection() {
        let mut map = IdRemap::new(3, 1).unwrap();
        map.outbound(1, "x".into(), ()).unwrap();
        map.outbound(2, "x".into(), ()).unwrap();
        map.outbound(1, "y".into(), ()).unwrap();
        assert_eq!(map.outbound(3, "z".into(), ()), Err(PendingError::Limit(3)));
        assert_eq!(map.drop_connection(1), vec![1, 3]);
        assert_eq!(map.drop_connection(1), Vec::<i64>::new());
        assert_eq!(map.len(), 1);
        assert_eq!(map.outbound(1, "x".into(), ()), Ok(4));
        assert_eq!(map.data().count(), 2);
        map.clear();
        assert!(map.is_empty());
    }

    #[test]
    fn refused_outbound_keeps_the_mappings_and_no_connection_entry() {
        let mut map = IdRemap::new(2, 1).unwrap();
        assert_eq!(map.outbound(1, 7.into(), "a"), Ok(1));
        assert_eq!(map.outbound(1, 7.into(), "b"), Err(PendingError::Duplicate));
        assert_eq!(map.outbound(2, 8.into(), "c"), Ok(2));
        assert_eq!(map.outbound(3, 9.into(), "d"), Err(PendingError::Limit(2)));
        assert!(!map.by_conn.contains_key(&3)); // the refused connection left nothing behind
        assert_eq!(map.upstream(1, &7.into()), Some(1));
        assert_eq!(map.inbound(&RequestId::Int(1)), Some((1, 7.into(), "a")));
        assert!(!map.by_conn.contains_key(&1)); // emptied by its answer
        assert_eq!(map.outbound(3, 9.into(), "d"), Ok(3)); // the refusal consumed no upstream id
    }
}
