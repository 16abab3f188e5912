//! The CPython 3.11 layouts the encoder reads directly, instead of calling an exported function
//! per item (which costs a fifth of the time of dict-heavy messages). Compiled only for 3.11
//! (verified on 3.11.7) and used only when `ffi::init` enabled them:
//! - `Entries`: the entry array of a combined-table dict (`Include/cpython/dictobject.h`,
//!   `Include/internal/pycore_dict.h`), in the order `PyDict_Next` gives (entry array order,
//!   skipping deleted entries, whose value is NULL);
//! - `small_int`: the value of an int of at most two 30-bit digits (`Include/cpython/longintrepr.h`).
//!
//! Split tables and larger ints are left to the public path (`PyDict_Next`,
//! `PyLong_AsLongLongAndOverflow`).

use pyo3::ffi;

/// This build has the layouts (`ffi::init` still checks the digit size at run time).
pub(crate) const COMPILED: bool = true;

/// Bits per digit of an int (`PYLONG_BITS_IN_DIGIT`; `ffi::init` checks it).
const DIGIT_BITS: u32 = 30;

/// The value of the int (or subclass) object `int` when it has at most two digits, or `None`.
///
/// # Safety
/// `int` must be a live int object, with the GIL held, on CPython 3.11 with 30-bit digits.
#[inline]
pub(crate) unsafe fn small_int(int: *mut ffi::PyObject) -> Option<i64> {
    // SAFETY: on CPython 3.11 with 30-bit digits (the caller's contract) an int is a `PyVarObject`
    // whose `ob_size` is the signed count of `u32` digits stored right after the header.
    unsafe {
        let size = (*int.cast::<ffi::PyVarObject>()).ob_size;
        let digits = int
            .cast::<u8>()
            .add(std::mem::size_of::<ffi::PyVarObject>())
            .cast::<u32>();
        let magnitude = match size.unsigned_abs() {
            0 => 0,
            1 => i64::from(*digits),
            2 => i64::from(*digits) | i64::from(*digits.add(1)) << DIGIT_BITS,
            _ => return None,
        };
        Some(if size < 0 { -magnitude } else { magnitude })
    }
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
    /// returned iterator is used, with the GIL held, on CPython 3.11.
    #[inline]
    pub(crate) unsafe fn of(dict: *mut ffi::PyObject) -> Option<Entries> {
        // SAFETY: on CPython 3.11 (the caller's contract) every dict instance starts with the
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
