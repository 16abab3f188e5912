//! `FrameError`: an invalid frame or batch element, as a value (invalid input never raises).

use pyo3::basic::CompareOp;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyString};

use crate::splice::write_json_string;

/// An invalid frame or batch element (see `docs/core-contract.md`).
#[pyclass(module = "mcpframe._core", name = "FrameError", frozen)]
pub(crate) struct FrameError {
    pub(crate) code: i64,
    pub(crate) message: Py<PyString>,
    pub(crate) id: Option<Py<PyAny>>,
    pub(crate) offset: u64,
    pub(crate) preview: Py<PyBytes>,
    pub(crate) batch: Option<u32>,
    pub(crate) notification: bool,
    /// The rejected frame's (or batch element's) bytes; `None` for an oversize frame.
    pub(crate) raw: Option<Py<PyBytes>>,
}

const SIGNATURE: &str =
    "FrameError(code: int, message: str, *, id, offset, preview, batch, notification, raw)";

/// `bytes`, `bytearray` or `memoryview` as an owned byte vector (a copy).
fn byte_arg(py: Python<'_>, v: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    super::input_buffer(v).ok().map(|b| b.bytes(py).to_vec())
}

/// An `int` that is not a `bool`.
fn is_int(v: &Bound<'_, PyAny>) -> bool {
    v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>()
}

/// `v` as a `T` when it is an `int` (not a `bool`) in range.
fn int_arg<'py, T: FromPyObjectOwned<'py>>(v: &Bound<'py, PyAny>) -> Option<T> {
    if is_int(v) {
        v.extract().ok()
    } else {
        None
    }
}

fn same(py: Python<'_>, a: &Option<Py<PyAny>>, b: &Option<Py<PyAny>>) -> PyResult<bool> {
    match (a, b) {
        (None, None) => Ok(true),
        (Some(a), Some(b)) => {
            let (a, b) = (a.bind(py), b.bind(py));
            // `1` and `"1"` differ; compare the types too, as the ids are ints or strs
            Ok(a.is_instance_of::<PyInt>() == b.is_instance_of::<PyInt>() && a.eq(b)?)
        }
        _ => Ok(false),
    }
}

impl FrameError {
    fn equal(&self, py: Python<'_>, other: &Self) -> PyResult<bool> {
        Ok(self.code == other.code
            && self.offset == other.offset
            && self.batch == other.batch
            && self.notification == other.notification
            && self.message.bind(py).as_any().eq(other.message.bind(py))?
            && self.preview.bind(py).as_bytes() == other.preview.bind(py).as_bytes()
            && self.raw.as_ref().map(|r| r.bind(py).as_bytes())
                == other.raw.as_ref().map(|r| r.bind(py).as_bytes())
            && same(py, &self.id, &other.id)?)
    }
}

#[pymethods]
impl FrameError {
    #[new]
    #[pyo3(
        signature = (code, message, *, id = None, offset = None, preview = None, batch = None, notification = None, raw = None),
        text_signature = "(code, message, *, id=None, offset=0, preview=b'', batch=None, notification=False, raw=None)"
    )]
    #[allow(clippy::too_many_arguments)] // the contract's keyword arguments, one per field
    fn new(
        code: &Bound<'_, PyAny>,
        message: &Bound<'_, PyAny>,
        id: Option<Bound<'_, PyAny>>,
        offset: Option<&Bound<'_, PyAny>>,
        preview: Option<&Bound<'_, PyAny>>,
        batch: Option<&Bound<'_, PyAny>>,
        notification: Option<&Bound<'_, PyAny>>,
        raw: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let py = code.py();
        let wrong = || PyTypeError::new_err(SIGNATURE);
        let id_ok = id
            .as_ref()
            .is_none_or(|v| v.is_instance_of::<PyString>() || is_int(v));
        let message = message.cast::<PyString>().map_err(|_| wrong())?;
        let preview = match preview {
            Some(p) => byte_arg(py, p).ok_or_else(wrong)?,
            None => Vec::new(),
        };
        let raw = match raw {
            Some(r) if !r.is_none() => Some(byte_arg(py, r).ok_or_else(wrong)?),
            _ => None,
        };
        let batch = match batch {
            Some(b) => Some(int_arg::<u32>(b).ok_or_else(wrong)?),
            None => None,
        };
        let offset = match offset {
            Some(o) => int_arg(o).ok_or_else(wrong)?,
            None => 0,
        };
        let notification = match notification {
            Some(n) if n.is_instance_of::<PyBool>() => n.is_truthy()?,
            Some(_) => return Err(wrong()),
            None => false,
        };
        if !id_ok {
            return Err(wrong());
        }
        Ok(Self {
            code: int_arg(code).ok_or_else(wrong)?,
            message: message.clone().unbind(),
            id: id.map(Bound::unbind),
            offset,
            preview: PyBytes::new(py, &preview).unbind(),
            batch,
            notification,
            raw: raw.map(|r| PyBytes::new(py, &r).unbind()),
        })
    }

    #[getter]
    fn code(&self) -> i64 {
        self.code
    }

    #[getter]
    fn message(&self, py: Python<'_>) -> Py<PyString> {
        self.message.clone_ref(py)
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.id.as_ref().map(|v| v.clone_ref(py))
    }

    #[getter]
    fn offset(&self) -> u64 {
        self.offset
    }

    #[getter]
    fn preview(&self, py: Python<'_>) -> Py<PyBytes> {
        self.preview.clone_ref(py)
    }

    #[getter]
    fn batch(&self) -> Option<u32> {
        self.batch
    }

    #[getter]
    fn notification(&self) -> bool {
        self.notification
    }

    #[getter]
    fn raw(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        self.raw.as_ref().map(|r| r.clone_ref(py))
    }

    /// The NDJSON error response for this error.
    fn to_response<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(96);
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        match &self.id {
            None => out.extend_from_slice(b"null"),
            Some(id) => out.extend_from_slice(&super::encode_id(py, id.bind(py))?),
        }
        out.extend_from_slice(
            format!(",\"error\":{{\"code\":{},\"message\":", self.code).as_bytes(),
        );
        write_json_string(&mut out, self.message.bind(py).to_str()?);
        out.extend_from_slice(b"}}\n");
        Ok(PyBytes::new(py, &out))
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<FrameError>() else {
            return Ok(py.NotImplemented());
        };
        let equal = self.equal(py, other.get())?;
        let result = match op {
            CompareOp::Eq => equal,
            CompareOp::Ne => !equal,
            _ => return Ok(py.NotImplemented()),
        };
        Ok(result.into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let message = self.message.bind(py).repr()?;
        Ok(format!(
            "FrameError(code={}, message={message}, offset={})",
            self.code, self.offset
        ))
    }
}
