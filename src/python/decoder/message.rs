//! `Message`: one valid JSON-RPC message. It shares the buffer of the chunk it came from, so `raw`
//! and the `raw_*` members are cut out of that buffer only when asked for, and a lazy message
//! builds its payload from its bytes on first access (then keeps it). A message has at most one
//! payload, chosen by its kind: `params` (requests, notifications), `result` or `error`.
//!
//! This file holds what a message is and what its members return; the CPython type that carries
//! it (written by hand rather than with `#[pyclass]`, for speed) is in `message_type`.

use std::ops::Range;
use std::ptr::{self, addr_of};

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use crate::envelope::Kind;
use crate::splice;

use super::build::Buffer;
use super::encode_id;
use super::message_type;
use super::methods;
use super::values;

pub(crate) use message_type::register;

/// Build the Python value of a payload already validated by the envelope scan (with the same
/// builder as the eager scan, so lazy and eager values are built the same way).
pub(crate) fn parse_json<'py>(py: Python<'py>, json: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    values::parse(py, json)
}

/// The cell of a lazy payload value, set once. With the GIL, every access is ordered by it, so a
/// plain cell does; a free-threaded build reads one message on several threads at once, and needs
/// the synchronised cell.
#[cfg(not(Py_GIL_DISABLED))]
pub(crate) type ValueCell = std::cell::OnceCell<Py<PyAny>>;
#[cfg(Py_GIL_DISABLED)]
pub(crate) type ValueCell = std::sync::OnceLock<Py<PyAny>>;

/// Where a message's `id` object comes from: it is built on first access (then kept), as most
/// messages of a lazy stream are forwarded or dropped by a layer that never reads the id as a
/// Python object. Its bytes are the record's `raw_id` span.
#[derive(Clone, Copy)]
pub(crate) enum IdSource {
    /// No id: a notification, or an error with `id: null`.
    Absent,
    /// An integer that fits in `i64`.
    Int(i64),
    /// A string without escapes: the content of the `raw_id` token (between its quotes).
    Str,
    /// An integer beyond `i64`: the `raw_id` literal.
    Big,
    /// Built while decoding (a string with escapes): the record's `id` cell holds it.
    Built,
}

/// What a `Message` object holds (see `docs/core-contract.md`). It lives inside its Python object
/// and is released by the object's deallocator, with the GIL held: its Python references are
/// dropped there with [`Record::release`], never by `Drop` (which would look up the GIL state).
pub(crate) struct Record {
    pub(crate) kind: Kind,
    pub(crate) lazy: bool,
    pub(crate) batch: Option<u32>,
    pub(crate) id_source: IdSource,
    /// The id object, built on first access (or while decoding, for [`IdSource::Built`]).
    pub(crate) id: ValueCell,
    /// The method name, looked up on first access (or while decoding, for a name with escapes).
    pub(crate) method: ValueCell,
    /// The method name's content (between its quotes) in the frame, when it has no escapes.
    pub(crate) raw_method: Option<Range<usize>>,
    pub(crate) buf: Buffer,
    /// Where the frame starts in `buf`: the spans below are relative to the frame (shifted only
    /// when a member is read, not for every message made).
    pub(crate) base: usize,
    pub(crate) raw: Range<usize>,
    pub(crate) raw_id: Option<Range<usize>>,
    /// The bytes of `params`, `result` or `error`, whichever the kind has.
    pub(crate) raw_payload: Option<Range<usize>>,
    /// The bytes of a `params` member of a response (ignored, but `raw_params` shows it).
    pub(crate) response_params: Option<Range<usize>>,
    pub(crate) offset: u64,
    /// The payload value: built while decoding (eager messages, errors) or on first access.
    pub(crate) value: ValueCell,
}

/// The result of a member: a new reference, or the error to raise.
pub(crate) type Member = PyResult<Py<PyAny>>;

/// A new `bytes` of `data`, or the error of its allocation.
fn new_bytes(py: Python<'_>, data: &[u8]) -> Member {
    // SAFETY: the pointer and length describe `data`; the result is a new reference or NULL with
    // an exception set.
    unsafe {
        let ptr =
            ffi::PyBytes_FromStringAndSize(data.as_ptr().cast(), data.len() as ffi::Py_ssize_t);
        Ok(Bound::from_owned_ptr_or_err(py, ptr)?.unbind())
    }
}

fn optional(py: Python<'_>, value: Option<&Py<PyAny>>) -> Py<PyAny> {
    value.map_or_else(|| py.None(), |v| v.clone_ref(py))
}

