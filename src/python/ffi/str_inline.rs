//! A non-ASCII `str` read in place on 3.12 and 3.13: its UTF-8 cache when CPython already made
//! one, else its own code units (`PyUnicode_KIND`, `PyUnicode_DATA`, `PyUnicode_GET_LENGTH`)
//! transcoded by the encoder (`encoder/ucs.rs`). The public path, `PyUnicode_AsUTF8AndSize`,
//! re-checks the type and the cache on every call and, on first touch, allocates and fills a
//! cache the object then keeps (about as much memory again as the text, for text that is mostly
//! encoded once).
//!
//! `PyCompactUnicodeObject` (`Include/cpython/unicodeobject.h`) is `PyASCIIObject` (header,
//! `length`, `hash`, a 4-byte `state` whose bits give `kind`, `compact`, `ascii`) followed by
//! `utf8_length` and `utf8`, then (compact strings) the characters; legacy strings (subclass
//! instances) keep a data pointer after it. pyo3-ffi's `PyUnicode_KIND`/`PyUnicode_DATA` read
//! the same layout. The same in 3.12.1 and 3.13.0 with the GIL, checked in their headers (3.11
//! still has `wstr` in between and is not built with this module; 3.14 turns the macros into
//! calls). Used only when `ffi::init` enabled it.

use pyo3::ffi;

/// This build has the layout (`ffi::init` adds the run-time conditions).
pub(crate) const COMPILED: bool = true;
/// `PyCompactUnicodeObject` of CPython 3.12 and 3.13 (GIL builds).
#[repr(C)]
struct CompactUnicodeObject {
    _ob_base: ffi::PyObject,
    _length: ffi::Py_ssize_t,
    _hash: ffi::Py_hash_t,
    _state: u32,
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
