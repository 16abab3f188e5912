//! The process's small cache of method-name strings: streams use a handful of methods over and
//! over, so the messages share one `str` per method instead of building (or hashing) a new one.
//! A message looks its name up only when `method` is first read (see `message::Record::method`).
// free-threaded builds keep no table (see `shared`): the table's code is unused there
#![cfg_attr(Py_GIL_DISABLED, allow(dead_code))]

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::strings::str_or_err;

/// Slots of the cache (a power of two): MCP has a few dozen methods.
const SLOTS: usize = 64;

/// One cached name and its Python string.
struct Entry {
    name: Box<[u8]>,
    string: Py<PyString>,
}

/// Method names seen so far, with their Python strings, in a table indexed by a cheap hash of the
/// name; a name is looked for in its slot and the next one (two ways), so two methods that share
/// a slot both stay. A stream with more methods than fit builds the rest each time.
struct Methods {
    /// Allocated on first use.
    slots: Vec<Option<Entry>>,
}

/// The slot of `name`: its length and three of its bytes, mixed by one multiplication.
#[inline(always)]
fn slot(name: &[u8]) -> usize {
    let n = name.len();
    let (first, middle, last) = match n {
        0 => (0, 0, 0),
        _ => (name[0], name[n / 2], name[n - 1]),
    };
    let key = u32::from_le_bytes([first, middle, last, n as u8]);
    (key.wrapping_mul(0x9E37_79B1) >> 26) as usize % SLOTS
}

/// The eight bytes of `bytes` at `at` as a word (the caller checked they are there).
#[inline(always)]
fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

/// `a == b`, compared in place a word at a time: a method name is a few dozen bytes, for which the
/// general comparison's call into `memcmp` cost more than the comparison itself.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    let mut at = 0;
    while at + 8 < n {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    // the last eight bytes (overlapping those compared when the length is not a multiple of 8)
    word(a, n - 8) == word(b, n - 8)
}

impl Methods {
    /// The Python string for `name`, shared with earlier messages when possible (or the
    /// `MemoryError` of building it). The usual case, the name in its home slot, is inlined into
    /// the message builder; the second way, the table's first use and a miss are out of line.
    #[inline(always)]
    fn get(&mut self, py: Python<'_>, name: &str) -> PyResult<Py<PyString>> {
        let bytes = name.as_bytes();
        let home = slot(bytes);
        if let Some(Some(entry)) = self.slots.get(home) {
            if same(&entry.name, bytes) {
                return Ok(entry.string.clone_ref(py));
            }
        }
        self.elsewhere(py, name, home)
    }

    /// A name not in its home slot: in the next one, or not kept yet (the table is allocated on
    /// its first use here).
    #[inline(never)]
    fn elsewhere(&mut self, py: Python<'_>, name: &str, home: usize) -> PyResult<Py<PyString>> {
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        let ways = [home, (home + 1) % SLOTS];
        if let Some(entry) = &self.slots[ways[1]] {
            if same(&entry.name, name.as_bytes()) {
                return Ok(entry.string.clone_ref(py));
            }
        }
        self.miss(py, name, ways)
    }

    /// A name not in the table: its new string, kept in a free slot of `ways` if there is one.
    #[cold]
    #[inline(never)]
    fn miss(&mut self, py: Python<'_>, name: &str, ways: [usize; 2]) -> PyResult<Py<PyString>> {
        let string = str_or_err(py, name)?.unbind();
        if let Some(free) = ways.into_iter().find(|&at| self.slots[at].is_none()) {
            let name = name.as_bytes().into();
            let kept = string.clone_ref(py);
            self.slots[free] = Some(Entry { name, string: kept });
        }
        Ok(string)
    }
}

/// The shared string for the method name `name` (or the `MemoryError` of building it).
#[cfg(not(Py_GIL_DISABLED))]
pub(crate) fn shared(py: Python<'_>, name: &str) -> PyResult<Py<PyString>> {
    use std::cell::UnsafeCell;

    struct Table(UnsafeCell<Methods>);
    // SAFETY: the table is only used below, with the GIL held (this is compiled only for GIL
    // builds), so by one thread at a time.
    unsafe impl Sync for Table {}
    static TABLE: Table = Table(UnsafeCell::new(Methods { slots: Vec::new() }));

    // SAFETY: the GIL is held (`py`), and the look-up runs no Python code while it uses the table
    // (making a `str` calls no finalizer and starts no collection), so it is never re-entered.
    unsafe { (*TABLE.0.get()).get(py, name) }
}

/// Free-threaded builds share no table between threads: each message builds its own string.
#[cfg(Py_GIL_DISABLED)]
pub(crate) fn shared(py: Python<'_>, name: &str) -> PyResult<Py<PyString>> {
    Ok(str_or_err(py, name)?.unbind())
}
