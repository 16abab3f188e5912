//! Python binding of `crate::http_head`: `plain_request`, the lean HTTP server's read of a plain request.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::http_head;

/// `(method, target, headers, body, next)` of the plain request at `data[start]`, or `None`.
#[pyfunction]
#[pyo3(signature = (data, start, /))]
fn plain_request<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    start: isize,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Ok(data) = data.cast::<PyBytes>() else {
        let name = data.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "data must be bytes, not {name}"
        )));
    };
    let bytes = data.as_bytes();
    let start = usize::try_from(start)
        .ok()
        .filter(|&start| start <= bytes.len())
        .ok_or_else(|| PyValueError::new_err("start is out of range"))?;
    let Some(found) = http_head::plain_request(bytes, start) else {
        return Ok(None);
    };
    let slice = |(from, to): (usize, usize)| PyBytes::new(py, &bytes[from..to]);
    let headers = PyList::empty(py);
    for (name, value) in &found.headers {
        headers.append((PyBytes::new(py, name), slice(*value)))?;
    }
    // the three methods' `str`s made once per interpreter, not per request
    let method = match found.method {
        "GET" => intern!(py, "GET"),
        "POST" => intern!(py, "POST"),
        _ => intern!(py, "DELETE"),
    };
    let request = (
        method,
        slice(found.target),
        headers,
        slice(found.body),
        found.next,
    );
    Ok(Some(request.into_pyobject(py)?))
}

/// Register `plain_request`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plain_request, m)?)?;
    Ok(())
}