impl Record {
    /// Drop the Python references this record holds (the GIL is held: `py`).
    pub(crate) fn release(mut self, py: Python<'_>) {
        // SAFETY: `self` is a valid record, forgotten once its references are released
        unsafe { Self::release_in_place(&mut self, py) };
        std::mem::forget(self);
    }

    /// Drop the Python references of the record at `record` (the GIL is held: `py`), reading
    /// only those fields (not copying the whole record out first).
    ///
    /// # Safety
    /// `record` points to a valid record, which is no longer used afterwards (its references
    /// are released; the other fields own nothing).
    // inlined into the deallocator, which runs once per message
    #[inline(always)]
    pub(crate) unsafe fn release_in_place(record: *mut Self, py: Python<'_>) {
        if let Some(o) = ptr::read(addr_of!((*record).id)).into_inner() {
            o.drop_ref(py);
        }
        if let Some(o) = ptr::read(addr_of!((*record).method)).into_inner() {
            o.drop_ref(py);
        }
        if let Some(o) = ptr::read(addr_of!((*record).value)).into_inner() {
            o.drop_ref(py);
        }
        match ptr::read(addr_of!((*record).buf)) {
            Buffer::Bytes(b) => b.drop_ref(py),
            Buffer::Shared(v) => drop(v),
            Buffer::Empty => {}
        }
    }

    /// Whether it holds a payload value (the only reference that can lead back to the message).
    pub(crate) fn holds_value(&self) -> bool {
        self.value.get().is_some()
    }

    /// The bytes of the message's frame (and what follows it in the buffer).
    fn frame<'a>(&'a self, py: Python<'_>) -> &'a [u8] {
        &self.buf.bytes(py)[self.base..]
    }

    fn raw_slice<'a>(&'a self, py: Python<'_>) -> &'a [u8] {
        &self.frame(py)[self.raw.clone()]
    }

    fn bytes_of(&self, py: Python<'_>, span: &Option<Range<usize>>) -> Member {
        match span {
            Some(r) => new_bytes(py, &self.frame(py)[r.clone()]),
            None => Ok(py.None()),
        }
    }

    /// The payload span when the kind is one of `kinds`.
    fn payload_span(&self, kinds: &[Kind]) -> &Option<Range<usize>> {
        if kinds.contains(&self.kind) {
            &self.raw_payload
        } else {
            &None
        }
    }

    /// The payload value when the kind is one of `kinds`, built on first access; the flag says
    /// whether this call stored it (the message must then be tracked by the garbage collector:
    /// only one call can, so only one tracks it).
    fn value_of(&self, py: Python<'_>, kinds: &[Kind]) -> PyResult<(Py<PyAny>, bool)> {
        let Some(r) = self.payload_span(kinds) else {
            return Ok((py.None(), false));
        };
        if let Some(v) = self.value.get() {
            return Ok((v.clone_ref(py), false));
        }
        let built = parse_json(py, &self.frame(py)[r.clone()])?.unbind();
        // building allocates, which may run other Python code (a finalizer) that asked for this
        // same value in the meantime, or (free-threaded) another thread built it too: the first
        // value stays, and its caller tracked the message
        let stored = match self.value.set(built) {
            Ok(()) => true,
            Err(again) => {
                again.drop_ref(py);
                false
            }
        };
        let value = self.value.get().map(|v| v.clone_ref(py));
        Ok((value.unwrap_or_else(|| py.None()), stored))
    }

    pub(crate) fn kind(&self, py: Python<'_>) -> Member {
        let name = match self.kind {
            Kind::Request => intern!(py, "request"),
            Kind::Notification => intern!(py, "notification"),
            Kind::Result => intern!(py, "result"),
            Kind::Error => intern!(py, "error"),
        };
        Ok(name.clone().into_any().unbind())
    }

    pub(crate) fn id(&self, py: Python<'_>) -> Member {
        if let Some(v) = self.id.get() {
            return Ok(v.clone_ref(py));
        }
        let built = match (self.id_source, &self.raw_id) {
            (IdSource::Int(i), _) => i.into_pyobject(py)?.into_any().unbind(),
            (IdSource::Str, Some(span)) => {
                let content = &self.frame(py)[span.start + 1..span.end - 1];
                // SAFETY: the frame passed the UTF-8 check, and a string token's content starts
                // and ends next to an ASCII quote, so it is valid UTF-8 by itself (the buffer is
                // immutable: `bytes`, or a copy only the messages hold).
                let text = unsafe { std::str::from_utf8_unchecked(content) };
                PyString::new(py, text).into_any().unbind()
            }
            (IdSource::Big, Some(span)) => {
                values::big_int(py, &self.frame(py)[span.clone()])?.unbind()
            }
            _ => return Ok(py.None()),
        };
        // building allocates, which may run other Python code (a finalizer) that asked for the
        // id in the meantime: the first object stays
        if let Err(again) = self.id.set(built) {
            again.drop_ref(py);
        }
        Ok(optional(py, self.id.get()))
    }

