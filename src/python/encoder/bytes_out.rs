//! `BytesOut`: the encoder's output buffer. A line is first written into a per-thread scratch
//! buffer and copied into its `bytes` object at the end (cheap for the usual small line, and no
//! allocator churn). A line that outgrows the scratch buffer:
//! - where `ffi::can_resize_bytes()` (CPython 3.11 to 3.13, `_PyBytes_Resize`): moves, once, into
//!   a Python `bytes` object that is then written in place, grown and at the end given its length
//!   (its size lowered in place when at most an eighth is left over, else shrunk: `settle_bytes`),
//!   so a large line is never copied as a whole (that copy cost up to a seventh of the time of a
//!   large message);
//! - elsewhere (public C API only): keeps growing the scratch buffer, and is copied into a new
//!   `bytes` object at the end like a small line.

use std::alloc::{handle_alloc_error, Layout};
use std::ptr::NonNull;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::encode::Output;
use crate::python::ffi::{can_resize_bytes, resize_bytes, settle_bytes};

/// Size of the per-thread scratch buffer: lines up to this size are copied once at the end.
const SCRATCH_SIZE: usize = 16 * 1024;
/// A scratch buffer grown past this (public path, a large line) is freed rather than kept for the
/// thread's next line.
const SCRATCH_KEPT: usize = 4 * SCRATCH_SIZE;

/// The scratch buffer, taken by a `BytesOut` for its life and given back when it drops (a
/// re-entrant encoder call, only possible through Python code run by `encode_many`'s iterator,
/// finds it taken and makes its own). With a GIL, one buffer per process guarded by the GIL: a
/// thread-local costs a `__tls_get_addr` call per access in a shared library, twice per line.
#[cfg(not(Py_GIL_DISABLED))]
mod scratch {
    use std::cell::UnsafeCell;

    use pyo3::Python;

    /// A value only touched with the GIL held.
    struct GilGuarded(UnsafeCell<Vec<u8>>);

    // SAFETY: every access (`take`, `give_back`) happens with the GIL held, which serialises them;
    // PyO3 refuses to load the module into a subinterpreter, which could have a GIL of its own.
    unsafe impl Sync for GilGuarded {}

    static SCRATCH: GilGuarded = GilGuarded(UnsafeCell::new(Vec::new()));

    /// The buffer, leaving an empty one in its place.
    #[inline]
    pub(super) fn take(_py: Python<'_>) -> Vec<u8> {
        // SAFETY: the GIL is held (the token), so no other access runs; no reference outlives
        // this statement.
        unsafe { std::mem::take(&mut *SCRATCH.0.get()) }
    }

    /// Put `buffer` back (dropping whatever a re-entrant call left there).
    ///
    /// # Safety
    /// The GIL must be held.
    #[inline]
    pub(super) unsafe fn give_back(buffer: Vec<u8>) {
        // SAFETY: the caller holds the GIL; as in `take`.
        unsafe { *SCRATCH.0.get() = buffer };
    }
}

/// Without a GIL (free-threaded builds), one buffer per thread.
#[cfg(Py_GIL_DISABLED)]
mod scratch {
    use std::cell::Cell;

    use pyo3::Python;

    thread_local! {
        static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    }

    /// The buffer, leaving an empty one in its place.
    pub(super) fn take(_py: Python<'_>) -> Vec<u8> {
        SCRATCH.take()
    }

    /// Put `buffer` back (dropping whatever a re-entrant call left there).
    ///
    /// # Safety
    /// None beyond `take`'s (the `unsafe` matches the GIL build's).
    pub(super) unsafe fn give_back(buffer: Vec<u8>) {
        SCRATCH.set(buffer);
    }
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
    pub(crate) fn new(py: Python<'_>) -> Self {
        let mut scratch = scratch::take(py);
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
        self.settle(bytes);
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
            None if can_resize_bytes() => self.leave_scratch(capacity),
            None => self.grow_scratch(capacity),
        }
    }

    /// Public path: grow the scratch buffer itself to `capacity` bytes.
    fn grow_scratch(&mut self, capacity: usize) {
        // SAFETY: the first `len` bytes at `data` (the scratch buffer's) were written.
        unsafe { self.scratch.set_len(self.len) };
        self.scratch.reserve_exact(capacity - self.len);
        self.data = self.scratch.as_mut_ptr();
        self.capacity = self.scratch.capacity();
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
        // SAFETY: `bytes` exists only where `can_resize_bytes()` (`grow`); the object is a `bytes`
        // object with a reference count of 1 (created here and never handed out); the GIL is held
        // by the encoder.
        let resized = unsafe { resize_bytes(&mut raw, size(capacity)) };
        self.adopt(raw, resized, capacity);
    }

    /// Give the `bytes` object its line's length (`settle_bytes`: in place when the slack is small).
    fn settle(&mut self, bytes: NonNull<ffi::PyObject>) {
        let mut raw = bytes.as_ptr();
        // SAFETY: as in `resize`; `len <= capacity`, the object's size.
        let settled = unsafe { settle_bytes(&mut raw, size(self.len)) };
        self.adopt(raw, settled, self.len);
    }

    /// Take the `bytes` object `raw` of `capacity` bytes back from a resize (`done`), or abort.
    fn adopt(&mut self, raw: *mut ffi::PyObject, done: bool, capacity: usize) {
        match NonNull::new(raw) {
            Some(bytes) if done => {
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
        let mut scratch = std::mem::take(&mut self.scratch);
        if scratch.capacity() <= SCRATCH_KEPT {
            // `grow_scratch` may have set a length.
            scratch.clear();
            // SAFETY: a buffer only lives inside one encoder call, which holds the GIL throughout.
            unsafe { scratch::give_back(scratch) };
        }
    }
}
