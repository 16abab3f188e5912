//! From the pure Rust results of one chunk to Python objects. The framing and validation of a
//! chunk (which may run without the GIL) collect the bytes of every frame that yields a message in
//! one arena; the messages then share that arena, so `raw` is cut out of it only on access.

use std::ops::Range;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyInt, PyList, PyString};

use crate::envelope::{self, Envelope, Failure, Id, Item, OwnedId, INVALID_REQUEST};
use crate::framing::Event;

use super::frame_error::FrameError;
use super::message::{parse_json, Message};

/// One result, with where its frame sits in the arena and in the stream.
pub(crate) struct Rec {
    base: usize,
    offset: u64,
    item: Item,
}

/// What one chunk (or one `decode` body) yields, before any Python object exists.
pub(crate) struct Collected {
    arena: Vec<u8>,
    recs: Vec<Rec>,
}

/// The framer's sink: validates each frame and keeps what the messages need.
pub(crate) struct Collector {
    batches: bool,
    max_frame: usize,
    scratch: Vec<Item>,
    out: Collected,
}

impl Collector {
    /// A collector sized for `bytes` more input bytes holding about `frames` frames, so that
    /// neither the arena nor the results grow (and get copied) while a chunk is processed.
    pub(crate) fn new(batches: bool, max_frame: usize, bytes: usize, frames: usize) -> Self {
        let out = Collected {
            arena: Vec::with_capacity(bytes),
            recs: Vec::with_capacity(frames),
        };
        Self {
            batches,
            max_frame,
            scratch: Vec::new(),
            out,
        }
    }

    /// Validate one complete frame starting at stream `offset`.
    pub(crate) fn frame(&mut self, offset: u64, bytes: &[u8]) {
        envelope::validate(bytes, self.batches, &mut self.scratch);
        let base = self.out.arena.len();
        if self.scratch.iter().any(|i| matches!(i, Item::Message(_))) {
            self.out.arena.extend_from_slice(bytes);
        }
        for item in self.scratch.drain(..) {
            self.out.recs.push(Rec { base, offset, item });
        }
    }

    /// Report a frame longer than `max_frame`.
    pub(crate) fn oversize(&mut self, offset: u64, preview: &[u8]) {
        let message = format!(
            "Invalid Request: frame exceeds the maximum size of {} bytes",
            self.max_frame
        );
        let failure = Failure {
            code: INVALID_REQUEST,
            message: message.into(),
            id: None,
            start: 0,
            preview: preview.to_vec(),
            batch: None,
            notification: false,
        };
        self.out.recs.push(Rec {
            base: 0,
            offset,
            item: Item::Failure(failure),
        });
    }

    /// Handle one framer event.
    pub(crate) fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Frame { offset, bytes } => self.frame(offset, bytes),
            Event::Oversize { offset, preview } => self.oversize(offset, preview),
        }
    }

    pub(crate) fn finish(self) -> Collected {
        self.out
    }
}

/// The Python list of `Message`/`FrameError` for what was collected.
pub(crate) fn to_python(
    py: Python<'_>,
    collected: Collected,
    lazy: bool,
) -> PyResult<Bound<'_, PyList>> {
    let buf = Arc::new(collected.arena);
    let mut objects = Vec::with_capacity(collected.recs.len());
    for rec in collected.recs {
        objects.push(match rec.item {
            Item::Message(e) => message(py, &buf, rec.base, rec.offset, e, lazy)?,
            Item::Failure(f) => frame_error(py, rec.offset, f)?,
        });
    }
    PyList::new(py, objects)
}

fn big_int<'py>(py: Python<'py>, literal: &str) -> PyResult<Bound<'py, PyAny>> {
    py.get_type::<PyInt>().call1((literal,))
}

fn id_object<'py>(py: Python<'py>, frame: &[u8], id: Id) -> PyResult<Bound<'py, PyAny>> {
    match id {
        Id::Int(i) => Ok(i.into_pyobject(py)?.into_any()),
        Id::Big(r) => big_int(py, std::str::from_utf8(&frame[r]).unwrap_or_default()),
        Id::Str(t) => Ok(PyString::new(py, t.as_str(frame)).into_any()),
    }
}

fn owned_id_object(py: Python<'_>, id: OwnedId) -> PyResult<Bound<'_, PyAny>> {
    match id {
        OwnedId::Int(i) => Ok(i.into_pyobject(py)?.into_any()),
        OwnedId::Big(s) => big_int(py, &s),
        OwnedId::Str(s) => Ok(PyString::new(py, &s).into_any()),
    }
}

fn message<'py>(
    py: Python<'py>,
    buf: &Arc<Vec<u8>>,
    base: usize,
    offset: u64,
    e: Envelope,
    lazy: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let frame = &buf[base..];
    let shift = |r: Range<usize>| base + r.start..base + r.end;
    let id = match e.id {
        Some(id) => Some(id_object(py, frame, id)?.unbind()),
        None => None,
    };
    let method = e
        .method
        .map(|t| jiter::cached_py_string(py, t.as_str(frame)).unbind());
    let m = Message {
        kind: e.kind,
        id,
        method,
        buf: Arc::clone(buf),
        offset: offset + e.raw.start as u64,
        raw: shift(e.raw),
        raw_id: e.raw_id.map(shift),
        raw_params: e.raw_params.map(shift),
        raw_result: e.raw_result.map(shift),
        raw_error: e.raw_error.map(shift),
        batch: e.batch,
        lazy,
        params: PyOnceLock::new(),
        result: PyOnceLock::new(),
        error: PyOnceLock::new(),
        raw_bytes: PyOnceLock::new(),
    };
    let payloads = [
        (&m.raw_params, &m.params, !lazy),
        (&m.raw_result, &m.result, !lazy),
        (&m.raw_error, &m.error, true),
    ];
    for (span, cell, now) in payloads {
        if let (Some(r), true) = (span, now) {
            // the cell is new, so `set` cannot find it filled
            let _ = cell.set(py, parse_json(py, &buf[r.clone()])?.unbind());
        }
    }
    Ok(Bound::new(py, m)?.into_any())
}

fn frame_error(py: Python<'_>, offset: u64, f: Failure) -> PyResult<Bound<'_, PyAny>> {
    let id = match f.id {
        Some(id) => Some(owned_id_object(py, id)?.unbind()),
        None => None,
    };
    let e = FrameError {
        code: f.code,
        message: PyString::new(py, &f.message).unbind(),
        id,
        offset: offset + f.start as u64,
        preview: PyBytes::new(py, &f.preview).unbind(),
        batch: f.batch,
        notification: f.notification,
    };
    Ok(Bound::new(py, e)?.into_any())
}
