//! `Relay`: the binding of `crate::relay::Upward`. One call per chunk; the relayed frames come back
//! as one `bytes`, and only the frames held for a decision become Python objects.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyInt, PyList, PyMemoryView};

use super::correlator::conn_arg;
use super::correlator::idmap::PyIdMap;
use super::errors::new_error;
use crate::correlation::IdRemap;
use crate::envelope::INVALID_REQUEST;
use crate::framing::DEFAULT_MAX_FRAME;
use crate::relay::{Downward, Held, PerConn, Upward};

/// A client session's bytes towards the upstream: plain requests and notifications relayed in
/// native code, ids mapped in the shared `IdMap`; the rest handed back (see `docs/core-contract.md`).
#[pyclass(module = "mcpframe._core", name = "Relay")]
pub(crate) struct PyRelay {
    relay: Upward,
    shared: Shared,
    conn: i64,
}

/// What `Relay` and `AnswerRelay` share: the `IdMap`, the frame limit, whether `close()` was called.
struct Shared {
    idmap: Py<PyIdMap>,
    max_frame: usize,
    closed: bool,
}

impl Shared {
    fn new(idmap: &Bound<'_, PyAny>, max_frame: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(Shared {
            idmap: idmap_arg(idmap)?,
            max_frame: match max_frame {
                Some(value) => max_frame_arg(value)?,
                None => DEFAULT_MAX_FRAME,
            },
            closed: false,
        })
    }

    /// Run `relay` over the chunk's bytes (`None`: the stream's end, which closes the relay) with
    /// the `IdMap` borrowed; `DecoderClosedError` once closed.
    fn run<R>(
        &mut self,
        py: Python<'_>,
        chunk: Option<&Bound<'_, PyAny>>,
        relay: impl FnOnce(&[u8], &mut IdRemap<bool>) -> R,
    ) -> PyResult<R> {
        if self.closed {
            return Err(closed_error(py));
        }
        let chunk = chunk.map(chunk_arg).transpose()?;
        self.closed = chunk.is_none();
        let data: &[u8] = match &chunk {
            Some(Chunk::Bytes(b)) => b.as_bytes(py),
            Some(Chunk::Owned(v)) => v,
            None => &[],
        };
        let mut idmap = self.idmap.bind(py).borrow_mut();
        Ok(relay(data, idmap.remap()))
    }
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

/// The held frames as Python objects: `(offset, bytes)`, or the contract's oversize `FrameError`.
fn held_list<'py>(
    py: Python<'py>,
    max_frame: usize,
    held: Vec<Held>,
) -> PyResult<Bound<'py, PyList>> {
    let items = PyList::empty(py);
    for item in held {
        match item {
            Held::Frame { offset, bytes } => items.append((offset, PyBytes::new(py, &bytes)))?,
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
        Ok((
            PyBytes::new(py, out),
            held_list(py, self.shared.max_frame, held)?,
        ))
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
        let shared = Shared::new(idmap, max_frame)?;
        Ok(PyRelay {
            relay: Upward::new(shared.max_frame),
            shared,
            conn: conn_arg(conn)?,
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
        self.shared.max_frame
    }

    /// Requests relayed so far (each mapped in the `IdMap`).
    #[getter]
    fn requests(&self) -> u64 {
        self.relay.requests()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.closed
    }

    /// Relay what `chunk` completes: `(relayed bytes, held frames)`.
    #[pyo3(signature = (chunk, /))]
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyList>)> {
        let (mut out, mut held) = (Vec::new(), Vec::new());
        let (relay, conn) = (&mut self.relay, self.conn);
        let fed = self.shared.run(py, Some(chunk), |data, map| {
            out.reserve(data.len() + 64);
            relay.feed(data, conn, map, &mut out, &mut held)
        })?;
        debug_assert!(fed.is_ok()); // `closed` mirrors the framer's state
        self.output(py, &out, held)
    }

    /// End the stream: an unterminated last frame is relayed or held as if terminated.
    fn close<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyList>)> {
        let (mut out, mut held) = (Vec::new(), Vec::new());
        let (relay, conn) = (&mut self.relay, self.conn);
        let closed = self.shared.run(py, None, |_, map| {
            relay.close(conn, map, &mut out, &mut held)
        })?;
        debug_assert!(closed.is_ok());
        self.output(py, &out, held)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.shared.idmap)
    }
}

/// The upstream's bytes towards the client sessions: answers to the requests mapped in the shared
/// `IdMap` get their client's id back, grouped per connection; the rest is held.
#[pyclass(module = "mcpframe._core", name = "AnswerRelay")]
pub(crate) struct PyAnswerRelay {
    relay: Downward,
    shared: Shared,
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
        Ok((relayed, held_list(py, self.shared.max_frame, held)?))
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
        let shared = Shared::new(idmap, max_frame)?;
        Ok(PyAnswerRelay {
            relay: Downward::new(shared.max_frame),
            shared,
        })
    }

    /// The frame size limit in bytes.
    #[getter]
    fn max_frame(&self) -> usize {
        self.shared.max_frame
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.closed
    }

    /// Relay what `chunk` completes: `([(conn, relayed bytes), ...], held frames)`.
    #[pyo3(signature = (chunk, /))]
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let (mut out, mut held) = (Vec::new(), Vec::new());
        let relay = &mut self.relay;
        let fed = self.shared.run(py, Some(chunk), |data, map| {
            relay.feed(data, map, &mut out, &mut held)
        })?;
        debug_assert!(fed.is_ok());
        self.output(py, out, held)
    }

    /// End the stream: an unterminated last frame is relayed or held as if terminated.
    fn close<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let (mut out, mut held) = (Vec::new(), Vec::new());
        let relay = &mut self.relay;
        let closed = self
            .shared
            .run(py, None, |_, map| relay.close(map, &mut out, &mut held))?;
        debug_assert!(closed.is_ok());
        self.output(py, out, held)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.shared.idmap)
    }
}

/// Add `Relay` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRelay>()?;
    m.add_class::<PyAnswerRelay>()?;
    Ok(())
}
