//! Direct iteration over the entry array of a CPython 3.11 dict, for the encoder's hot loop:
//! `PyDict_Next` is an exported function wrapping another one, and calling it per item cost a
//! fifth of the time of a dict-heavy message. The layout mirrored here is that of CPython 3.11
//! (`Include/cpython/dictobject.h`, `Include/internal/pycore_dict.h`); it is used only when the
//! running interpreter is CPython 3.11 (checked once at module import), and only for combined
//! tables. Every other case goes through `PyDict_Next`. Entries come in the same order as
//! `PyDict_Next` gives them: the entry array order, skipping deleted entries (NULL value).

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

/// Whether the running interpreter has the CPython 3.11 dict layout.
static LAYOUT_311: AtomicBool = AtomicBool::new(false);

/// Enable the direct path when running on CPython 3.11 (called once at module import).
pub(crate) fn detect(py: Python<'_>) {
    let version = py.version_info();
    let cpython = py
        .import("sys")
        .and_then(|sys| {
            sys.getattr("implementation")?
                .getattr("name")?
                .extract::<String>()
        })
        .is_ok_and(|name| name == "cpython");
    LAYOUT_311.store(
        cpython && version.major == 3 && version.minor == 11,
        Ordering::Relaxed,
    );
}

/// `PyDictObject` of CPython 3.11.
#[repr(C)]
struct DictObject {
    _ob_base: ffi::PyObject,
    _ma_used: ffi::Py_ssize_t,
    _ma_version_tag: u64,
    ma_keys: *mut KeysObject,
    ma_values: *mut std::ffi::c_void,
}

/// The fixed head of `PyDictKeysObject` of CPython 3.11; `dk_indices` follows it.
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

/// `DICT_KEYS_GENERAL`: entries are `{hash, key, value}`.
const KIND_GENERAL: u8 = 0;
/// `DICT_KEYS_UNICODE`: entries are `{key, value}`.
const KIND_UNICODE: u8 = 1;

/// The live entries of a combined-table dict, as borrowed `(key, value)` pointers.
pub(crate) struct Entries {
    slots: *const *mut ffi::PyObject,
    index: usize,
    count: usize,
    /// Pointers per entry (3 for general, 2 for unicode entries).
    stride: usize,
    /// Position of the key within an entry (the value follows it).
    key_at: usize,
}

impl Entries {
    /// The entries of `dict`, or `None` when the direct path does not apply.
    ///
    /// # Safety
    /// `dict` must be a live `dict` (or subclass) instance that is not mutated while the
    /// returned iterator is used, with the GIL held.
    pub(crate) unsafe fn of(dict: *mut ffi::PyObject) -> Option<Entries> {
        if !LAYOUT_311.load(Ordering::Relaxed) {
            return None;
        }
        // SAFETY: on CPython 3.11 (checked above) every dict instance starts with the
        // `DictObject` layout and `ma_keys` points to a keys object whose entry array starts
        // `1 << dk_log2_index_bytes` bytes after the fixed head and holds `dk_nentries` entries.
        unsafe {
            let object = &*dict.cast::<DictObject>();
            if !object.ma_values.is_null() {
                return None; // split table: values live elsewhere
            }
            let keys = &*object.ma_keys;
            let (stride, key_at) = match keys.dk_kind {
                KIND_GENERAL => (3, 1),
                KIND_UNICODE => (2, 0),
                _ => return None,
            };
            let head = object
                .ma_keys
                .cast::<u8>()
                .add(std::mem::size_of::<KeysObject>());
            let slots = head
                .add(1usize << keys.dk_log2_index_bytes)
                .cast::<*mut ffi::PyObject>();
            Some(Entries {
                slots,
                index: 0,
                count: keys.dk_nentries as usize,
                stride,
                key_at,
            })
        }
    }
}

impl Iterator for Entries {
    type Item = (*mut ffi::PyObject, *mut ffi::PyObject);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while self.index < self.count {
            // SAFETY: `index < count` entries exist (see `Entries::of`); the dict is unchanged.
            let (key, value) = unsafe {
                let entry = self.slots.add(self.index * self.stride + self.key_at);
                (*entry, *entry.add(1))
            };
            self.index += 1;
            if !value.is_null() {
                return Some((key, value));
            }
        }
        None
    }
}
