//! Python binding of `crate::http_head`: `plain_request`, the lean HTTP server's read of a plain request,
//! and `header_dict`, a request's headers as the dict the HTTP host checks.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

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
    for &((from, to), value) in &found.headers {
        // lowercased as it is copied into the `bytes` (no copy of its own)
        let name = PyBytes::new_with(py, to - from, |name| {
            name.copy_from_slice(&bytes[from..to]);
            name.make_ascii_lowercase();
            Ok(())
        })?;
        headers.append((name, slice(value)))?;
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

/// `bytes` decoded as Latin-1 (every byte one character: never fails).
fn latin1<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let len = isize::try_from(bytes.len()).map_err(|_| PyValueError::new_err("header too long"))?;
    // SAFETY: the pointer and length are those of a live slice; the call returns a new reference or NULL
    // with an exception set, which `from_owned_ptr_or_err` turns into the error
    unsafe {
        let text = pyo3::ffi::PyUnicode_DecodeLatin1(bytes.as_ptr().cast(), len, std::ptr::null());
        Bound::from_owned_ptr_or_err(py, text)
    }
}

/// The `str` of a header name: the names every MCP request carries are interned once per interpreter
/// (no allocation, their hash known when the dict and its readers look them up).
fn header_name<'py>(py: Python<'py>, name: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let known: Option<&Bound<'py, PyString>> = match name {
        b"host" => Some(intern!(py, "host")),
        b"origin" => Some(intern!(py, "origin")),
        b"accept" => Some(intern!(py, "accept")),
        b"content-type" => Some(intern!(py, "content-type")),
        b"content-length" => Some(intern!(py, "content-length")),
        b"mcp-session-id" => Some(intern!(py, "mcp-session-id")),
        b"mcp-protocol-version" => Some(intern!(py, "mcp-protocol-version")),
        b"last-event-id" => Some(intern!(py, "last-event-id")),
        b"authorization" => Some(intern!(py, "authorization")),
        b"user-agent" => Some(intern!(py, "user-agent")),
        _ => None,
    };
    match known {
        Some(text) => Ok(text.clone().into_any()),
        None => latin1(py, name),
    }
}

/// `{name: value}` of a list of `(name, value)` bytes pairs, both decoded as Latin-1; the first of a
/// repeated name is kept.
#[pyfunction]
#[pyo3(signature = (headers, /))]
fn header_dict<'py>(py: Python<'py>, headers: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let shape = || PyTypeError::new_err("headers must be a list of (bytes, bytes) tuples");
    let list = headers.cast::<PyList>().map_err(|_| shape())?;
    let dict = PyDict::new(py);
    for item in list.iter() {
        let pair = item.cast::<PyTuple>().map_err(|_| shape())?;
        if pair.len() != 2 {
            return Err(shape());
        }
        let name = pair.get_borrowed_item(0)?;
        let value = pair.get_borrowed_item(1)?;
        let (Ok(name), Ok(value)) = (name.cast::<PyBytes>(), value.cast::<PyBytes>()) else {
            return Err(shape());
        };
        let key = header_name(py, name.as_bytes())?;
        if !dict.contains(&key)? {
            dict.set_item(key, latin1(py, value.as_bytes())?)?;
        }
    }
    Ok(dict)
}

/// Register `plain_request` and `header_dict`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plain_request, m)?)?;
    m.add_function(wrap_pyfunction!(header_dict, m)?)?;
    Ok(())
}
