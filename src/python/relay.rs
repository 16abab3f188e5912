//! `Relay`: the binding of `crate::relay::Upward`. One call per chunk; the relayed frames come back
//! as one `bytes`, and only the frames held for a decision become Python objects.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyInt, PyList, PyMemoryView};

use super::correlator::conn_arg;
use super::correlator::idmap::PyIdMap;
use super::errors::new_error;
use crate::envelope::INVALID_REQUEST;
use crate::framing::DEFAULT_MAX_FRAME;
use crate::relay::{Downward, Held, PerConn, Upward};

/// A client session's bytes towards the upstream: plain requests and notifications relayed in
/// native code, ids mapped in the shared `IdMap`; the rest handed back (see `docs/core-contract.md`).
#[pyclass(module = "mcpframe._core", name = "Relay")]
pub(crate) struct PyRelay {
    relay: Upward,
    idmap: Py<PyIdMap>,
    conn: i64,
    max_frame: usize,
    closed: bool,
}

/// The chunk's bytes (a copy only for the mutable buffer types).
enum Chunk {
    Bytes(Py<PyBytes>),
    Owned(Arc<Vec<u8>>),
}

fn chunk_arg(data: &Bound<'_, PyAny>) -> PyResult<Chunk> {
    if let Ok(b) = data.cast::<PyBytes>() {
        Ok(Chunk::Bytes(b.clone().unbind()))
    } else if let Ok(b) = data.cast::<PyByteArray>() {
        Ok(Chunk::Owned(Arc::new(b.to_vec())))
    } else if data.is_instance_of::<PyMemoryView>() {
        let bytes = data.call_method0("tobytes")?.cast_into::<PyBytes>()?;
        Ok(Chunk::Bytes(bytes.unbind()))
    } else {
        let name = data.get_type().name()?;
        Err(PyTypeError::new_err(format!(
            "expected bytes, bytearray or memoryview, not {name}"
        )))
    }
}

fn max_frame_arg(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err("max_frame must be an int"));
    }
    match value.extract::<i64>() {
        Ok(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(PyValueError::new_err(format!(
            "max_frame must be at least 1, not {value}"
        ))),
    }
}

/// The held frames as Python objects: `bytes`, or the contract's oversize `FrameError`.
fn held_list<'py>(
    py: Python<'py>,
    max_frame: usize,
    held: Vec<Held>,
) -> PyResult<Bound<'py, PyList>> {
    let items = PyList::empty(py);
    for item in held {
        match item {
            Held::Frame(frame) => items.append(PyBytes::new(py, &frame))?,
            Held::Oversize { offset, preview } => {
                let message =
                    format!("Invalid Request: frame exceeds the maximum size of {max_frame} bytes");
                let kwargs = PyDict::new(py);
                kwargs.set_item("offset", offset)?;
                kwargs.set_item("preview", PyBytes::new(py, &preview))?;
                let class = py.import("mcpframe._core")?.getattr("FrameError")?;
                items.append(class.call((INVALID_REQUEST, message), Some(&kwargs))?)?;
            }
        }
    }
    Ok(items)
}

fn idmap_arg(idmap: &Bound<'_, PyAny>) -> PyResult<Py<PyIdMap>> {
    match idmap.cast::<PyIdMap>() {
        Ok(map) => Ok(map.clone().unbind()),
        Err(_) => {
            let name = idmap.get_type().name()?;
            Err(PyTypeError::new_err(format!(
                "idmap must be an IdMap, not {name}"
            )))
        }
    }
}

fn closed_error(py: Python<'_>) -> PyErr {
    new_error(py, "DecoderClosedError", "relay is closed")
}

impl PyRelay {
    /// The relayed bytes and the held items of one `feed` or `close`.
    fn output<'py>(
        &self,
        py: Python<'py>,
        out: &[u8],
        held: Vec<Held>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyList>)> {
        Ok((PyBytes::new(py, out), held_list(py, self.max_frame, held)?))
    }
}

