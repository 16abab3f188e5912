//! Python binding of `crate::plain_call`: `plain_call`, the listening proxy's read of a POST body
//! that is one plain request.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::plain_call::{one_line, plain_call as read_call, PlainId};

use super::decoder::{big_int, str_or_err};

/// `(id, method, line)` of a body that is one plain call, or `None` (`crate::plain_call`).
#[pyfunction]
#[pyo3(signature = (body, max_frame, /))]
fn plain_call<'py>(
    py: Python<'py>,
    body: &Bound<'py, PyAny>,
    max_frame: usize,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Ok(body) = body.cast::<PyBytes>() else {
        let name = body.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "body must be bytes, not {name}"
        )));
    };
    let bytes = body.as_bytes();
    let Some(found) = read_call(bytes, max_frame) else {
        return Ok(None);
    };
    let id = match found.id {
        PlainId::Int(value) => value.into_pyobject(py)?.into_any(),
        PlainId::Big(range) => big_int(py, &bytes[range])?,
        PlainId::Str(range) => {
            str_or_err(py, std::str::from_utf8(&bytes[range]).unwrap_or_default())?.into_any()
        }
    };
    let method = str_or_err(py, found.method.as_str(bytes))?;
    let line = PyBytes::new(py, &one_line(bytes));
    Ok(Some((id, method, line).into_pyobject(py)?))
}

/// Register `plain_call`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plain_call, m)?)?;
    Ok(())
}
