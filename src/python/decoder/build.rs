//! From the pure Rust results of one chunk to Python objects. Framing and validation (which may
//! run without the GIL) record, for every frame that yields a message, where its bytes live: in
//! the input chunk itself (most frames: no copy at all) or, for a frame that began in an earlier
//! chunk, in a small arena. The messages then share those buffers, so `raw` and the `raw_*`
//! members are cut out only on access.

use std::ops::Range;
use std::sync::Arc;

use pyo3::exceptions::PyMemoryError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::envelope::{
    self, Envelope, Failure, Id, Item, Kind, OwnedId, Payloads, Text, INVALID_REQUEST,
};
use crate::framing::{Checked, Event};

use super::frame_error::FrameError;
use super::guard::{guarded, internal_error};
use super::message::{new_message, parse_json, IdSource, Record, ValueCell};
use super::strings::{bytes_or_err, str_or_err};
use super::values::big_int;

/// The bytes that message spans refer to.
pub(crate) enum Buffer {
    /// The caller's `bytes` object (immutable, so it can be shared as is).
    Bytes(Py<PyBytes>),
    /// A copy owned by the messages.
    Shared(Arc<Vec<u8>>),
    /// Nothing (what a dropped message leaves behind).
    Empty,
}

impl Buffer {
    /// The whole buffer.
    pub(crate) fn bytes<'a>(&'a self, py: Python<'_>) -> &'a [u8] {
        match self {
            Self::Bytes(b) => b.as_bytes(py),
            Self::Shared(v) => v,
            Self::Empty => &[],
        }
    }

    fn clone_ref(&self, py: Python<'_>) -> Self {
        match self {
            Self::Bytes(b) => Self::Bytes(b.clone_ref(py)),
            Self::Shared(v) => Self::Shared(Arc::clone(v)),
            Self::Empty => Self::Empty,
        }
    }
}

/// The input chunk of a collector or a direct sink, and how much of it is known to be valid UTF-8
/// (from its start). The check runs a block at a time just ahead of the frames that need it, so
/// that the block is still in the first-level cache when the framer and the scan read it: one
/// check of the whole chunk first (64 KiB, more than that cache) read it all once more from the
/// next level.
pub(crate) struct InputPlace<'a> {
    input: &'a [u8],
    /// `input[..valid]` is valid UTF-8.
    valid: usize,
    /// The check met invalid UTF-8 at `valid`: frames beyond it are checked on their own.
    stopped: bool,
}

/// How far the UTF-8 check reaches past the frame that needs it (a few dozen usual lines).
const UTF8_BLOCK: usize = 16 * 1024;

impl<'a> InputPlace<'a> {
    /// The place of `input`, nothing of it checked yet.
    pub(crate) fn new(input: &'a [u8]) -> Self {
        Self {
            input,
            valid: 0,
            stopped: false,
        }
    }

    /// Whether `input[..end]` is valid UTF-8, checking on from what is known (up to a char
    /// boundary at least a block further, so that the next frames need no check of their own).
    /// False also when the check stopped at invalid bytes before `end`: the caller checks
    /// the frame itself then.
    #[inline]
    fn covers(&mut self, end: usize) -> bool {
        if end <= self.valid {
            return true;
        }
        if self.stopped || end > self.input.len() {
            return false;
        }
        self.extend(end);
        end <= self.valid
    }

    #[inline(never)]
    fn extend(&mut self, end: usize) {
        let len = self.input.len();
        let mut to = end.max(self.valid + UTF8_BLOCK).min(len);
        if to == len && end < len {
            // the last block stops after the last line: a stream's chunk often ends inside a
            // character, and a failed check is done twice (to find where); the unterminated
            // tail's frame is checked when it is whole
            to = memchr::memrchr(b'\n', &self.input[end..]).map_or(end, |nl| end + nl + 1);
        }
        // end the block at the start of a character (valid text has one in any 4 bytes): a
        // block cut inside one would fail on its own although the whole text is valid
        if to > end && to < len {
            let low = end.max(to - 3);
            while to > low && self.input[to] & 0xC0 == 0x80 {
                to -= 1;
            }
        }
        match envelope::invalid_utf8_at(&self.input[self.valid..to]) {
            None => self.valid = to,
            Some(at) => {
                self.valid += at;
                self.stopped = true;
            }
        }
    }
}

