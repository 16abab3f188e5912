//! Python values built straight from the envelope scan: an eager decoder holding the GIL builds
//! `params`/`result` while it validates them, so each payload byte is read once instead of being
//! skipped by the scan and then parsed again.

use jiter::{Jiter, JiterError, JiterErrorType, JiterResult, JsonErrorType, Peek};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};

use crate::envelope::Payloads;

/// Why building stopped: bad JSON (a frame error) or a Python failure (raised to the caller).
enum Fail {
    Json(JiterError),
    Py(PyErr),
}

impl From<JiterError> for Fail {
    fn from(e: JiterError) -> Self {
        Self::Json(e)
    }
}

/// A Python `str`, through the ASCII fast path when it applies.
fn new_str<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    if s.is_ascii() {
        // SAFETY: `s` was just checked to be ASCII only.
        unsafe { jiter::pystring_ascii_new(py, s) }
    } else {
        PyString::new(py, s)
    }
}

/// The [`Payloads`] that builds Python objects (keys through jiter's string cache).
pub(crate) struct PyValues<'py> {
    py: Python<'py>,
    /// A Python error met while building (the scan then stops as if the JSON were bad).
    pub(crate) error: Option<PyErr>,
}

impl<'py> PyValues<'py> {
    pub(crate) fn new(py: Python<'py>) -> Self {
        Self { py, error: None }
    }

    fn value(&self, j: &mut Jiter<'_>, peek: Peek) -> Result<Bound<'py, PyAny>, Fail> {
        let py = self.py;
        Ok(match peek {
            Peek::Null => {
                j.known_null()?;
                py.None().into_bound(py)
            }
            Peek::True | Peek::False => PyBool::new(py, j.known_bool(peek)?).to_owned().into_any(),
            Peek::String => new_str(py, j.known_str()?).into_any(),
            Peek::Array => self.array(j)?,
            Peek::Object => self.object(j)?,
            _ => j.known_number(peek)?.into_pyobject(py).map_err(Fail::Py)?,
        })
    }

    fn array(&self, j: &mut Jiter<'_>) -> Result<Bound<'py, PyAny>, Fail> {
        let mut items = Vec::new();
        let mut next = j.known_array()?;
        while let Some(peek) = next {
            items.push(self.value(j, peek)?);
            next = j.array_step()?;
        }
        Ok(PyList::new(self.py, items).map_err(Fail::Py)?.into_any())
    }

    fn object(&self, j: &mut Jiter<'_>) -> Result<Bound<'py, PyAny>, Fail> {
        let py = self.py;
        let dict = PyDict::new(py);
        let mut key = j.known_object()?.map(|k| jiter::cached_py_string(py, k));
        while let Some(k) = key {
            let peek = j.peek()?;
            let v = self.value(j, peek)?;
            dict.set_item(k, v).map_err(Fail::Py)?;
            key = j.next_key()?.map(|k| jiter::cached_py_string(py, k));
        }
        Ok(dict.into_any())
    }
}

impl Payloads for PyValues<'_> {
    type Value = Py<PyAny>;

    fn take(&mut self, j: &mut Jiter<'_>, peek: Peek) -> JiterResult<Option<Py<PyAny>>> {
        match self.value(j, peek) {
            Ok(v) => Ok(Some(v.unbind())),
            Err(Fail::Json(e)) => Err(e),
            Err(Fail::Py(e)) => {
                self.error = Some(e);
                let kind =
                    JsonErrorType::InternalError("Python error while building a value".into());
                Err(JiterError {
                    error_type: JiterErrorType::JsonError(kind),
                    index: j.current_index(),
                })
            }
        }
    }
}
