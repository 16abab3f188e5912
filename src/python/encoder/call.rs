//! `encode(message, /)` as a plain `METH_O` C function instead of a `#[pyfunction]`.
//!
//! `encode` is the one call made per outgoing message, and most messages are a few hundred bytes,
//! so the fixed cost of a call is a large share of its time. A `#[pyfunction]` with one
//! positional-only argument goes through `METH_FASTCALL | METH_KEYWORDS`, PyO3's argument parser
//! and its trampoline, which counts the thread's attachment in a thread-local (an out-of-line
//! `__tls_get_addr` in a shared library); together about 200 instructions per call, measured with
//! callgrind (`benches/encode_ratio.py`). `METH_O` hands the one argument over directly.
//!
//! What the trampoline gave is kept: a panic never unwinds into CPython (it becomes a
//! `PanicException`), and every PyO3 error is raised inside `Python::attach`, so the Python
//! references it releases are released at once rather than queued in PyO3's deferred pool. The
//! walk itself drops no `Py<T>` (see `Walker::str_failure`), so it needs no attachment count.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;

use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;

/// A method definition CPython may read from a `static`.
struct MethodDef(ffi::PyMethodDef);

// SAFETY: the definition is never written (CPython only reads it) and holds pointers to static
// strings and to a function, which any thread may read.
unsafe impl Sync for MethodDef {}

/// `encode`, with the text signature CPython parses for `inspect.signature` (`$module` is dropped
/// there, as for every module-level builtin).
static ENCODE: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"encode".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer {
        PyCFunction: encode_o,
    },
    ml_flags: ffi::METH_O,
    ml_doc: c"encode($module, message, /)\n--\n\nAny JSON value as one compact line + LF.".as_ptr(),
});

/// The C function behind `encode`: a new `bytes` reference, or NULL with an exception set.
unsafe extern "C" fn encode_o(
    _module: *mut ffi::PyObject,
    message: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: CPython calls a C function only from a thread attached to the interpreter,
        // with a live borrowed argument that outlives the call.
        let py = unsafe { Python::assume_attached() };
        let message = unsafe { Borrowed::from_ptr(py, message) };
        super::encode(py, &message).map(Bound::into_ptr)
    }));
    match outcome {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(err)) => raise(err),
        Err(payload) => raise(panic_error(payload.as_ref())),
    }
}

/// Set `err` as the current exception and return NULL.
#[cold]
fn raise(err: PyErr) -> *mut ffi::PyObject {
    // Restoring a lazily built error releases its type and value references: inside `attach`
    // PyO3 knows the thread is attached and releases them now.
    Python::attach(|py| err.restore(py));
    null_mut()
}

/// A `PanicException` carrying the panic's message.
#[cold]
fn panic_error(payload: &(dyn Any + Send)) -> PyErr {
    let message = payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic in mcpframe._core.encode".to_owned());
    PanicException::new_err(message)
}

/// Add `encode` to the module (listed in `__all__` like the `#[pyfunction]`s).
pub(super) fn register_encode(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let name = m.name()?;
    let definition = std::ptr::from_ref(&ENCODE.0).cast_mut();
    // SAFETY: the definition is static (CPython keeps the pointer and never writes through it);
    // the module and its name are live objects; the GIL is held.
    let function = unsafe {
        let raw = ffi::PyCFunction_NewEx(definition, m.as_ptr(), name.as_ptr());
        Bound::from_owned_ptr_or_err(py, raw)?
    };
    m.add("encode", function)
}