/// Validate `bytes` into `out`, skipping the UTF-8 check when the input chunk's covers it;
/// returns whether the frame lies in the input chunk, and where.
pub(crate) fn validate_frame<P: Payloads>(
    bytes: &[u8],
    place: &mut InputPlace<'_>,
    batches: bool,
    payloads: &mut P,
    out: &mut Vec<Item<P::Value>>,
) -> (bool, usize) {
    let (address, len) = (place.input.as_ptr() as usize, place.input.len());
    let at = (bytes.as_ptr() as usize).wrapping_sub(address);
    let in_input = at <= len && bytes.len() <= len - at;
    if in_input && place.covers(at + bytes.len()) {
        envelope::validate_utf8(bytes, batches, payloads, out);
    } else {
        envelope::validate_with(bytes, batches, payloads, out);
    }
    (in_input, at)
}

/// The failure for a frame longer than `max_frame`.
pub(crate) fn oversize_failure(max_frame: usize, preview: &[u8]) -> Failure {
    let message = format!("Invalid Request: frame exceeds the maximum size of {max_frame} bytes");
    Failure {
        code: INVALID_REQUEST,
        message: message.into(),
        id: None,
        start: 0,
        end: 0,
        preview: preview.to_vec(),
        batch: None,
        notification: false,
    }
}

/// A guess at the number of frames in `input`, to size the per-chunk vectors: one per 128 bytes
/// (MCP lines are mostly longer). Counting the newlines exactly cost a pass over the chunk; a
/// chunk of shorter lines only grows a vector a few times.
pub(crate) fn frames_hint(input: &[u8]) -> usize {
    input.len() / 128 + 1
}

/// The frame that the items `items[..end]` (from the previous frame's `end`) came from.
struct FrameRec {
    end: usize,
    offset: u64,
    /// Where the frame starts in the input chunk, or which of `assembled` it is.
    place: Place,
    /// Its length.
    len: usize,
}

#[derive(Clone, Copy)]
enum Place {
    Input(usize),
    Assembled(usize),
    /// An oversize frame: its bytes were never held.
    Nowhere,
}

/// What one chunk (or one `decode` body) yields, before any Python object exists.
pub(crate) struct Collected {
    /// Frames reassembled from several chunks (kept, not copied).
    assembled: Vec<Vec<u8>>,
    items: Vec<Item<Py<PyAny>>>,
    frames: Vec<FrameRec>,
}

/// The framer's sink: validates each frame and notes where the messages' bytes are.
pub(crate) struct Collector<'a, P> {
    batches: bool,
    max_frame: usize,
    /// The input chunk, to tell its frames from reassembled ones, and how much of it is UTF-8.
    input: InputPlace<'a>,
    /// Consumes the payload values: validates them, and may build them.
    payloads: P,
    out: Collected,
}

impl<'a, P: Payloads<Value = Py<PyAny>>> Collector<'a, P> {
    /// A collector for the frames of `input` (and those reassembled from earlier chunks), sized
    /// so that usual frames do not make it grow (see [`frames_hint`]).
    pub(crate) fn new(batches: bool, max_frame: usize, input: &'a [u8], payloads: P) -> Self {
        let frames = frames_hint(input);
        let out = Collected {
            assembled: Vec::new(),
            items: Vec::with_capacity(frames),
            frames: Vec::with_capacity(frames),
        };
        Self {
            batches,
            max_frame,
            input: InputPlace::new(input),
            payloads,
            out,
        }
    }

    /// Validate one complete frame starting at stream `offset`.
    pub(crate) fn frame(&mut self, offset: u64, bytes: &[u8]) {
        let items = &mut self.out.items;
        let place = &mut self.input;
        let (_, at) = validate_frame(bytes, place, self.batches, &mut self.payloads, items);
        let (end, len) = (items.len(), bytes.len());
        let place = Place::Input(at);
        self.out.frames.push(FrameRec {
            end,
            offset,
            place,
            len,
        });
    }

