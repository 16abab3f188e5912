//! Python binding of `crate::span`: `value_span`, the byte span of a value found by a key path.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::span;

/// The `(start, end)` byte span of the value at `path` in a raw message, or `None`.
#[pyfunction]
#[pyo3(signature = (frame, path, /))]
fn value_span(
    frame: &Bound<'_, PyAny>,
    path: &Bound<'_, PyAny>,
) -> PyResult<Option<(usize, usize)>> {
    let Ok(frame) = frame.cast::<PyBytes>() else {
        let name = frame.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "frame must be bytes, not {name}"
        )));
    };
    if path.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "path must be a sequence of str, not a str",
        ));
    }
    let keys: Vec<String> = path
        .extract()
        .map_err(|_| PyTypeError::new_err("path must be a sequence of str"))?;
    if keys.is_empty() {
        return Err(PyValueError::new_err("path must not be empty"));
    }
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let bytes = frame.as_bytes();
    // frames that need this are small (a request's envelope): no GIL release
    let found = span::value_span(bytes, &keys).map_err(|e| PyValueError::new_err(e.message()))?;
    Ok(found.map(|r| (r.start, r.end)))
}

/// Register `value_span`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(value_span, m)?)?;
    Ok(())
}
