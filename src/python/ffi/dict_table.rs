//! The entry table of a dict, read directly instead of through one `PyDict_Next` call per member
//! (a call that re-checks the object, its kind and the position every time; on a dict-heavy
//! message those calls were a fifth of the encoder's time).
//!
//! `PyDictObject` (`Include/cpython/dictobject.h`) and `PyDictKeysObject` with its entries
//! (`Include/internal/pycore_dict.h`) have the same layout in CPython 3.11, 3.12 and 3.13 with the
//! GIL (verified in the headers of 3.11.7, 3.12.1 and 3.13.0, the versions installed here; the
//! free-threaded 3.13 build adds a mutex to the keys object and is excluded by its cfg). Compiled
//! only for those versions, used only when `ffi::init` enabled it.
//!
//! Only combined tables are read (`ma_values == NULL`); a split table (an instance's `__dict__`)
//! is left to `PyDict_Next`. The entries are given in the order `PyDict_Next` gives: entry array
//! order, skipping deleted entries (whose value is NULL).

use pyo3::ffi;

/// This build has the layout (`ffi::init` adds the run-time conditions).
pub(crate) const COMPILED: bool = true;

/// `PyDictObject` of CPython 3.11 to 3.13.
#[repr(C)]
struct DictObject {
    _ob_base: ffi::PyObject,
    _ma_used: ffi::Py_ssize_t,
    _ma_version_tag: u64,
    ma_keys: *mut KeysObject,
    ma_values: *mut std::ffi::c_void,
}

/// The fixed head of `PyDictKeysObject` (GIL builds); `dk_indices` follows it.
#[repr(C)]
struct KeysObject {
    _dk_refcnt: ffi::Py_ssize_t,
    _dk_log2_size: u8,
    dk_log2_index_bytes: u8,
    dk_kind: u8,
    _dk_version: u32,
    _dk_usable: ffi::Py_ssize_t,
    dk_nentries: ffi::Py_ssize_t,
}

/// `DICT_KEYS_GENERAL`: entries are `{hash, key, value}`, keys of any type.
const KIND_GENERAL: u8 = 0;
/// `DICT_KEYS_UNICODE`: entries are `{key, value}`; CPython keeps only exact `str` keys in such a
/// table (inserting any other key converts it to a general one first).
const KIND_UNICODE: u8 = 1;

/// The live entries of a combined-table dict, as borrowed `(key, value)` pointers.
pub(crate) struct Entries {
    /// First pointer of the first entry's key.
    slots: *const *mut ffi::PyObject,
    /// Pointers before the next entry to look at.
    at: usize,
    /// Pointers past the last entry.
    end: usize,
    /// Pointers per entry (3 for general, 2 for unicode entries).
    stride: usize,
}

impl Entries {
    /// The entries of `dict`, or `None` when the direct path does not apply.
    ///
    /// # Safety
    /// `dict` must be a live `dict` (or subclass) instance that is not mutated while the
    /// returned value is used, with the GIL held, on one of the versions this module is built for.
    #[inline]
    pub(crate) unsafe fn of(dict: *mut ffi::PyObject) -> Option<Entries> {
        // SAFETY: on those versions (the caller's contract) every dict instance starts with the
        // `DictObject` layout and `ma_keys` points to a keys object whose entry array starts
        // `1 << dk_log2_index_bytes` bytes after the fixed head and holds `dk_nentries` entries.
        unsafe {
            let object = &*dict.cast::<DictObject>();
            if !object.ma_values.is_null() {
                return None; // split table: values live elsewhere
            }
            let keys = &*object.ma_keys;
            let stride = match keys.dk_kind {
                KIND_GENERAL => 3,
                KIND_UNICODE => 2,
                _ => return None,
            };
            let head = object
                .ma_keys
                .cast::<u8>()
                .add(std::mem::size_of::<KeysObject>());
            let entries = head
                .add(1usize << keys.dk_log2_index_bytes)
                .cast::<*mut ffi::PyObject>();
            // The key is the last-but-one pointer of an entry, the value the last one.
            let slots = entries.add(stride - 2);
            Some(Entries {
                slots,
                at: 0,
                end: keys.dk_nentries as usize * stride,
                stride,
            })
        }
    }

    /// Whether every key is an exact `str` (a unicode-kind table).
    #[inline]
    pub(crate) fn str_keys(&self) -> bool {
        self.stride == 2
    }

    /// Call `hint` with each of the first `count` values (NULL for a deleted entry), without
    /// moving: the walker asks the CPU for their headers at once. A table with fewer entries gives
    /// its last value again for the missing ones: no branch on the table's size, whose outcome
    /// changes from dict to dict (a mispredicted branch per dict, ~15 cycles, was part of the
    /// cost of asking ahead).
    #[inline]
    pub(crate) fn first_values(&self, count: usize, mut hint: impl FnMut(*mut ffi::PyObject)) {
        if self.end == 0 {
            return;
        }
        let last = self.end - self.stride;
        for entry in 0..count {
            let at = (entry * self.stride).min(last) + 1;
            // SAFETY: `at <= last + 1 < end`: the entry exists (see `of`); the dict is unchanged.
            hint(unsafe { *self.slots.add(at) });
        }
    }

    /// The value of the entry `ahead` entries after the next one `next` gives (NULL for a deleted
    /// entry), or of the last entry when the table ends before it: an address to prefetch,
    /// nothing more. Without a branch on where the table ends (see `first_values`).
    #[inline]
    pub(crate) fn peek_value_at(&self, ahead: usize) -> *mut ffi::PyObject {
        // `end >= stride`: `next` gave an entry before this is asked, so the table has one.
        let at = (self.at + ahead * self.stride).min(self.end - self.stride);
        // SAFETY: `at < end`: the entry exists (see `of`); the dict is unchanged.
        unsafe { *self.slots.add(at + 1) }
    }
}

impl Iterator for Entries {
    type Item = (*mut ffi::PyObject, *mut ffi::PyObject);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while self.at < self.end {
            // SAFETY: `at < end`: the entry exists (see `of`); the dict is unchanged.
            let (key, value) = unsafe {
                let entry = self.slots.add(self.at);
                (*entry, *entry.add(1))
            };
            self.at += self.stride;
            if !value.is_null() {
                return Some((key, value));
            }
        }
        None
    }
}