    /// Validate one reassembled frame, keeping its buffer if it yields messages.
    pub(crate) fn assembled(&mut self, offset: u64, bytes: Vec<u8>, checked: Checked) {
        let items = &mut self.out.items;
        let known = (checked.utf8, checked.opening);
        envelope::validate_counted(&bytes, known, self.batches, &mut self.payloads, items);
        let place = Place::Assembled(self.out.assembled.len());
        let (end, len) = (items.len(), bytes.len());
        self.out.assembled.push(bytes);
        self.out.frames.push(FrameRec {
            end,
            offset,
            place,
            len,
        });
    }

    /// Report a frame longer than `max_frame`.
    pub(crate) fn oversize(&mut self, offset: u64, preview: &[u8]) {
        let failure = oversize_failure(self.max_frame, preview);
        self.out.items.push(Item::Failure(failure));
        let end = self.out.items.len();
        let place = Place::Nowhere;
        self.out.frames.push(FrameRec {
            end,
            offset,
            place,
            len: 0,
        });
    }

    /// Handle one framer event.
    pub(crate) fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Frame { offset, bytes } => self.frame(offset, bytes),
            Event::Assembled {
                offset,
                bytes,
                checked,
            } => self.assembled(offset, bytes, checked),
            Event::Oversize { offset, preview } => self.oversize(offset, preview),
        }
    }

    /// What was collected, and the payload builder (to look for a Python error it met).
    pub(crate) fn finish(self) -> (Collected, P) {
        (self.out, self.payloads)
    }
}

/// The Python list of `Message`/`FrameError` for what was collected; `input` is the buffer of the
/// input chunk the collector saw. Each frame's objects are built under the guard (see `guard`).
pub(crate) fn to_python<'py>(
    py: Python<'py>,
    collected: Collected,
    input: &Buffer,
    (batches, lazy): (bool, bool),
) -> PyResult<Bound<'py, PyList>> {
    let assembled: Vec<Buffer> = collected
        .assembled
        .into_iter()
        .map(|v| Buffer::Shared(Arc::new(v)))
        .collect();
    let mut objects = Vec::with_capacity(collected.items.len());
    // read in place (a message's fields are taken out of its envelope, not the envelope moved
    // out of the vector), then dropped with what is left in them frame by frame, while they are
    // still in the cache (dropped all at the end, they were read once more from further away)
    let mut items = Spent::new(collected.items);
    // the input's bytes once for all its frames (each look-up is two calls into CPython)
    let input_bytes = input.bytes(py);
    for frame in collected.frames {
        let (buf, bytes) = match frame.place {
            Place::Input(at) => (input, input_bytes.get(at..at + frame.len)),
            Place::Assembled(index) => {
                let buf = assembled.get(index).unwrap_or(&Buffer::Empty);
                (buf, buf.bytes(py).get(..frame.len))
            }
            Place::Nowhere => (&Buffer::Empty, None),
        };
        let base = match frame.place {
            Place::Input(at) => at,
            Place::Assembled(_) | Place::Nowhere => 0,
        };
        let these = items.next(frame.end);
        let mark = objects.len();
        let built = guarded(py, || {
            for item in these.iter_mut() {
                objects.push(match item {
                    Item::Message(e) => {
                        let frame_bytes = bytes.unwrap_or_default();
                        let place = (buf, frame_bytes, base, frame.offset);
                        message(py, place, e, lazy)?
                    }
                    Item::Failure(f) => frame_error(py, frame.offset, f, bytes)?,
                });
            }
            Ok(())
        });
        if let Err(name) = built {
            objects.truncate(mark);
            let frame_bytes = bytes.unwrap_or_default();
            objects.push(internal_error(
                py,
                frame_bytes,
                frame.offset,
                batches,
                &name,
            )?);
        }
    }
    new_list(py, objects)
}

/// The items of a chunk, handed out a frame at a time and each frame's dropped when the next is
/// asked for (the rest when this is dropped).
struct Spent {
    items: Vec<Item<Py<PyAny>>>,
    /// `items[..dropped]` are dropped already (the vector still counts them).
    dropped: usize,
    /// `items[dropped..handed]` were handed out last.
    handed: usize,
}

