//! `BytesOut`: the encoder's output buffer, a Python `bytes` object written in place and shrunk
//! to its final length at the end, so the result is handed to Python without a copy (a copy of
//! the whole line cost up to a seventh of the time of a large message).
//!
//! It relies on `_PyBytes_Resize`, which CPython exports for exactly this use (building a `bytes`
//! object of unknown final size); the object is never visible to Python code before `finish`.

use std::alloc::{handle_alloc_error, Layout};
use std::os::raw::c_int;
use std::ptr::NonNull;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::encode::Output;

extern "C" {
    /// CPython: resize a `bytes` object with a reference count of 1 (in place when possible).
    /// On failure the object is released, `*bytes` set to NULL and `MemoryError` raised.
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, newsize: ffi::Py_ssize_t) -> c_int;
}

/// A `bytes` object under construction: `len` bytes written out of `capacity`, at `data`.
pub(crate) struct BytesOut {
    data: *mut u8,
    len: usize,
    capacity: usize,
    bytes: NonNull<ffi::PyObject>,
}

impl BytesOut {
    /// An empty buffer with room for `capacity` bytes (GIL held).
    pub(crate) fn with_capacity(_py: Python<'_>, capacity: usize) -> Self {
        // SAFETY: a NULL source asks CPython for an uninitialised `bytes` object of that size.
        let raw = unsafe { ffi::PyBytes_FromStringAndSize(std::ptr::null(), size(capacity)) };
        let bytes = NonNull::new(raw).unwrap_or_else(|| out_of_memory(capacity));
        BytesOut {
            data: data_of(bytes),
            len: 0,
            capacity,
            bytes,
        }
    }

    /// Shrink the object to the bytes written and hand it over.
    pub(crate) fn finish(mut self, py: Python<'_>) -> Bound<'_, PyBytes> {
        self.resize(self.len);
        let bytes = self.bytes;
        std::mem::forget(self);
        // SAFETY: `bytes` is a `bytes` object we own one reference to; ownership moves out.
        unsafe { Bound::from_owned_ptr(py, bytes.as_ptr()).cast_into_unchecked() }
    }

    /// Resize the object to `capacity` bytes (it is never shared before `finish`).
    #[cold]
    #[inline(never)]
    fn resize(&mut self, capacity: usize) {
        let mut raw = self.bytes.as_ptr();
        // SAFETY: the object is a `bytes` object with a reference count of 1 (created here and
        // never handed out), as `_PyBytes_Resize` requires; the GIL is held by the encoder.
        let status = unsafe { _PyBytes_Resize(&mut raw, size(capacity)) };
        match NonNull::new(raw) {
            Some(bytes) if status == 0 => {
                self.bytes = bytes;
                self.data = data_of(bytes);
                self.capacity = capacity;
            }
            // The object is gone (CPython released it): nothing left to drop, abort like `Vec`.
            _ => out_of_memory(capacity),
        }
    }
}

impl BytesOut {
    /// Room for `additional` more bytes: at least double the capacity.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let needed = self.len.saturating_add(additional);
        self.resize(needed.max(self.capacity.saturating_mul(2)));
    }
}

/// The data of a `bytes` object.
fn data_of(bytes: NonNull<ffi::PyObject>) -> *mut u8 {
    // SAFETY: `bytes` is a live `bytes` object.
    unsafe {
        ffi::PyBytes_AS_STRING(bytes.as_ptr())
            .cast_mut()
            .cast::<u8>()
    }
}

/// `usize` to `Py_ssize_t`; sizes beyond it cannot be allocated anyway.
fn size(capacity: usize) -> ffi::Py_ssize_t {
    ffi::Py_ssize_t::try_from(capacity).unwrap_or_else(|_| out_of_memory(capacity))
}

#[cold]
fn out_of_memory(capacity: usize) -> ! {
    handle_alloc_error(Layout::array::<u8>(capacity).unwrap_or(Layout::new::<u8>()))
}

impl Output for BytesOut {
    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn capacity(&self) -> usize {
        self.capacity
    }

    #[inline]
    fn reserve(&mut self, additional: usize) {
        if additional > self.capacity - self.len {
            self.grow(additional);
        }
    }

    #[inline]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: the object is a live `bytes` object; its data holds `capacity` bytes.
        unsafe {
            ffi::PyBytes_AS_STRING(self.bytes.as_ptr())
                .cast_mut()
                .cast::<u8>()
        }
    }

    #[inline]
    unsafe fn set_len(&mut self, len: usize) {
        self.len = len;
    }
}

impl Drop for BytesOut {
    fn drop(&mut self) {
        // SAFETY: we own one reference to the object; only dropped with the GIL held (the
        // encoder never releases it while a buffer is alive).
        unsafe { ffi::Py_DECREF(self.bytes.as_ptr()) };
    }
}
