//! The UTF-8 form CPython caches in a non-ASCII `str`, read from the object instead of through a
//! `PyUnicode_AsUTF8AndSize` call per string (a call that re-checks the type and the cache and
//! returns what is already there; 4% of the encoder's samples on a text-heavy corpus, and ~430 of
//! the ~10,000 instructions of a `fresh7` message on 3.11).
//!
//! `PyCompactUnicodeObject` (`Include/cpython/unicodeobject.h`) is `PyASCIIObject` (header,
//! `length`, `hash`, a 4-byte `state`, and on 3.11 the `wstr` pointer) followed by `utf8_length`
//! and `utf8`; every `str` that is not compact ASCII starts with it (compact ones, and the
//! "legacy" layout of subclass instances, which adds a data pointer after it). Checked in the
//! headers of 3.11.7 (with `wstr`), 3.12.1 and 3.13.0 (without; GIL builds). In each, the
//! `PyUnicode_AsUTF8AndSize` of a `str` that is not compact ASCII returns this `utf8` when it is set
//! (on 3.11 after `PyUnicode_READY`: a legacy string that is not ready has no `utf8` yet). Used only
//! when `ffi::init` enabled it. An empty cache (`utf8 == NULL`) is left to the public call, which
//! fills it (or reports lone surrogates).

use pyo3::ffi;

/// This build has the layout (`ffi::init` adds the run-time conditions).
pub(crate) const COMPILED: bool = true;

/// `PyCompactUnicodeObject` of CPython 3.11, 3.12 and 3.13 (GIL builds).
#[repr(C)]
struct CompactUnicodeObject {
    _ob_base: ffi::PyObject,
    _length: ffi::Py_ssize_t,
    _hash: ffi::Py_hash_t,
    _state: u32,
    /// `wstr` (`wchar_t *`), removed in 3.12.
    #[cfg(not(Py_3_12))]
    _wstr: *mut std::ffi::c_void,
    utf8_length: ffi::Py_ssize_t,
    utf8: *const u8,
}

/// The cached UTF-8 form of the `str` `text`, or `None` when it has none yet.
///
/// # Safety
/// `text` must be a live `str` (or subclass) instance that is not compact ASCII, with the GIL
/// held, on one of the versions this module is built for. The slice lives as long as `text`.
#[inline]
pub(crate) unsafe fn cached_utf8<'a>(text: *mut ffi::PyObject) -> Option<&'a [u8]> {
    // SAFETY: the caller's contract: such an object starts with `CompactUnicodeObject`, whose
    // `utf8`, when set, points to `utf8_length` bytes owned by the object until it dies.
    unsafe {
        let object = &*text.cast::<CompactUnicodeObject>();
        if object.utf8.is_null() {
            return None;
        }
        Some(std::slice::from_raw_parts(
            object.utf8,
            object.utf8_length as usize,
        ))
    }
}
