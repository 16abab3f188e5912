//! `Message`: one valid JSON-RPC message. It shares the buffer of the chunk it came from, so `raw`
//! and the `raw_*` members are cut out of that buffer only when asked for, and a lazy message
//! builds its payload from its bytes on first access (then keeps it). A message has at most one
//! payload, chosen by its kind: `params` (requests, notifications), `result` or `error`.

use pyo3::basic::CompareOp;
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};
use pyo3::{PyTraverseError, PyVisit};
use std::ops::Range;

use crate::envelope::Kind;
use crate::splice;

use super::build::Buffer;
use super::encode_id;
use super::values;

/// Dropped messages kept for reuse: a 64 KiB chunk of usual MCP lines holds a few hundred, and
/// a chunk's messages are mostly dropped before the next chunk's are made.
const SPARE_MESSAGES: usize = 1024;

/// Build the Python value of a payload already validated by the envelope scan (with the same
/// builder as the eager scan, so lazy and eager values are built the same way).
pub(crate) fn parse_json<'py>(py: Python<'py>, json: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    values::parse(py, json)
}

/// A valid message (see `docs/core-contract.md`).
// `freelist`: a stream makes and drops messages by the thousand, chunk after chunk; reusing the
// memory of dropped ones skips the allocator, the zeroing and the collector's bookkeeping of a
// new object (a reused one starts untracked: `set_tracking` tracks it if it holds a value).
#[pyclass(module = "mcpframe._core", name = "Message", frozen, freelist = SPARE_MESSAGES)]
pub(crate) struct Message {
    pub(crate) kind: Kind,
    pub(crate) id: Option<Py<PyAny>>,
    pub(crate) method: Option<Py<PyString>>,
    pub(crate) buf: Buffer,
    pub(crate) raw: Range<usize>,
    pub(crate) raw_id: Option<Range<usize>>,
    /// The bytes of `params`, `result` or `error`, whichever the kind has.
    pub(crate) raw_payload: Option<Range<usize>>,
    /// The bytes of a `params` member of a response (ignored, but `raw_params` shows it).
    pub(crate) response_params: Option<Range<usize>>,
    pub(crate) offset: u64,
    pub(crate) batch: Option<u32>,
    pub(crate) lazy: bool,
    /// The payload value built while decoding (eager messages, errors): a plain field, cheaper
    /// to fill than the cell.
    pub(crate) built: Option<Py<PyAny>>,
    /// The decoded payload of a lazy message, once built on access.
    pub(crate) payload: PyOnceLock<Py<PyAny>>,
}

impl Message {
    fn bytes_of(&self, py: Python<'_>, span: &Option<Range<usize>>) -> Option<Py<PyBytes>> {
        span.as_ref()
            .map(|r| PyBytes::new(py, &self.buf.bytes(py)[r.clone()]).unbind())
    }

    /// The payload span when the kind is one of `kinds`.
    fn payload_span(&self, kinds: &[Kind]) -> &Option<Range<usize>> {
        if kinds.contains(&self.kind) {
            &self.raw_payload
        } else {
            &None
        }
    }

    fn value_of(slf: &Bound<'_, Self>, kinds: &[Kind]) -> PyResult<Py<PyAny>> {
        let (py, this) = (slf.py(), slf.get());
        let Some(r) = this.payload_span(kinds) else {
            return Ok(py.None());
        };
        if let Some(v) = this.built.as_ref().or_else(|| this.payload.get(py)) {
            return Ok(v.clone_ref(py));
        }
        let value = this.payload.get_or_try_init(py, || {
            parse_json(py, &this.buf.bytes(py)[r.clone()]).map(Bound::unbind)
        })?;
        // A message without a payload value is not tracked by the garbage collector (see
        // `set_tracking`); now that it holds a container, it could be part of a cycle.
        // SAFETY: `slf` is a live object of a GC type and the GIL is held; it is tracked only if
        // it is not tracked already.
        unsafe {
            let ptr = slf.as_ptr();
            if ffi::PyObject_GC_IsTracked(ptr) == 0 {
                ffi::PyObject_GC_Track(ptr.cast());
            }
        }
        Ok(value.clone_ref(py))
    }

    /// Set whether the garbage collector tracks a new message: only one that holds a payload value
    /// (eager messages, errors) can be part of a cycle. Its other references (`int`, `str`,
    /// `bytes`) cannot, and a lazy stream of messages would otherwise make every collection walk
    /// all of them; `value_of` tracks it once it builds a value. A message reused from the freelist
    /// starts untracked, a newly allocated one tracked: both are settled here.
    pub(crate) fn set_tracking(slf: &Bound<'_, Self>) {
        let this = slf.get();
        let holds = this.built.is_some() || this.payload.get(slf.py()).is_some();
        // SAFETY: `slf` is a live object of a GC type and the GIL is held; it is tracked only when
        // it is not, and untracked only when it is.
        unsafe {
            let ptr = slf.as_ptr();
            let tracked = ffi::PyObject_GC_IsTracked(ptr) != 0;
            if holds && !tracked {
                ffi::PyObject_GC_Track(ptr.cast());
            } else if !holds && tracked {
                ffi::PyObject_GC_UnTrack(ptr.cast());
            }
        }
    }

