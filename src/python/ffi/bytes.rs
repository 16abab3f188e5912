//! `_PyBytes_Resize`: the function CPython exports for building a `bytes` object of unknown final
//! size (grow it while writing, shrink it to the length at the end), which lets the encoder write
//! a large line straight into the object it returns instead of copying it there once more.
//!
//! `settle` ends such a line: a `bytes` object whose slack is small keeps its block and only has its
//! size lowered (`Py_SET_SIZE`, the trailing NUL CPython keeps after every `bytes` written anew), so a
//! large line is not shrunk with a `realloc` (an `mremap` above glibc's mmap threshold, after which
//! glibc's dynamic threshold never rises and every later large line is mapped, faulted in and
//! unmapped anew).
//!
//! It is private (a leading underscore; 3.15 replaces it with the public `PyBytesWriter`), and its
//! contract is unchanged from 3.11 to 3.13, where it was verified (3.11.7, 3.12.1, 3.13.0); other
//! versions build without it and the encoder copies the line from a Rust buffer instead.

use pyo3::ffi;

/// Whether this build calls `_PyBytes_Resize` (`ffi::init` adds the run-time conditions).
pub(crate) const COMPILED: bool = cfg!(all(
    Py_3_11,
    not(Py_3_14),
    not(PyPy),
    not(GraalPy),
    not(Py_GIL_DISABLED)
));

#[cfg(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED)))]
extern "C" {
    /// CPython: resize a `bytes` object with a reference count of 1 (in place when possible).
    /// On failure the object is released, `*bytes` set to NULL and `MemoryError` raised.
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, newsize: ffi::Py_ssize_t)
        -> std::ffi::c_int;
}

/// `_PyBytes_Resize(bytes, size) == 0`.
///
/// # Safety
/// `COMPILED` and the run-time checks of `ffi::init` hold; `*bytes` is a `bytes` object with a
/// reference count of 1 that no Python code has seen; the GIL is held.
#[cfg(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED)))]
#[inline]
pub(crate) unsafe fn resize(bytes: &mut *mut ffi::PyObject, size: ffi::Py_ssize_t) -> bool {
    // SAFETY: the caller's contract is `_PyBytes_Resize`'s.
    unsafe { _PyBytes_Resize(bytes, size) == 0 }
}

/// Give the `bytes` object `*bytes` (of `Py_SIZE` bytes, the first `len` written) the size `len`:
/// when at most an eighth of it is left over, in place (its size lowered and a NUL written after
/// the last byte, as every `bytes` object has one: `PyBytes_AS_STRING` users rely on it), else
/// with `resize` (the memory given back). `false` as `resize`'s.
///
/// # Safety
/// As `resize`; `len` is at most the object's size.
#[cfg(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED)))]
#[inline]
pub(crate) unsafe fn settle(bytes: &mut *mut ffi::PyObject, len: ffi::Py_ssize_t) -> bool {
    let object = *bytes;
    // SAFETY: `object` is a live `bytes` object (the caller's contract), a `PyVarObject`.
    let capacity = unsafe { ffi::Py_SIZE(object) };
    debug_assert!((0..=capacity).contains(&len));
    if capacity - len > capacity / 8 {
        // SAFETY: the caller's contract is `resize`'s.
        return unsafe { resize(bytes, len) };
    }
    // SAFETY: the object has room for `capacity + 1 >= len + 1` bytes from its data (CPython
    // allocates one more than the size for the NUL); no Python code has seen it, so nothing
    // depends on its old size; its cached hash is still unset (-1), as no one hashed it.
    unsafe {
        (*object.cast::<ffi::PyVarObject>()).ob_size = len;
        let data = ffi::PyBytes_AS_STRING(object).cast_mut();
        *data.add(len as usize) = 0;
    }
    true
}

/// Never called on this build (`COMPILED` is false, so `ffi::can_resize_bytes()` is too).
///
/// # Safety
/// None needed: it is unreachable.
#[cfg(not(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED))))]
pub(crate) unsafe fn resize(_bytes: &mut *mut ffi::PyObject, _size: ffi::Py_ssize_t) -> bool {
    unreachable!("_PyBytes_Resize is not used on this interpreter")
}

/// Never called on this build (`COMPILED` is false, so `ffi::can_resize_bytes()` is too).
///
/// # Safety
/// None needed: it is unreachable.
#[cfg(not(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED))))]
pub(crate) unsafe fn settle(_bytes: &mut *mut ffi::PyObject, _len: ffi::Py_ssize_t) -> bool {
    unreachable!("_PyBytes_Resize is not used on this interpreter")
}
