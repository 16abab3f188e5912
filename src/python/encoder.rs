//! Python bindings of the encoder: `encode_request`, `encode_notification`, `encode_result`,
//! `encode_error`, `encode` and `encode_many`. Each builds its NDJSON line(s) in a `BytesOut`
//! (`encoder/bytes_out.rs`; the walker in `encoder/walk.rs` writes the values) and returns `bytes`.
//!
//! Each argument is checked just before it is written, left to right, so that with several bad
//! arguments the leftmost one decides the exception (the contract's order, which the Python backend
//! follows too): `encode_request("\ud800", 5)` (a lone surrogate id, a non-str method) raises the
//! id's `EncodeError`, not the method's `TypeError`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyString};

use super::errors::new_error;
use crate::encode::{self as json, Output};

mod bytes_out;
mod call;
mod keys;
mod walk;

use bytes_out::BytesOut;
use walk::{Failure, Walked, Walker};

/// Run `build` on an empty output buffer and return what it wrote as `bytes`.
fn with_buffer<'py>(
    py: Python<'py>,
    build: impl FnOnce(&mut Walker<'py>) -> Walked,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut walker = Walker::new(py, BytesOut::new(py));
    let failure = build(&mut walker).is_err().then(|| walker.take_failure());
    let out = walker.into_out();
    match failure {
        None => Ok(out.finish(py)),
        Some(failure) => Err(to_pyerr(py, failure)),
    }
}

#[cold]
fn to_pyerr(py: Python<'_>, failure: Failure) -> PyErr {
    match (failure.message(), failure) {
        (Some(message), _) => new_error(py, "EncodeError", message),
        (None, Failure::Python(err)) => err,
        (None, _) => unreachable!("every other failure has a message"),
    }
}

/// Stop the build with `checked`'s `TypeError`, if any (argument checks run inside the build so
/// that they interleave with the writing of the arguments before them).
fn check(w: &mut Walker<'_>, checked: PyResult<()>) -> Walked {
    match checked {
        Ok(()) => Ok(()),
        Err(err) => w.fail(Failure::Python(err)),
    }
}

/// An id argument: `int` or `str` (or `None` where allowed); `bool` and anything else raise
/// `TypeError` (same text as the Python backend).
fn check_id(id: &Bound<'_, PyAny>, allow_none: bool) -> PyResult<()> {
    let ok = if id.is_instance_of::<PyBool>() {
        false
    } else {
        id.is_instance_of::<PyInt>()
            || id.is_instance_of::<PyString>()
            || (allow_none && id.is_none())
    };
    if ok {
        return Ok(());
    }
    let name = id.get_type().name()?;
    Err(PyTypeError::new_err(format!(
        "id must be an int or a str, not {name}"
    )))
}

/// A `str` argument (subclasses included).
fn check_str(what: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if value.is_instance_of::<PyString>() {
        return Ok(());
    }
    let name = value.get_type().name()?;
    Err(PyTypeError::new_err(format!(
        "{what} must be a str, not {name}"
    )))
}

/// The `code` of an error: an `int`, not a `bool`.
fn check_code(code: &Bound<'_, PyAny>) -> PyResult<()> {
    if code.is_instance_of::<PyInt>() && !code.is_instance_of::<PyBool>() {
        return Ok(());
    }
    let name = code.get_type().name()?;
    Err(PyTypeError::new_err(format!(
        "code must be an int, not {name}"
    )))
}

/// `{"jsonrpc":"2.0","id":<id>,"method":<method>[,"params":<params>]}` + LF; params omitted when None.
#[pyfunction]
#[pyo3(signature = (id, method, params = None, /))]
fn encode_request<'py>(
    py: Python<'py>,
    id: &Bound<'py, PyAny>,
    method: &Bound<'py, PyAny>,
    params: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    with_buffer(py, |w| {
        check(w, check_id(id, false))?;
        w.out().extend_from_slice(json::ENVELOPE_START);
        w.out().extend_from_slice(json::KEY_ID);
        w.value(id)?;
        check(w, check_str("method", method))?;
        w.out().extend_from_slice(json::KEY_METHOD);
        w.string(method)?;
        if let Some(params) = params {
            w.out().extend_from_slice(json::KEY_PARAMS);
            w.value(params)?;
        }
        w.out().extend_from_slice(json::ENVELOPE_END);
        Ok(())
    })
}

