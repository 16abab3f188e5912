//! Python bindings of the decode half of the core: `Decoder`, `decode`, `Message`, `FrameError`,
//! `splice_id` and the constants. One call crosses into Rust per chunk; a large chunk is framed and
//! validated without the GIL, then the Python objects are built in one go.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyList, PyMemoryView, PyString};

use num_bigint::BigInt;

use crate::depth::MAX_DEPTH;
use crate::digits::{self, MAX_INT_DIGITS};
use crate::envelope::{Failure, Skip, PARSE_ERROR};
use crate::framing::{Event, Framer, BOM, DEFAULT_MAX_FRAME, PREVIEW_BYTES};
use crate::splice;

use super::errors::new_error;

mod build;
mod direct;
mod frame_error;
mod guard;
mod message;
mod message_type;
mod methods;
mod strings;
mod values;

pub(crate) use strings::str_or_err;
pub(crate) use values::big_int;

use build::{frame_error, new_list, to_python, Buffer, Collector};
use direct::Direct;
use values::{Keys, PyPayloads, PyValues};

/// A lazy decoder frames and validates more bytes than this with the GIL released.
const DETACH_AT: usize = 64 * 1024;

/// An eager decoder releases the GIL (and validates in a pass of its own) only for chunks larger
/// than this: below it, building the values in the validation pass is worth more.
const EAGER_DETACH_AT: usize = 4 * 1024 * 1024;

/// The bytes of a `bytes`, `bytearray` or `memoryview` argument: the `bytes` object itself, or
/// a copy of the others (which may change under us). A subclass of `bytes` is copied too: its
/// instance may hold attributes (the messages, say), and the messages, mostly untracked by the
/// garbage collector, must not refer to it, or such a cycle could never be collected.
fn input_buffer(data: &Bound<'_, PyAny>) -> PyResult<Buffer> {
    if let Ok(b) = data.cast_exact::<PyBytes>() {
        Ok(Buffer::Bytes(b.clone().unbind()))
    } else if let Ok(b) = data.cast::<PyBytes>() {
        let copy = PyBytes::new(data.py(), b.as_bytes());
        Ok(Buffer::Bytes(copy.unbind()))
    } else if let Ok(b) = data.cast::<PyByteArray>() {
        Ok(Buffer::Shared(Arc::new(b.to_vec())))
    } else if data.is_instance_of::<PyMemoryView>() {
        let bytes = data.call_method0("tobytes")?.cast_into::<PyBytes>()?;
        Ok(Buffer::Bytes(bytes.unbind()))
    } else {
        let name = data.get_type().name()?;
        Err(PyTypeError::new_err(format!(
            "expected bytes, bytearray or memoryview, not {name}"
        )))
    }
}

/// Where the frames of one call come from: the input buffer and its bytes, and the options.
struct Run<'a> {
    input: &'a Buffer,
    chunk: &'a [u8],
    batches: bool,
    lazy: bool,
    max_frame: usize,
}

/// The cyclic garbage collector paused while one chunk's objects are built, the GIL held all along.
/// Building runs no Python code and creates no reference cycles, so a collection in the middle
/// could find no garbage made here, only walk the new containers again and again (a gen-0 pass
/// every 700 allocations); after the pause the next collection walks them once. The collector is
/// resumed only if it was enabled before. (On a free-threaded build other threads would see the
/// pause too; the package supports the GIL builds of CPython 3.11 and later.)
struct GcPause {
    resume: bool,
}

impl GcPause {
    fn new(_py: Python<'_>) -> Self {
        // SAFETY: the GIL is held (the `Python` token), as `PyGC_Disable` requires.
        let resume = unsafe { pyo3::ffi::PyGC_Disable() } == 1;
        Self { resume }
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.resume {
            // SAFETY: a pause only lives inside a GIL-held build (it is created from a `Python`
            // token and never crosses a `detach`), so the GIL is still held here.
            unsafe {
                pyo3::ffi::PyGC_Enable();
            }
        }
    }
}

/// The GIL-held path: frames become Python objects one by one as `drive` hands them out.
fn run_direct<'py, P: PyPayloads>(
    py: Python<'py>,
    run: &Run<'_>,
    payloads: P,
    drive: impl FnOnce(&mut dyn FnMut(Event<'_>)),
) -> PyResult<Bound<'py, PyList>> {
    let _pause = GcPause::new(py);
    let options = (run.batches, run.lazy, run.max_frame);
    let mut sink = Direct::new(py, (run.input, run.chunk), options, payloads);
    drive(&mut |e| sink.event(e));
    Ok(sink.finish()?.0)
}