impl Spent {
    fn new(items: Vec<Item<Py<PyAny>>>) -> Self {
        Self {
            items,
            dropped: 0,
            handed: 0,
        }
    }

    /// Drop the items handed out last, and hand out those up to `end`.
    fn next(&mut self, end: usize) -> &mut [Item<Py<PyAny>>] {
        self.drop_handed();
        let end = end.clamp(self.handed, self.items.len());
        let start = self.handed;
        self.handed = end;
        // SAFETY: `start..end` is within the vector, at or after `dropped` (= `handed` before)
        unsafe { std::slice::from_raw_parts_mut(self.items.as_mut_ptr().add(start), end - start) }
    }

    fn drop_handed(&mut self) {
        let (start, end) = (self.dropped, self.handed);
        // mark them dropped first: should a drop panic, they are not dropped again
        self.dropped = end;
        // SAFETY: `start..end` is within the vector, handed out (no longer borrowed: `&mut
        // self`) and not dropped yet
        unsafe {
            let first = self.items.as_mut_ptr().add(start);
            release_items(std::ptr::slice_from_raw_parts_mut(first, end - start));
        }
    }
}

/// Release scan items whose objects were built: a message that owns nothing any more (its payload
/// value taken by its object, its id and method spans of the frame: the usual) is left as it is,
/// any other item is dropped in place. The generic drop of every item was a call and ~17
/// instructions a message.
///
/// # Safety
/// As for `ptr::drop_in_place` of the whole slice: valid items, not used again afterwards.
// inlined into the loops over a chunk's or a frame's items
#[inline(always)]
pub(crate) unsafe fn release_items(items: *mut [Item<Py<PyAny>>]) {
    let first = items.cast::<Item<Py<PyAny>>>();
    for k in 0..items.len() {
        let item = first.add(k);
        let owns = match &*item {
            Item::Message(e) => owns_anything(e),
            Item::Failure(_) => true,
        };
        if owns {
            std::ptr::drop_in_place(item);
        }
    }
}

/// Whether dropping `e` would free anything: a payload value, or an id or method string decoded
/// from escapes. Every other field is plain data (a kind, ranges, integers).
#[inline(always)]
fn owns_anything(e: &Envelope<Py<PyAny>>) -> bool {
    // every field named, so that a field added to `Envelope` must be considered here
    let Envelope {
        kind: _,
        id,
        method,
        raw: _,
        raw_id: _,
        raw_params: _,
        raw_result: _,
        raw_error: _,
        batch: _,
        payload,
    } = e;
    payload.is_some()
        || matches!(id, Some(Id::Str(Text::Owned(_))))
        || matches!(method, Some(Text::Owned(_)))
}

impl Drop for Spent {
    fn drop(&mut self) {
        // SAFETY: the vector forgets its items (those dropped already among them) before the
        // rest are dropped here, so that it only frees its memory
        unsafe {
            let len = self.items.len();
            self.items.set_len(0);
            let rest = self.items.as_mut_ptr().add(self.dropped);
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(rest, len - self.dropped));
        }
    }
}

/// A list of `items`, or the `MemoryError` of its allocation (`PyList::new` would panic).
pub(crate) fn new_list<'py>(
    py: Python<'py>,
    items: Vec<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let len = ffi::Py_ssize_t::try_from(items.len())
        .map_err(|_| PyMemoryError::new_err("too many items for a list"))?;
    // SAFETY: `PyList_New` returns a new list of `len` empty slots or NULL with an exception
    // set; each slot below `len` is then filled exactly once with a reference it takes over.
    unsafe {
        let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len))?;
        for (i, item) in items.into_iter().enumerate() {
            ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr());
        }
        Ok(list.cast_into_unchecked())
    }
}

/// The method name's span in the frame, and the cell its string is kept in: set now only for a
/// name with escapes (its decoded text is at hand now, not in the frame's bytes). The usual name
/// is looked up in the shared table when `method` is first read: a message forwarded or dropped
/// unread never pays for it (the look-up was ~70 instructions a message).
fn method_source(
    py: Python<'_>,
    method: &Option<Text>,
) -> PyResult<(Option<Range<usize>>, ValueCell)> {
    let cell = ValueCell::new();
    let span = match method {
        None => None,
        Some(Text::Span(span)) => Some(span.clone()),
        Some(Text::Owned(s)) => {
            let _ = cell.set(str_or_err(py, s)?.into_any().unbind());
            None
        }
    };
    Ok((span, cell))
}