    fn raw_slice(&self, py: Python<'_>) -> &[u8] {
        &self.buf.bytes(py)[self.raw.clone()]
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        // A `Message` only ever exists with the GIL held: it is built by the decoder (which holds
        // it) and then lives inside its Python object, dropped by `tp_dealloc` (CPython holds it
        // there). So no attachment check, which is a thread-local look-up per message.
        // SAFETY: the GIL is held, as said above.
        let py = unsafe { Python::assume_attached() };
        if let Some(o) = self.id.take() {
            o.drop_ref(py);
        }
        if let Some(o) = self.method.take() {
            o.drop_ref(py);
        }
        if let Some(o) = self.built.take() {
            o.drop_ref(py);
        }
        if let Some(o) = self.payload.take() {
            o.drop_ref(py);
        }
        if let Buffer::Bytes(b) = std::mem::replace(&mut self.buf, Buffer::Empty) {
            b.drop_ref(py);
        }
    }
}

#[pymethods]
impl Message {
    /// The payload value is the only reference that can lead back to this message (a user may
    /// store the message in its params), so it is what the garbage collector must see.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: the collector calls this with the GIL held; the token only reads the cell (no
        // Python API call, which `__traverse__` must not make).
        let py = unsafe { Python::assume_attached() };
        visit.call(self.built.as_ref())?;
        visit.call(self.payload.get(py))
    }

    #[getter]
    fn kind<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        match self.kind {
            Kind::Request => intern!(py, "request").clone(),
            Kind::Notification => intern!(py, "notification").clone(),
            Kind::Result => intern!(py, "result").clone(),
            Kind::Error => intern!(py, "error").clone(),
        }
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.id.as_ref().map(|v| v.clone_ref(py))
    }

    #[getter]
    fn method(&self, py: Python<'_>) -> Option<Py<PyString>> {
        self.method.as_ref().map(|v| v.clone_ref(py))
    }

    #[getter]
    fn params(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Self::value_of(slf, &[Kind::Request, Kind::Notification])
    }

    #[getter]
    fn result(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Self::value_of(slf, &[Kind::Result])
    }

    #[getter]
    fn error(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Self::value_of(slf, &[Kind::Error])
    }

    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.raw_slice(py))
    }

    #[getter]
    fn raw_id(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        self.bytes_of(py, &self.raw_id)
    }

    #[getter]
    fn raw_params(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        match self.kind {
            Kind::Request | Kind::Notification => self.bytes_of(py, &self.raw_payload),
            Kind::Result | Kind::Error => self.bytes_of(py, &self.response_params),
        }
    }

    #[getter]
    fn raw_result(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        self.bytes_of(py, self.payload_span(&[Kind::Result]))
    }

    #[getter]
    fn raw_error(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        self.bytes_of(py, self.payload_span(&[Kind::Error]))
    }

    #[getter]
    fn offset(&self) -> u64 {
        self.offset
    }

    #[getter]
    fn batch(&self) -> Option<u32> {
        self.batch
    }

    #[getter]
    fn lazy(&self) -> bool {
        self.lazy
    }

    /// `raw` with the top-level id value replaced by `new_id` (JSON-encoded).
    #[pyo3(signature = (new_id, /))]
    fn with_id<'py>(
        &self,
        py: Python<'py>,
        new_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let encoded = encode_id(py, new_id)?;
        let (Some(_), Some(span)) = (&self.id, &self.raw_id) else {
            return Err(PyValueError::new_err("message has no id"));
        };
        let id = span.start - self.raw.start..span.end - self.raw.start;
        Ok(PyBytes::new(
            py,
            &splice::replace(self.raw_slice(py), id, &encoded),
        ))
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<Message>() else {
            return Ok(py.NotImplemented());
        };
        let other = other.get();
        // every attribute but `lazy` is a function of the raw bytes, the offset and the batch index
        let equal = self.offset == other.offset
            && self.batch == other.batch
            && self.raw_slice(py) == other.raw_slice(py);
        match op {
            CompareOp::Eq => Ok(equal.into_pyobject(py)?.to_owned().into_any().unbind()),
            CompareOp::Ne => Ok((!equal).into_pyobject(py)?.to_owned().into_any().unbind()),
            _ => Ok(py.NotImplemented()),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let none = py.None();
        let id = self.id.as_ref().unwrap_or(&none).bind(py).repr()?;
        let method = match &self.method {
            Some(m) => m.bind(py).repr()?.to_string(),
            None => "None".to_owned(),
        };
        Ok(format!(
            "Message(kind='{}', id={id}, method={method})",
            self.kind.as_str()
        ))
    }
}