/// Decode what `drive` hands out: without the GIL when `heavy` (values are then built afterwards),
/// else frame by frame, building eager values during the validation pass.
fn run_frames<'py>(
    py: Python<'py>,
    heavy: bool,
    run: &Run<'_>,
    keys: &mut Keys,
    drive: impl Send + FnOnce(&mut dyn FnMut(Event<'_>)),
) -> PyResult<Bound<'py, PyList>> {
    if heavy {
        let (batches, max_frame, chunk) = (run.batches, run.max_frame, run.chunk);
        let collected = py.detach(|| {
            let mut sink = Collector::new(batches, max_frame, chunk, Skip::default());
            drive(&mut |e| sink.event(e));
            sink.finish().0
        });
        let _pause = GcPause::new(py);
        return to_python(py, collected, run.input, (run.batches, run.lazy));
    }
    if run.lazy {
        run_direct(py, run, Skip::default(), drive)
    } else {
        run_direct(py, run, PyValues::new(py, keys), drive)
    }
}

/// The JSON text of a new id: an `int` (exact) or a `str`; `bool` and anything else is a TypeError.
pub(crate) fn encode_id(py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if id.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err("id must be an int or a str, not bool"));
    }
    if id.is_instance_of::<PyInt>() {
        if let Ok(i) = id.extract::<i64>() {
            return Ok(i.to_string().into_bytes());
        }
        // the exact value (not a subclass's __str__), written without `int.__repr__` and its
        // `sys.int_max_str_digits`; beyond the contract's digit limit an EncodeError
        let big = id.extract::<BigInt>()?;
        if digits::exceeds_limit(&big) {
            return Err(new_error(py, "EncodeError", digits::encode_limit_message()));
        }
        return Ok(big.to_str_radix(10).into_bytes());
    }
    if let Ok(s) = id.cast::<PyString>() {
        let Ok(text) = s.to_str() else {
            return Err(new_error(
                py,
                "EncodeError",
                "str is not valid UTF-8: surrogates not allowed",
            ));
        };
        let mut out = Vec::with_capacity(text.len() + 2);
        splice::write_json_string(&mut out, text);
        return Ok(out);
    }
    let name = id.get_type().name()?;
    Err(PyTypeError::new_err(format!(
        "id must be an int or a str, not {name}"
    )))
}

/// The `max_frame` option: an `int` of at least 1 (one beyond the address space means no limit).
struct MaxFrame(usize);

impl MaxFrame {
    const DEFAULT: Self = Self(DEFAULT_MAX_FRAME);
}

impl<'py> FromPyObject<'_, 'py> for MaxFrame {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if !ob.is_instance_of::<PyInt>() || ob.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err("max_frame must be an int"));
        }
        if ob.lt(1)? {
            let shown = ob.str()?;
            return Err(PyValueError::new_err(format!(
                "max_frame must be at least 1, not {shown}"
            )));
        }
        Ok(Self(ob.extract::<usize>().unwrap_or(usize::MAX)))
    }
}

/// Incremental NDJSON decoder (see `docs/core-contract.md`).
#[pyclass(module = "mcpframe._core", name = "Decoder")]
struct Decoder {
    framer: Framer,
    lazy: bool,
    batches: bool,
    keys: Keys,
}

impl Decoder {
    fn closed_error(py: Python<'_>) -> PyErr {
        new_error(py, "DecoderClosedError", "decoder is closed")
    }
}

#[pymethods]
impl Decoder {
    #[new]
    #[pyo3(
        signature = (*, max_frame = MaxFrame::DEFAULT, lazy = false, batches = true),
        text_signature = "(*, max_frame=67108864, lazy=False, batches=True)"
    )]
    fn new(max_frame: MaxFrame, lazy: bool, batches: bool) -> PyResult<Self> {
        let framer = Framer::new(max_frame.0);
        Ok(Self {
            framer,
            lazy,
            batches,
            keys: Keys::default(),
        })
    }

    /// Decode the frames that `data` completes, in stream order.
    #[pyo3(signature = (data, /))]
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        if self.framer.is_closed() {
            return Err(Self::closed_error(py));
        }
        let input = input_buffer(data)?;
        let chunk = input.bytes(py);
        let (framer, batches) = (&mut self.framer, self.batches);
        // the work is the chunk plus, if the chunk ends it, the frame held from earlier chunks
        let completes = framer.buffered() > 0 && memchr::memchr(b'\n', chunk).is_some();
        let held = if completes { framer.buffered() } else { 0 };
        // an eager decoder builds values in the validation pass, which needs the GIL: releasing
        // it for a separate validation pass costs a second pass (about a quarter more time), so
        // it does that only for a very large chunk
        let heavy = if self.lazy {
            chunk.len() + held > DETACH_AT
        } else {
            chunk.len() > EAGER_DETACH_AT
        };
        let run = Run {
            input: &input,
            chunk,
            batches,
            lazy: self.lazy,
            max_frame: framer.max_frame(),
        };
        // the decoder was checked open above
        let caches = &mut self.keys;
        run_frames(py, heavy, &run, caches, |sink| {
            let _ = framer.feed(chunk, sink);
        })
    }

    /// End the stream: decode an unterminated final frame; later calls raise DecoderClosedError.
    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        if self.framer.is_closed() {
            return Err(Self::closed_error(py));
        }
        let (framer, batches) = (&mut self.framer, self.batches);
        let held = framer.buffered();
        let none = Buffer::Empty;
        let run = Run {
            input: &none,
            chunk: &[],
            batches,
            lazy: self.lazy,
            max_frame: framer.max_frame(),
        };
        let caches = &mut self.keys;
        let heavy = self.lazy && held > DETACH_AT;
        run_frames(py, heavy, &run, caches, |sink| {
            let _ = framer.close(sink);
        })
    }

    #[getter]
    fn max_frame(&self) -> usize {
        self.framer.max_frame()
    }

    #[getter]
    fn lazy(&self) -> bool {
        self.lazy
    }

    #[getter]
    fn batches(&self) -> bool {
        self.batches
    }

    #[getter]
    fn offset(&self) -> u64 {
        self.framer.offset()
    }

    #[getter]
    fn buffered(&self) -> usize {
        self.framer.buffered()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.framer.is_closed()
    }
}

