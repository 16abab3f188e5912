//! The decoding path with the GIL held (most chunks): each frame is validated and turned into its
//! Python objects at once, so its results never wait in a per-chunk list and stay in cache.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::envelope::{self, Item, Payloads};
use crate::framing::{Checked, Event};

use super::build::{frame_error, input_place, message, oversize_failure, validate_frame};
use super::build::{Buffer, InputPlace};
use super::methods::Methods;

/// The framer's sink when the GIL is held: builds `Message`/`FrameError` objects frame by frame.
pub(crate) struct Direct<'a, 'py, P: Payloads<Value = Py<PyAny>>> {
    py: Python<'py>,
    batches: bool,
    lazy: bool,
    max_frame: usize,
    input: &'a Buffer,
    place: InputPlace,
    methods: &'a mut Methods,
    payloads: P,
    scratch: Vec<Item<Py<PyAny>>>,
    objects: Vec<Bound<'py, PyAny>>,
    error: Option<PyErr>,
}

impl<'a, 'py, P: Payloads<Value = Py<PyAny>>> Direct<'a, 'py, P> {
    /// A sink for the frames of `input` (whose bytes are `chunk`).
    pub(crate) fn new(
        py: Python<'py>,
        (input, chunk): (&'a Buffer, &[u8]),
        (batches, lazy, max_frame): (bool, bool, usize),
        methods: &'a mut Methods,
        payloads: P,
    ) -> Self {
        Self {
            py,
            batches,
            lazy,
            max_frame,
            input,
            place: input_place(chunk),
            methods,
            payloads,
            scratch: Vec::with_capacity(4),
            objects: Vec::with_capacity(memchr::memchr_iter(b'\n', chunk).count() + 1),
            error: None,
        }
    }

    /// Handle one framer event.
    pub(crate) fn event(&mut self, event: Event<'_>) {
        if self.error.is_some() {
            return;
        }
        let done = match event {
            Event::Frame { offset, bytes } => self.frame(offset, bytes),
            Event::Assembled {
                offset,
                bytes,
                checked,
            } => self.assembled(offset, bytes, checked),
            Event::Oversize { offset, preview } => {
                let failure = oversize_failure(self.max_frame, preview);
                frame_error(self.py, offset, failure).map(|e| self.objects.push(e))
            }
        };
        if let Err(e) = done {
            self.error = Some(e);
        }
    }

    fn frame(&mut self, offset: u64, bytes: &[u8]) -> PyResult<()> {
        let (batches, payloads) = (self.batches, &mut self.payloads);
        let (_, at) = validate_frame(bytes, self.place, batches, payloads, &mut self.scratch);
        self.build(self.input, at, offset)
    }

    /// A frame reassembled from several chunks: its buffer becomes the messages' buffer.
    fn assembled(&mut self, offset: u64, bytes: Vec<u8>, checked: Checked) -> PyResult<()> {
        let (batches, payloads) = (self.batches, &mut self.payloads);
        let known = (checked.utf8, checked.opening);
        envelope::validate_counted(&bytes, known, batches, payloads, &mut self.scratch);
        let own = Buffer::Shared(Arc::new(bytes));
        self.build(&own, 0, offset)
    }

    /// The objects for what the last frame (at `base` in `buf`) yielded.
    fn build(&mut self, buf: &Buffer, base: usize, offset: u64) -> PyResult<()> {
        for item in self.scratch.drain(..) {
            self.objects.push(match item {
                Item::Message(e) => {
                    message(self.py, (buf, base, offset), e, self.lazy, self.methods)?
                }
                Item::Failure(f) => frame_error(self.py, offset, f)?,
            });
        }
        Ok(())
    }

    /// The list of everything built, or the first Python error met.
    pub(crate) fn finish(self) -> PyResult<(Bound<'py, PyList>, P)> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok((PyList::new(self.py, self.objects)?, self.payloads))
    }
}
