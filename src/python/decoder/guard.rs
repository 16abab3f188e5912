//! The guard of one frame: whatever goes wrong while the Python objects of a frame are built (a
//! Python exception such as `MemoryError`, or a panic of a PyO3 constructor that met a failed
//! allocation) costs that frame only. It becomes one `FrameError` -32603 and the other frames of
//! the chunk are delivered as usual, so a session can answer and go on.
//!
//! Catching the unwind costs nothing on the path that does not panic; the objects half built for
//! the frame are dropped (released) on the way out. PyO3 hands the exception of a constructor that
//! got NULL to `sys.unraisablehook` before it panics, so such a frame's error names
//! `PanicException`; an exception still pending after a panic is taken, so that the interpreter's
//! state is clean again.
//!
//! When memory is so short that the `FrameError` itself cannot be built, the call raises
//! `MemoryError` instead (an instance CPython keeps ready, so raising it allocates nothing); the
//! decoder stays usable: the frames of the chunk before the failed one are lost with the call,
//! as with any exception it raises, and later chunks decode as usual.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::envelope::{self, Failure, Item, Kind};
use crate::framing::PREVIEW_BYTES;

use super::build::frame_error;

/// JSON-RPC code of the guard's `FrameError`.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// Run `build`, which builds the objects of one frame: its value, or the name of the type of the
/// exception it raised (or of the panic it met).
pub(crate) fn guarded<T>(py: Python<'_>, build: impl FnOnce() -> PyResult<T>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(build)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(type_name(py, &err)),
        // the exception is normally reported and cleared by PyO3 before it panics
        Err(_) => {
            Err(PyErr::take(py)
                .map_or_else(|| "PanicException".to_owned(), |err| type_name(py, &err)))
        }
    }
}

fn type_name(py: Python<'_>, err: &PyErr) -> String {
    err.get_type(py)
        .name()
        .map_or_else(|_| "Exception".to_owned(), |n| n.to_string())
}

/// The `FrameError` that stands for `frame` (at stream `offset`) when building its objects raised
/// `name`. Its id and notification flag come from a validation of the frame that builds nothing:
/// the top-level id when the frame is one object with a string or integer id (within the digit
/// limit), and whether it is a valid notification. If that cannot be built either (a failed
/// allocation, met as an exception or a constructor's panic), the pending exception or a
/// `MemoryError`, either one ready to raise without allocating.
pub(crate) fn internal_error<'py>(
    py: Python<'py>,
    frame: &[u8],
    offset: u64,
    batches: bool,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let built = catch_unwind(AssertUnwindSafe(|| {
        build_internal_error(py, frame, offset, batches, name)
    }));
    match built {
        Ok(result) => result,
        Err(_) => Err(PyErr::take(py).unwrap_or_else(|| no_memory(py))),
    }
}

/// A `MemoryError` already made (CPython keeps a few preallocated), so that raising it cannot
/// fail the way a lazily built exception would when memory is short.
fn no_memory(py: Python<'_>) -> PyErr {
    // SAFETY: `PyErr_NoMemory` only sets the current exception (and returns NULL).
    unsafe { ffi::PyErr_NoMemory() };
    PyErr::take(py).unwrap_or_else(|| pyo3::exceptions::PyMemoryError::new_err(()))
}

fn build_internal_error<'py>(
    py: Python<'py>,
    frame: &[u8],
    offset: u64,
    batches: bool,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let mut items = Vec::with_capacity(1);
    envelope::validate(frame, batches, &mut items);
    let (id, notification) = match items.as_slice() {
        [Item::Message(e)] if e.batch.is_none() => (
            e.id.as_ref().map(|id| id.owned(frame)),
            e.kind == Kind::Notification,
        ),
        [Item::Failure(f)] if f.batch.is_none() => (f.id.clone(), f.notification),
        _ => (None, false),
    };
    let failure = Failure {
        code: INTERNAL_ERROR,
        message: Cow::Owned(format!(
            "Internal error: decoding the frame failed ({name})"
        )),
        id,
        start: 0,
        end: frame.len(),
        preview: frame[..frame.len().min(PREVIEW_BYTES)].to_vec(),
        batch: None,
        notification,
    };
    frame_error(py, offset, &failure, Some(frame))
}