#[pymethods]
impl PyRelay {
    #[new]
    #[pyo3(
        signature = (idmap, conn, *, max_frame = None),
        text_signature = "(idmap, conn, *, max_frame=67108864)"
    )]
    fn new(
        idmap: &Bound<'_, PyAny>,
        conn: &Bound<'_, PyAny>,
        max_frame: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let idmap = idmap_arg(idmap)?;
        let conn = conn_arg(conn)?;
        let max_frame = match max_frame {
            Some(value) => max_frame_arg(value)?,
            None => DEFAULT_MAX_FRAME,
        };
        Ok(PyRelay {
            relay: Upward::new(max_frame),
            idmap,
            conn,
            max_frame,
            closed: false,
        })
    }

    /// The session's connection number in the `IdMap`.
    #[getter]
    fn conn(&self) -> i64 {
        self.conn
    }

    /// The frame size limit in bytes.
    #[getter]
    fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Requests relayed so far (each mapped in the `IdMap`).
    #[getter]
    fn requests(&self) -> u64 {
        self.relay.requests()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.closed
    }

    /// Relay what `chunk` completes: `(relayed bytes, held frames)`.
    #[pyo3(signature = (chunk, /))]
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyList>)> {
        if self.closed {
            return Err(closed_error(py));
        }
        let chunk = chunk_arg(chunk)?;
        let data: &[u8] = match &chunk {
            Chunk::Bytes(b) => b.as_bytes(py),
            Chunk::Owned(v) => v,
        };
        let (mut out, mut held) = (Vec::with_capacity(data.len() + 64), Vec::new());
        {
            let mut idmap = self.idmap.bind(py).borrow_mut();
            let fed = self
                .relay
                .feed(data, self.conn, idmap.remap(), &mut out, &mut held);
            debug_assert!(fed.is_ok()); // `closed` mirrors the framer's state
        }
        self.output(py, &out, held)
    }

    /// End the stream: an unterminated last frame is relayed or held as if terminated.
    fn close<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyList>)> {
        if self.closed {
            return Err(closed_error(py));
        }
        self.closed = true;
        let (mut out, mut held) = (Vec::new(), Vec::new());
        {
            let mut idmap = self.idmap.bind(py).borrow_mut();
            let closed = self
                .relay
                .close(self.conn, idmap.remap(), &mut out, &mut held);
            debug_assert!(closed.is_ok());
        }
        self.output(py, &out, held)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.idmap)
    }
}

/// The upstream's bytes towards the client sessions: answers to the requests mapped in the shared
/// `IdMap` get their client's id back, grouped per connection; the rest is held.
#[pyclass(module = "mcpframe._core", name = "AnswerRelay")]
pub(crate) struct PyAnswerRelay {
    relay: Downward,
    idmap: Py<PyIdMap>,
    max_frame: usize,
    closed: bool,
}

impl PyAnswerRelay {
    fn output<'py>(
        &self,
        py: Python<'py>,
        out: PerConn,
        held: Vec<Held>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let relayed = PyList::empty(py);
        for (conn, bytes) in out {
            relayed.append((conn, PyBytes::new(py, &bytes)))?;
        }
        Ok((relayed, held_list(py, self.max_frame, held)?))
    }
}

#[pymethods]
impl PyAnswerRelay {
    #[new]
    #[pyo3(
        signature = (idmap, *, max_frame = None),
        text_signature = "(idmap, *, max_frame=67108864)"
    )]
    fn new(idmap: &Bound<'_, PyAny>, max_frame: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let idmap = idmap_arg(idmap)?;
        let max_frame = match max_frame {
            Some(value) => max_frame_arg(value)?,
            None => DEFAULT_MAX_FRAME,
        };
        Ok(PyAnswerRelay {
            relay: Downward::new(max_frame),
            idmap,
            max_frame,
            closed: false,
        })
    }

    /// The frame size limit in bytes.
    #[getter]
    fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.closed
    }

    /// Relay what `chunk` completes: `([(conn, relayed bytes), ...], held frames)`.
    #[pyo3(signature = (chunk, /))]
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        if self.closed {
            return Err(closed_error(py));
        }
        let chunk = chunk_arg(chunk)?;
        let data: &[u8] = match &chunk {
            Chunk::Bytes(b) => b.as_bytes(py),
            Chunk::Owned(v) => v,
        };
        let (mut out, mut held) = (Vec::new(), Vec::new());
        {
            let mut idmap = self.idmap.bind(py).borrow_mut();
            let fed = self.relay.feed(data, idmap.remap(), &mut out, &mut held);
            debug_assert!(fed.is_ok());
        }
        self.output(py, out, held)
    }

    /// End the stream: an unterminated last frame is relayed or held as if terminated.
    fn close<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        if self.closed {
            return Err(closed_error(py));
        }
        self.closed = true;
        let (mut out, mut held) = (Vec::new(), Vec::new());
        {
            let mut idmap = self.idmap.bind(py).borrow_mut();
            let closed = self.relay.close(idmap.remap(), &mut out, &mut held);
            debug_assert!(closed.is_ok());
        }
        self.output(py, out, held)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.idmap)
    }
}

/// Add `Relay` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRelay>()?;
    m.add_class::<PyAnswerRelay>()?;
    Ok(())
}