/// Where the message's id object will come from, and the cell it is kept in: set now only for a
/// string with escapes (its decoded text is at hand now, not in the frame's bytes).
fn id_source(py: Python<'_>, id: &Option<Id>) -> (IdSource, ValueCell) {
    let cell = ValueCell::new();
    let source = match id {
        None => IdSource::Absent,
        Some(Id::Int(i)) => IdSource::Int(*i),
        Some(Id::Big(_)) => IdSource::Big,
        Some(Id::Str(Text::Span(_))) => IdSource::Str,
        Some(Id::Str(Text::Owned(s))) => {
            let _ = cell.set(PyString::new(py, s).into_any().unbind());
            IdSource::Built
        }
    };
    (source, cell)
}

fn owned_id_object<'py>(py: Python<'py>, id: &OwnedId) -> PyResult<Bound<'py, PyAny>> {
    match id {
        OwnedId::Int(i) => Ok(i.into_pyobject(py)?.into_any()),
        OwnedId::Big(s) => big_int(py, s.as_bytes()),
        OwnedId::Str(s) => Ok(str_or_err(py, s)?.into_any()),
    }
}

/// Build a `Message` for `e`, whose frame (`frame`, the bytes its spans refer to) is at `base`
/// in `buf` and at `offset` in the stream.
// inlined into the loops over a chunk's messages: called once per message, its set-up and the
// envelope's fields passed through memory were a tenth of its cost
#[inline(always)]
pub(crate) fn message<'py>(
    py: Python<'py>,
    (buf, frame, base, offset): (&Buffer, &[u8], usize, u64),
    e: &mut Envelope<Py<PyAny>>,
    lazy: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (id_source, id) = id_source(py, &e.id);
    let (raw_method, method) = method_source(py, &e.method)?;
    let request = matches!(e.kind, Kind::Request | Kind::Notification);
    let payload = if request {
        e.raw_params.clone()
    } else {
        e.raw_result.clone().or_else(|| e.raw_error.clone())
    };
    let value = ValueCell::new();
    if let Some(v) = e.payload.take() {
        // built during the scan
        let _ = value.set(v);
    } else if let Some(r) = &payload {
        if !lazy || e.kind == Kind::Error {
            let _ = value.set(parse_json(py, &frame[r.clone()])?.unbind());
        }
    }
    let make = || Record {
        kind: e.kind,
        lazy,
        batch: e.batch,
        id_source,
        id,
        method,
        raw_method,
        buf: buf.clone_ref(py),
        base,
        raw: e.raw.clone(),
        raw_id: e.raw_id.clone(),
        raw_payload: payload,
        response_params: if request { None } else { e.raw_params.clone() },
        offset: offset + e.raw.start as u64,
        value,
    };
    new_message(py, make)
}

/// The `FrameError` for `f`, whose offsets are relative to `frame` (`None` for an oversize frame,
/// whose bytes were never held: its `raw` is then `None`).
pub(crate) fn frame_error<'py>(
    py: Python<'py>,
    offset: u64,
    f: &Failure,
    frame: Option<&[u8]>,
) -> PyResult<Bound<'py, PyAny>> {
    let id = match &f.id {
        Some(id) => Some(owned_id_object(py, id)?.unbind()),
        None => None,
    };
    let raw = frame.and_then(|bytes| bytes.get(f.start..f.end));
    let e = FrameError {
        code: f.code,
        message: str_or_err(py, &f.message)?.unbind(),
        id,
        offset: offset + f.start as u64,
        preview: bytes_or_err(py, &f.preview)?.unbind(),
        batch: f.batch,
        notification: f.notification,
        raw: raw
            .map(|r| bytes_or_err(py, r))
            .transpose()?
            .map(Bound::unbind),
    };
    Ok(Bound::new(py, e)?.into_any())
}