/// `{"jsonrpc":"2.0","method":<method>[,"params":<params>]}` + LF; params omitted when None.
#[pyfunction]
#[pyo3(signature = (method, params = None, /))]
fn encode_notification<'py>(
    py: Python<'py>,
    method: &Bound<'py, PyAny>,
    params: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    with_buffer(py, |w| {
        check(w, check_str("method", method))?;
        w.out().extend_from_slice(json::ENVELOPE_START);
        w.out().extend_from_slice(json::KEY_METHOD);
        w.string(method)?;
        if let Some(params) = params {
            w.out().extend_from_slice(json::KEY_PARAMS);
            w.value(params)?;
        }
        w.out().extend_from_slice(json::ENVELOPE_END);
        Ok(())
    })
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}` + LF.
#[pyfunction]
#[pyo3(signature = (id, result, /))]
fn encode_result<'py>(
    py: Python<'py>,
    id: &Bound<'py, PyAny>,
    result: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    with_buffer(py, |w| {
        check(w, check_id(id, false))?;
        w.out().extend_from_slice(json::ENVELOPE_START);
        w.out().extend_from_slice(json::KEY_ID);
        w.value(id)?;
        w.out().extend_from_slice(json::KEY_RESULT);
        w.value(result)?;
        w.out().extend_from_slice(json::ENVELOPE_END);
        Ok(())
    })
}

/// The `data` argument of `encode_error`: absent (omitted from the output) or any value, `None`
/// included (written as `null`).
enum ErrorData<'py> {
    Missing,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for ErrorData<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(ErrorData::Given(obj.to_owned()))
    }
}

/// `{"jsonrpc":"2.0","id":<id>,"error":{"code":<code>,"message":<message>[,"data":<data>]}}` + LF.
#[pyfunction]
#[pyo3(signature = (id, code, message, /, data = ErrorData::Missing))]
fn encode_error<'py>(
    py: Python<'py>,
    id: &Bound<'py, PyAny>,
    code: &Bound<'py, PyAny>,
    message: &Bound<'py, PyAny>,
    data: ErrorData<'py>,
) -> PyResult<Bound<'py, PyBytes>> {
    with_buffer(py, |w| {
        check(w, check_id(id, true))?;
        w.out().extend_from_slice(json::ENVELOPE_START);
        w.out().extend_from_slice(json::KEY_ID);
        w.value(id)?;
        check(w, check_code(code))?;
        w.out().extend_from_slice(json::KEY_ERROR_CODE);
        w.value(code)?;
        check(w, check_str("message", message))?;
        w.out().extend_from_slice(json::KEY_MESSAGE);
        w.string(message)?;
        if let ErrorData::Given(data) = &data {
            w.out().extend_from_slice(json::KEY_DATA);
            w.value(data)?;
        }
        w.out().extend_from_slice(json::ERROR_END);
        Ok(())
    })
}

/// Any JSON value as one compact line + LF (the body of `encode`, see `call::encode`).
fn encode<'py>(py: Python<'py>, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_buffer(py, |w| {
        w.value(message)?;
        w.out().push(b'\n');
        Ok(())
    })
}

/// The concatenation of `encode(m)` for each `m` of `messages`.
#[pyfunction]
#[pyo3(signature = (messages, /))]
fn encode_many<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let iterator = messages.try_iter()?;
    with_buffer(py, |w| {
        for message in iterator {
            match message {
                Ok(message) => w.value(&message)?,
                Err(err) => return w.fail(Failure::Python(err)),
            }
            w.out().push(b'\n');
        }
        Ok(())
    })
}

/// Add the encoding functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    keys::reset(m.py());
    m.add_function(wrap_pyfunction!(encode_request, m)?)?;
    m.add_function(wrap_pyfunction!(encode_notification, m)?)?;
    m.add_function(wrap_pyfunction!(encode_result, m)?)?;
    m.add_function(wrap_pyfunction!(encode_error, m)?)?;
    call::register_encode(m)?;
    m.add_function(wrap_pyfunction!(encode_many, m)?)?;
    Ok(())
}
