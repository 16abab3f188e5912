//! The decoding path with the GIL held (most chunks): each frame is validated and turned into its
//! Python objects at once, so its results never wait in a per-chunk list and stay in cache.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::envelope::{self, Item};
use crate::framing::{Checked, Event};

use super::build::{frame_error, frames_hint, message, new_list};
use super::build::{oversize_failure, validate_frame};
use super::build::{release_items, Buffer, InputPlace};
use super::guard::{guarded, internal_error};
use super::values::PyPayloads;

/// The framer's sink when the GIL is held: builds `Message`/`FrameError` objects frame by frame,
/// each frame under the guard (see `guard`).
pub(crate) struct Direct<'a, 'py, P: PyPayloads> {
    py: Python<'py>,
    batches: bool,
    lazy: bool,
    max_frame: usize,
    input: &'a Buffer,
    place: InputPlace<'a>,
    payloads: P,
    scratch: Vec<Item<Py<PyAny>>>,
    objects: Vec<Bound<'py, PyAny>>,
    error: Option<PyErr>,
}

impl<'a, 'py, P: PyPayloads> Direct<'a, 'py, P> {
    /// A sink for the frames of `input` (whose bytes are `chunk`).
    pub(crate) fn new(
        py: Python<'py>,
        (input, chunk): (&'a Buffer, &'a [u8]),
        (batches, lazy, max_frame): (bool, bool, usize),
        payloads: P,
    ) -> Self {
        Self {
            py,
            batches,
            lazy,
            max_frame,
            input,
            place: InputPlace::new(chunk),
            payloads,
            scratch: Vec::with_capacity(4),
            // room for frames of 32 bytes on average: a pointer each, so over-sizing costs little
            objects: Vec::with_capacity(4 * frames_hint(chunk)),
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
                frame_error(self.py, offset, &failure, None).map(|e| self.objects.push(e))
            }
        };
        if let Err(e) = done {
            self.error = Some(e);
        }
    }

    fn frame(&mut self, offset: u64, bytes: &[u8]) -> PyResult<()> {
        let mark = self.objects.len();
        let built = guarded(self.py, || {
            let (batches, payloads) = (self.batches, &mut self.payloads);
            let (_, at) =
                validate_frame(bytes, &mut self.place, batches, payloads, &mut self.scratch);
            self.build((self.input, at), bytes, offset)
        });
        self.settle(built, mark, bytes, offset)
    }

    /// A frame reassembled from several chunks: its buffer becomes the messages' buffer.
    fn assembled(&mut self, offset: u64, bytes: Vec<u8>, checked: Checked) -> PyResult<()> {
        let mark = self.objects.len();
        let own = Buffer::Shared(Arc::new(bytes));
        let frame = own.bytes(self.py);
        let built = guarded(self.py, || {
            let (batches, payloads) = (self.batches, &mut self.payloads);
            let known = (checked.utf8, checked.opening);
            envelope::validate_counted(frame, known, batches, payloads, &mut self.scratch);
            self.build((&own, 0), frame, offset)
        });
        self.settle(built, mark, frame, offset)
    }

    /// The objects for what the last frame (`frame`, at `base` in `buf`) yielded; a Python error
    /// met by the payload builder during its validation is raised here.
    fn build(&mut self, (buf, base): (&Buffer, usize), frame: &[u8], offset: u64) -> PyResult<()> {
        if let Some(err) = self.payloads.take_error() {
            return Err(err);
        }
        // read in place, then released (after a failed build, `settle` clears it)
        for item in self.scratch.iter_mut() {
            self.objects.push(match item {
                Item::Message(e) => message(self.py, (buf, frame, base, offset), e, self.lazy)?,
                Item::Failure(f) => frame_error(self.py, offset, f, Some(frame))?,
            });
        }
        let len = self.scratch.len();
        // SAFETY: the vector forgets its items first (should a drop panic, the rest leak rather
        // than being dropped twice), then each is released once.
        unsafe {
            self.scratch.set_len(0);
            release_items(std::ptr::slice_from_raw_parts_mut(
                self.scratch.as_mut_ptr(),
                len,
            ));
        }
        Ok(())
    }

    /// After a frame: if building it failed, what it built is dropped and one internal-error
    /// `FrameError` stands for it.
    // inlined into the loop over frames (the usual frame only tests the result), its failure kept
    // out of line: a call for every frame was ~20 instructions a message
    #[inline(always)]
    fn settle(
        &mut self,
        built: Result<(), String>,
        mark: usize,
        frame: &[u8],
        offset: u64,
    ) -> PyResult<()> {
        match built {
            Ok(()) => Ok(()),
            Err(name) => self.failed(&name, mark, frame, offset),
        }
    }

    #[cold]
    #[inline(never)]
    fn failed(&mut self, name: &str, mark: usize, frame: &[u8], offset: u64) -> PyResult<()> {
        self.scratch.clear();
        self.objects.truncate(mark);
        let error = internal_error(self.py, frame, offset, self.batches, name)?;
        self.objects.push(error);
        Ok(())
    }

    /// The list of everything built, or the first Python error met.
    pub(crate) fn finish(self) -> PyResult<(Bound<'py, PyList>, P)> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok((new_list(self.py, self.objects)?, self.payloads))
    }
}