/// A body without its leading BOM, and the offset of what is left.
fn body_frame(body: &[u8]) -> (&[u8], u64) {
    match body.strip_prefix(&BOM[..]) {
        Some(rest) => (rest, BOM.len() as u64),
        None => (body, 0),
    }
}

/// True for a body of JSON whitespace only (or nothing): no message at all.
fn is_blank_body(frame: &[u8]) -> bool {
    frame
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Hand out what a whole body taken as one frame yields.
fn drive_body(body: &[u8], max_frame: usize, sink: &mut dyn FnMut(Event<'_>)) {
    let (bytes, offset) = body_frame(body);
    if bytes.len() > max_frame {
        let preview = &bytes[..PREVIEW_BYTES.min(max_frame + 1)];
        sink(Event::Oversize { offset, preview });
    } else {
        sink(Event::Frame { offset, bytes });
    }
}

/// The parse error of an empty (or whitespace-only) body `frame` at `offset`: a POST body is
/// one message, so it cannot be blank, unlike a line of a stream.
fn empty_body<'py>(py: Python<'py>, frame: &[u8], offset: u64) -> PyResult<Bound<'py, PyList>> {
    let failure = Failure::of_frame(frame, PARSE_ERROR, "Parse error: empty body".into());
    new_list(py, vec![frame_error(py, offset, &failure, Some(frame))?])
}

/// Decode a whole body (an HTTP POST body) as one frame.
#[pyfunction]
#[pyo3(
    signature = (data, /, *, max_frame = MaxFrame::DEFAULT, lazy = false, batches = true),
    text_signature = "(data, /, *, max_frame=67108864, lazy=False, batches=True)"
)]
fn decode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    max_frame: MaxFrame,
    lazy: bool,
    batches: bool,
) -> PyResult<Bound<'py, PyList>> {
    let max_frame = max_frame.0.min(usize::MAX - 1);
    let input = input_buffer(data)?;
    let body = input.bytes(py);
    let (frame, offset) = body_frame(body);
    if frame.len() <= max_frame && is_blank_body(frame) {
        return empty_body(py, frame, offset);
    }
    let heavy = body.len() > if lazy { DETACH_AT } else { EAGER_DETACH_AT };
    let run = Run {
        input: &input,
        chunk: body,
        batches,
        lazy,
        max_frame,
    };
    let caches = &mut Keys::default();
    run_frames(py, heavy, &run, caches, |sink| {
        drive_body(body, max_frame, sink)
    })
}

/// Rewrite the top-level id of a raw frame without re-encoding anything else.
#[pyfunction]
#[pyo3(signature = (frame, new_id, /))]
fn splice_id<'py>(
    py: Python<'py>,
    frame: &Bound<'py, PyAny>,
    new_id: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let encoded = encode_id(py, new_id)?;
    let input = input_buffer(frame)?;
    let (frame, id) =
        splice::locate_id(input.bytes(py)).map_err(|e| PyValueError::new_err(e.message()))?;
    Ok(PyBytes::new(py, &splice::replace(frame, id, &encoded)))
}

/// Register the decode half of `mcpframe._core`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Decoder>()?;
    message::register(m)?;
    m.add_class::<frame_error::FrameError>()?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(splice_id, m)?)?;
    m.add("MAX_DEPTH", MAX_DEPTH)?;
    m.add("MAX_INT_DIGITS", MAX_INT_DIGITS)?;
    m.add("DEFAULT_MAX_FRAME", DEFAULT_MAX_FRAME)?;
    m.add("PREVIEW_BYTES", PREVIEW_BYTES)?;
    Ok(())
}
