//! A cache of encoded dict keys: `,"key":` kept per key object, copied into the line with one
//! 32-byte move instead of being read, scanned for escapes and quoted on every member.
//!
//! Dict keys are most of the strings of a JSON-RPC message (7 of the 10 strings of an average
//! message of the bench's small corpus) and the same few dozen recur in every message
//! (`jsonrpc`, `id`, `method`, `params`, `content`, `type`, `text`, ...). Writing one through the
//! general string path costs ~90 instructions (callgrind); a hit here costs ~15, and reads
//! nothing of the key object itself.
//!
//! A slot is found by the key's address and holds a strong reference to its key: while the slot
//! holds it, the object lives, so no other object can take its address, and a `str` never
//! changes, so the text stays right. A slot goes to another key that lands on it only after
//! `PATIENCE` such misses in a row without a hit on its own key (the old key released then): two
//! recurring keys that share a slot do not evict each other on every member, the second is
//! written by the general path. At most `SLOTS` short keys are kept alive this way (tens of
//! kilobytes).
//! Only exact `str` keys of at most `MAX_KEY` ASCII characters that need no escaping are cached;
//! the others take the general path. Public C API only (`Py_INCREF`/`Py_DECREF`, the documented
//! `PyUnicode_*` macros).

use pyo3::ffi;

/// Slots of the table (a power of two): a few hundred recurring keys rarely share one.
const SLOTS: usize = 1024;
/// Misses by other keys, with no hit in between, that give a slot to another key.
const PATIENCE: u32 = 8;
/// Bytes copied per hit; `,"` + key + `":` must fit.
const ROOM: usize = 32;
/// Longest key cached.
const MAX_KEY: usize = ROOM - 4;

/// One cached key: its object (owned reference, or NULL) and `,"key":` (`len` bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct Slot {
    key: *mut ffi::PyObject,
    len: u32,
    /// Misses by other keys left before the slot goes to one of them.
    patience: u32,
    /// `ROOM + 1` bytes: a first member copies `ROOM` bytes from offset 1 (no comma).
    text: [u8; ROOM + 8],
}

const EMPTY: Slot = Slot {
    key: std::ptr::null_mut(),
    len: 0,
    patience: 0,
    text: [0; ROOM + 8],
};

/// The slot of `key`: its address, hashed (objects are 16-byte aligned, so the low bits carry
/// nothing; a multiply spreads the others over the index bits).
#[inline(always)]
fn index(key: *mut ffi::PyObject) -> usize {
    let bits = (key as usize as u64) >> 4;
    (bits.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

#[cfg(not(Py_GIL_DISABLED))]
mod table {
    use std::cell::UnsafeCell;

    use super::{Slot, EMPTY, SLOTS};

    /// The table, only touched with the GIL held.
    pub(super) struct GilGuarded(pub(super) UnsafeCell<[Slot; SLOTS]>);

    // SAFETY: every access happens inside an encoder call, which holds the GIL throughout and
    // never runs Python code while it uses a slot; PyO3 refuses subinterpreters.
    unsafe impl Sync for GilGuarded {}

    pub(super) static TABLE: GilGuarded = GilGuarded(UnsafeCell::new([EMPTY; SLOTS]));
}

/// Write `key` as a member's key (`,"key":`, without the comma when `first`) at `dst`, if it is
/// cached or cacheable, and return the bytes written; 0 when the general path must write it.
///
/// # Safety
/// `key` is a live object of exact type `str`; `dst` is valid for writing `ROOM` bytes; the GIL
/// is held and no Python code runs until the bytes are used.
#[cfg(not(Py_GIL_DISABLED))]
#[inline(always)]
pub(crate) unsafe fn write(key: *mut ffi::PyObject, first: bool, dst: *mut u8) -> usize {
    // SAFETY: the GIL is held (the caller's contract) and no reference into the table outlives
    // this call; a slot's text has `ROOM + 8` bytes, so `ROOM` from offset 0 or 1 are in it.
    unsafe {
        let slot = &mut (*table::TABLE.0.get())[index(key)];
        if slot.key == key {
            slot.patience = PATIENCE;
        } else if !fill(slot, key) {
            return 0;
        }
        let skip = usize::from(first);
        std::ptr::copy_nonoverlapping(slot.text.as_ptr().add(skip), dst, ROOM);
        slot.len as usize - skip
    }
}

/// Without a GIL (free-threaded builds) there is no shared table: the general path writes keys.
///
/// # Safety
/// None (kept `unsafe` to match the GIL build).
#[cfg(Py_GIL_DISABLED)]
#[inline(always)]
pub(crate) unsafe fn write(_key: *mut ffi::PyObject, _first: bool, _dst: *mut u8) -> usize {
    0
}

/// Put `key` in `slot` (releasing the key it held) when the slot is free or has run out of
/// patience and the key can be cached; whether it was.
#[cfg(not(Py_GIL_DISABLED))]
#[inline(never)]
unsafe fn fill(slot: &mut Slot, key: *mut ffi::PyObject) -> bool {
    if slot.patience > 0 {
        slot.patience -= 1;
        return false;
    }
    // SAFETY: `key` is a live `str` (the caller's contract); a compact ASCII string stores its
    // `length` bytes inline at `PyUnicode_DATA`.
    let text = unsafe {
        if ffi::PyUnicode_IS_COMPACT_ASCII(key) == 0 {
            return false;
        }
        let len = ffi::PyUnicode_GET_LENGTH(key) as usize;
        if len > MAX_KEY {
            return false;
        }
        std::slice::from_raw_parts(ffi::PyUnicode_DATA(key).cast::<u8>(), len)
    };
    // ASCII, so only `"`, `\` and control characters would need an escape.
    if text.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        return false;
    }
    let old = slot.key;
    // SAFETY: `key` is live; the new reference is owned by the slot. The old key (owned by the
    // slot) is released after the slot stops naming it: freeing a `str` runs no Python code.
    unsafe { ffi::Py_INCREF(key) };
    slot.key = key;
    slot.patience = PATIENCE;
    let end = text.len() + 4;
    slot.len = end as u32;
    slot.text[..2].copy_from_slice(b",\"");
    slot.text[2..2 + text.len()].copy_from_slice(text);
    slot.text[2 + text.len()..end].copy_from_slice(b"\":");
    if !old.is_null() {
        // SAFETY: the slot held this reference.
        unsafe { ffi::Py_DECREF(old) };
    }
    true
}

/// Empty the table without releasing its keys (called when the module is initialised). The table
/// is a process-wide static: an embedding application that finalises the interpreter and starts a
/// new one imports the module again, and the slots would otherwise name objects of the old one.
/// In the usual single import it is already empty.
pub(crate) fn reset(_py: pyo3::Python<'_>) {
    #[cfg(not(Py_GIL_DISABLED))]
    // SAFETY: the GIL is held (the token); no reference into the table is alive.
    unsafe {
        *table::TABLE.0.get() = [EMPTY; SLOTS];
    }
}

/// Bytes the caller must have room for at `dst` (`write` always copies this many).
pub(crate) const WRITE_ROOM: usize = ROOM;
