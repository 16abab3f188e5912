//! `BytesOut`: the encoder's output buffer. A line is first written into a per-thread scratch
//! buffer and copied into its `bytes` object at the end (cheap for the usual small line, and no
//! allocator churn); a line that outgrows the scratch buffer moves, once, into a Python `bytes`
//! object that is then written in place, grown with `_PyBytes_Resize` and shrunk to its length
//! at the end, so a large line is never copied as a whole (that copy cost up to a seventh of the
//! time of a large message).
//!
//! `_PyBytes_Resize` is the function CPython exports for exactly this (building a `bytes` object
//! of unknown final size); the object is never visible to Python code before `finish`.

use std::alloc::{handle_alloc_error, Layout};
use std::cell::Cell;
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

/// Size of the per-thread scratch buffer: lines up to this size are copied once at the end.
const SCRATCH_SIZE: usize = 16 * 1024;

thread_local! {
    /// The scratch buffer, taken by a `BytesOut` for its life (a re-entrant encoder call, only
    /// possible through Python code run by `encode_many`'s iterator, makes its own).
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// A line under construction: `len` bytes written out of `capacity`, at `data`, which points
/// into `scratch` until the line outgrows it, then into `bytes`.
pub(crate) struct BytesOut {
    data: *mut u8,
    len: usize,
    capacity: usize,
    bytes: Option<NonNull<ffi::PyObject>>,
    scratch: Vec<u8>,
}

impl BytesOut {
    /// An empty buffer (GIL held).
    pub(crate) fn new(_py: Python<'_>) -> Self {
        let mut scratch = SCRATCH.take();
        if scratch.capacity() < SCRATCH_SIZE {
            scratch = Vec::with_capacity(SCRATCH_SIZE);
        }
        BytesOut {
            data: scratch.as_mut_ptr(),
            len: 0,
            capacity: scratch.capacity(),
            bytes: None,
            scratch,
        }
    }

    /// The line as a `bytes` object.
    pub(crate) fn finish(mut self, py: Python<'_>) -> Bound<'_, PyBytes> {
        let Some(bytes) = self.bytes else {
            // SAFETY: the first `len` bytes at `data` (in `scratch`) were written.
            let line = unsafe { std::slice::from_raw_parts(self.data, self.len) };
            return PyBytes::new(py, line);
        };
        self.resize(bytes, self.len);
        let bytes = self.bytes.take().unwrap_or_else(|| out_of_memory(self.len));
        // SAFETY: `bytes` is a `bytes` object we own the only reference to; it moves out.
        unsafe { Bound::from_owned_ptr(py, bytes.as_ptr()).cast_into_unchecked() }
    }

    /// Room for `additional` more bytes: at least double the capacity, and an eighth more than
    /// asked for (a large string is followed by a few closing bytes, which must not cost a
    /// second resize of the whole buffer).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let needed = self.len.saturating_add(additional);
        let roomy = needed.saturating_add(needed / 8).saturating_add(64);
        let capacity = roomy.max(self.capacity.saturating_mul(2));
        match self.bytes {
            Some(bytes) => self.resize(bytes, capacity),
            None => self.leave_scratch(capacity),
        }
    }

    /// Move the line from the scratch buffer into a new `bytes` object of `capacity` bytes.
    fn leave_scratch(&mut self, capacity: usize) {
        // SAFETY: a NULL source asks CPython for an uninitialised `bytes` object of that size.
        let raw = unsafe { ffi::PyBytes_FromStringAndSize(std::ptr::null(), size(capacity)) };
        let bytes = NonNull::new(raw).unwrap_or_else(|| out_of_memory(capacity));
        let data = data_of(bytes);
        // SAFETY: `len <= capacity` bytes were written at `data` (scratch), the new object has
        // room for `capacity` bytes, and the two buffers are distinct.
        unsafe { std::ptr::copy_nonoverlapping(self.data, data, self.len) };
        self.bytes = Some(bytes);
        self.data = data;
        self.capacity = capacity;
    }

    /// Resize the `bytes` object to `capacity` bytes (it is never shared before `finish`).
    fn resize(&mut self, bytes: NonNull<ffi::PyObject>, capacity: usize) {
        let mut raw = bytes.as_ptr();
        // SAFETY: the object is a `bytes` object with a reference count of 1 (created here and
        // never handed out), as `_PyBytes_Resize` requires; the GIL is held by the encoder.
        let status = unsafe { _PyBytes_Resize(&mut raw, size(capacity)) };
        match NonNull::new(raw) {
            Some(bytes) if status == 0 => {
                self.bytes = Some(bytes);
                self.data = data_of(bytes);
                self.capacity = capacity;
            }
            // CPython released the object: nothing is left to drop; abort like `Vec` does.
            _ => {
                self.bytes = None;
                out_of_memory(capacity)
            }
        }
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
        self.data
    }

    #[inline]
    unsafe fn set_len(&mut self, len: usize) {
        self.len = len;
    }
}

impl Drop for BytesOut {
    fn drop(&mut self) {
        if let Some(bytes) = self.bytes.take() {
            // SAFETY: we own the only reference to the object; the GIL is held (a buffer only
            // lives inside one encoder call, which never releases it).
            unsafe { ffi::Py_DECREF(bytes.as_ptr()) };
        }
        SCRATCH.set(std::mem::take(&mut self.scratch));
    }
}