    /// Whether the message has an id (`id` is not `None`).
    fn has_id(&self) -> bool {
        !matches!(self.id_source, IdSource::Absent)
    }

    pub(crate) fn method(&self, py: Python<'_>) -> Member {
        if let Some(v) = self.method.get() {
            return Ok(v.clone_ref(py));
        }
        let Some(span) = &self.raw_method else {
            return Ok(py.None());
        };
        // SAFETY: as for a string id: the frame passed the UTF-8 check and the span is a string
        // token's content, next to ASCII quotes (the buffer is immutable).
        let text = unsafe { std::str::from_utf8_unchecked(&self.frame(py)[span.clone()]) };
        let built = methods::shared(py, text)?.into_any();
        // as for `id`: should another call have stored it meanwhile, the first object stays
        if let Err(again) = self.method.set(built) {
            again.drop_ref(py);
        }
        Ok(optional(py, self.method.get()))
    }

    pub(crate) fn params(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, bool)> {
        self.value_of(py, &[Kind::Request, Kind::Notification])
    }

    pub(crate) fn result(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, bool)> {
        self.value_of(py, &[Kind::Result])
    }

    pub(crate) fn error(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, bool)> {
        self.value_of(py, &[Kind::Error])
    }

    pub(crate) fn raw(&self, py: Python<'_>) -> Member {
        new_bytes(py, self.raw_slice(py))
    }

    pub(crate) fn raw_id(&self, py: Python<'_>) -> Member {
        self.bytes_of(py, &self.raw_id)
    }

    pub(crate) fn raw_params(&self, py: Python<'_>) -> Member {
        match self.kind {
            Kind::Request | Kind::Notification => self.bytes_of(py, &self.raw_payload),
            Kind::Result | Kind::Error => self.bytes_of(py, &self.response_params),
        }
    }

    pub(crate) fn raw_result(&self, py: Python<'_>) -> Member {
        self.bytes_of(py, self.payload_span(&[Kind::Result]))
    }

    pub(crate) fn raw_error(&self, py: Python<'_>) -> Member {
        self.bytes_of(py, self.payload_span(&[Kind::Error]))
    }

    pub(crate) fn offset(&self, py: Python<'_>) -> Member {
        Ok(self.offset.into_pyobject(py)?.into_any().unbind())
    }

    pub(crate) fn batch(&self, py: Python<'_>) -> Member {
        match self.batch {
            Some(b) => Ok(b.into_pyobject(py)?.into_any().unbind()),
            None => Ok(py.None()),
        }
    }

    pub(crate) fn lazy(&self, py: Python<'_>) -> Member {
        Ok(PyBool::new(py, self.lazy).to_owned().into_any().unbind())
    }

    /// `raw` with the top-level id value replaced by `new_id` (JSON-encoded).
    pub(crate) fn with_id(&self, py: Python<'_>, new_id: &Bound<'_, PyAny>) -> Member {
        let encoded = encode_id(py, new_id)?;
        let (true, Some(span)) = (self.has_id(), &self.raw_id) else {
            return Err(PyValueError::new_err("message has no id"));
        };
        let id = span.start - self.raw.start..span.end - self.raw.start;
        let spliced = splice::replace(self.raw_slice(py), id, &encoded);
        new_bytes(py, &spliced)
    }

    /// Equal to `other`: every attribute but `lazy` is a function of the raw bytes, the offset
    /// and the batch index.
    pub(crate) fn equals(&self, py: Python<'_>, other: &Record) -> bool {
        self.offset == other.offset
            && self.batch == other.batch
            && self.raw_slice(py) == other.raw_slice(py)
    }

    /// `Message(kind='request', id=1, method='tools/call')`.
    pub(crate) fn repr(&self, py: Python<'_>) -> Member {
        let id = self.id(py)?.into_bound(py).repr()?;
        let method = self.method(py)?.into_bound(py).repr()?;
        let text = format!(
            "Message(kind='{}', id={id}, method={method})",
            self.kind.as_str()
        );
        Ok(PyString::new(py, &text).into_any().unbind())
    }
}

/// A new `Message` object holding the record `make` returns (made once the object's memory is
/// at hand: it must not fail).
#[inline(always)]
pub(crate) fn new_message<'py>(
    py: Python<'py>,
    make: impl FnOnce() -> Record,
) -> PyResult<Bound<'py, PyAny>> {
    message_type::new_object(py, make)
}
