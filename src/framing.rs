//! Incremental NDJSON framing: splits a byte stream, fed in chunks of any size, into frames.
//!
//! A frame ends at LF; a CR right before the LF belongs to the terminator. A UTF-8 BOM at stream
//! offset 0 is dropped, and so is one at the start of any other frame (RFC 8259 lets a parser ignore
//! a BOM): one BOM per frame, offsets still count it, and a frame's own BOM counts in its size (the
//! stream's does not). Frames made only of spaces, tabs and CRs (after such a BOM) are skipped. A frame longer than `max_frame` bytes is reported once, as soon as it is known to be
//! too long, and its remaining bytes are dropped as they arrive, so the framer never holds more than
//! `max_frame + 1` bytes of it. Every result is independent of how the stream was chunked, and the
//! work is linear in the bytes fed: complete frames inside a chunk are handed out as borrowed
//! slices, and only the unterminated tail of a chunk is copied.

use memchr::memchr;

use crate::{depth, pages};

/// The UTF-8 byte order mark, dropped at stream offset 0 and at the start of every frame.
pub const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// Length of the preview of an oversize (or invalid) frame.
pub const PREVIEW_BYTES: usize = 64;

/// Default frame size limit in bytes.
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024 * 1024;

/// Room kept past a frame's first bytes when a chunk ends inside it: most MCP lines are shorter.
const HELD_ROOM: usize = 1024;

/// Something the framer found in the stream, in stream order.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A complete, non-blank frame of at most `max_frame` bytes, terminator excluded.
    Frame {
        /// Stream offset of the first byte of the frame.
        offset: u64,
        /// The frame bytes.
        bytes: &'a [u8],
    },
    /// A complete frame like `Frame`, reassembled from several chunks: the framer hands over the
    /// buffer it gathered it in, so the frame is never copied again.
    Assembled {
        /// Stream offset of the first byte of the frame.
        offset: u64,
        /// The frame bytes.
        bytes: Vec<u8>,
        /// What the framer learned about them while gathering them.
        checked: Checked,
    },
    /// A frame longer than `max_frame` bytes (reported once).
    Oversize {
        /// Stream offset of the first byte of the frame.
        offset: u64,
        /// Its first bytes: `PREVIEW_BYTES` of them, or `max_frame + 1` if that is fewer.
        preview: &'a [u8],
    },
}

/// What the framer learned about an assembled frame while gathering it, each piece checked as it
/// arrived (still in cache), so that validation need not read a large frame again for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The whole frame is valid UTF-8 (`false`: not known; the validator checks it again).
    pub utf8: bool,
    /// The number of `[` and `{` bytes in the frame (a bound on its nesting depth).
    pub opening: usize,
}

/// The running checks of the pending bytes.
#[derive(Debug, Default)]
struct Gathering {
    /// Length of the prefix known to be valid UTF-8 (it ends on a character boundary).
    utf8_valid: usize,
    /// An invalid UTF-8 sequence was seen.
    utf8_bad: bool,
    /// Bytes counted into `opening`.
    counted: usize,
    /// `[` and `{` bytes among them.
    opening: usize,
}

/// `feed` or `close` after `close`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// True for a frame that is skipped silently: only spaces, tabs and CRs (or nothing).
pub fn is_blank(frame: &[u8]) -> bool {
    frame.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// The newline search of [`Framer::feed`]: memchr's AVX2 searcher, made once per chunk, where the
/// CPU has AVX2, else the generic `memchr`.
// The generic `memchr` picks its implementation through a function pointer on every call: on a
// usual MCP line (~160 bytes) that dispatch was a third of the search's cost.
enum Newlines {
    #[cfg(target_arch = "x86_64")]
    Avx2(memchr::arch::x86_64::avx2::memchr::One),
    Generic,
}

impl Newlines {
    fn new() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(one) = memchr::arch::x86_64::avx2::memchr::One::new(b'\n') {
            return Self::Avx2(one);
        }
        Self::Generic
    }

    /// The index of the first newline in `haystack`.
    #[inline]
    fn find(&self, haystack: &[u8]) -> Option<usize> {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx2(one) => one.find(haystack),
            Self::Generic => memchr(b'\n', haystack),
        }
    }
}

/// The incremental splitter. See the module documentation.
#[derive(Debug)]
pub struct Framer {
    max_frame: usize,
    consumed: u64,
    pending: Vec<u8>,
    gathering: Gathering,
    frame_start: u64,
    discarding: bool,
    bom_matched: usize,
    bom_done: bool,
    closed: bool,
}

impl Framer {
    /// A framer enforcing `max_frame` (must be at least 1; the bindings check it).
    pub fn new(max_frame: usize) -> Self {
        Self {
            // at least 1, and `max_frame + 1` must not overflow
            max_frame: max_frame.clamp(1, usize::MAX - 1),
            consumed: 0,
            pending: Vec::new(),
            gathering: Gathering::default(),
            frame_start: 0,
            discarding: false,
            bom_matched: 0,
            bom_done: false,
            closed: false,
        }
    }

    /// The frame size limit.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Stream bytes consumed so far (a BOM included).
    pub fn offset(&self) -> u64 {
        self.consumed
    }

    /// Bytes held for an incomplete frame (at most `max_frame + 1`).
    pub fn buffered(&self) -> usize {
        if self.bom_done {
            self.pending.len()
        } else {
            self.bom_matched
        }
    }

    /// True once `close` was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Split `chunk`, handing every frame and oversize report it completes to `sink`, in order.
    pub fn feed<F>(&mut self, chunk: &[u8], mut sink: F) -> Result<(), Closed>
    where
        F: FnMut(Event<'_>),
    {
        if self.closed {
            return Err(Closed);
        }
        let start = self.consumed;
        self.consumed += chunk.len() as u64;
        let mut data = chunk;
        let mut base = start;
        if !self.bom_done {
            let used = self.match_bom(data);
            data = &data[used..];
            base += used as u64;
            if !self.bom_done {
                return Ok(());
            }
        }
        let newlines = Newlines::new();
        let mut pos = 0;
        while pos < data.len() {
            match newlines.find(&data[pos..]) {
                Some(k) => {
                    let nl = pos + k;
                    self.end_frame(&data[pos..nl], &mut sink);
                    pos = nl + 1;
                    self.frame_start = base + pos as u64;
                }
                None => {
                    self.hold(&data[pos..], &mut sink);
                    break;
                }
            }
        }
        Ok(())
    }

    /// End the stream: an unterminated final frame is handed out as if terminated.
    pub fn close<F>(&mut self, mut sink: F) -> Result<(), Closed>
    where
        F: FnMut(Event<'_>),
    {
        if self.closed {
            return Err(Closed);
        }
        self.closed = true;
        if !self.bom_done {
            // the stream ended inside what could still have been a BOM: those bytes are content
            self.bom_done = true;
            self.pending.extend_from_slice(&BOM[..self.bom_matched]);
            self.frame_start = 0;
        }
        if self.discarding {
            self.discarding = false;
            return Ok(());
        }
        // decoded as if terminated: a final CR would be half of a CRLF
        if self.pending.last() == Some(&b'\r') {
            self.pending.pop();
        }
        let (frame, checked) = self.take_pending();
        if frame.len() > self.max_frame {
            self.emit(&frame, self.frame_start, &mut sink);
        } else {
            self.assembled(frame, checked, &mut sink);
        }
        Ok(())
    }

    /// Consume the BOM prefix of the stream; return how many bytes of `data` it used.
    fn match_bom(&mut self, data: &[u8]) -> usize {
        let mut used = 0;
        while used < data.len() && self.bom_matched < BOM.len() {
            if data[used] != BOM[self.bom_matched] {
                // not a BOM after all: the bytes matched so far are the start of the first frame
                self.bom_done = true;
                self.pending.extend_from_slice(&BOM[..self.bom_matched]);
                self.frame_start = 0;
                return used;
            }
            self.bom_matched += 1;
            used += 1;
        }
        if self.bom_matched == BOM.len() {
            self.bom_done = true;
            self.frame_start = BOM.len() as u64;
        }
        used
    }

    /// The terminator of the current frame arrived; `seg` is its last bytes (before the LF).
    fn end_frame<F: FnMut(Event<'_>)>(&mut self, seg: &[u8], sink: &mut F) {
        if self.discarding {
            self.discarding = false;
            return;
        }
        if self.pending.is_empty() {
            let frame = seg.strip_suffix(b"\r").unwrap_or(seg);
            self.emit(frame, self.frame_start, sink);
            return;
        }
        let ends_cr = seg.last().or(self.pending.last()) == Some(&b'\r');
        let len = self.pending.len() + seg.len() - usize::from(ends_cr);
        if len > self.max_frame {
            let preview = self.preview_of(seg);
            sink(Event::Oversize {
                offset: self.frame_start,
                preview: &preview,
            });
        } else {
            self.pending.extend_from_slice(seg);
            self.pending.truncate(len);
            if !is_blank(&self.pending) {
                let (bytes, checked) = self.take_pending();
                self.assembled(bytes, checked, sink);
            }
        }
        self.clear_pending();
    }

    /// `seg` is the unterminated tail of a chunk: keep it, or report the frame as oversize.
    fn hold<F: FnMut(Event<'_>)>(&mut self, seg: &[u8], sink: &mut F) {
        if self.discarding {
            return;
        }
        let len = self.pending.len() + seg.len();
        let limit = self.max_frame + 1;
        // with exactly `max_frame + 1` bytes ending in CR, a following LF would make it fit
        let last_cr = seg.last().or(self.pending.last()) == Some(&b'\r');
        if len > limit || (len == limit && !last_cr) {
            let preview = self.preview_of(seg);
            sink(Event::Oversize {
                offset: self.frame_start,
                preview: &preview,
            });
            self.clear_pending();
            self.discarding = true;
        } else {
            self.reserve_pending(seg.len());
            self.pending.extend_from_slice(seg);
            self.check_pending();
        }
    }

    /// Make room for `extra` more pending bytes; a large buffer asks for huge pages. A frame
    /// begun at the end of a chunk gets [`HELD_ROOM`] more, so that the usual rest of it, in the
    /// next chunk, completes it without moving it.
    fn reserve_pending(&mut self, extra: usize) {
        let need = self.pending.len() + extra;
        if need > self.pending.capacity() {
            let room = if self.pending.is_empty() {
                HELD_ROOM
            } else {
                0
            };
            self.pending.reserve(extra + room.min(self.max_frame));
            if self.pending.capacity() >= pages::HUGE_FROM {
                pages::advise_huge(self.pending.as_ptr(), self.pending.capacity());
            }
        }
    }

    /// Check the pending bytes added since the last call (UTF-8, opening brackets).
    fn check_pending(&mut self) {
        let (bytes, g) = (&self.pending, &mut self.gathering);
        if !g.utf8_bad && g.utf8_valid < bytes.len() {
            match simdutf8::compat::from_utf8(&bytes[g.utf8_valid..]) {
                Ok(_) => g.utf8_valid = bytes.len(),
                // a character cut at the end of the piece: checked again with the next one
                Err(e) if e.error_len().is_none() => g.utf8_valid += e.valid_up_to(),
                Err(_) => g.utf8_bad = true,
            }
        }
        if g.counted < bytes.len() {
            g.opening += depth::opening(&bytes[g.counted..]);
            g.counted = bytes.len();
        }
    }

    /// Hand over the pending bytes (of a complete frame) and what is known about them.
    fn take_pending(&mut self) -> (Vec<u8>, Checked) {
        self.check_pending();
        let g = std::mem::take(&mut self.gathering);
        let mut bytes = std::mem::take(&mut self.pending);
        // the frame's messages keep this buffer alive as long as they live: give back the room held for
        // the rest of the frame (and growth's slack), or a peer writing each line in two pieces would
        // make every kept message cost ~1 KiB more (glibc shrinks in place, so the bytes do not move)
        if bytes.capacity() - bytes.len() > HELD_ROOM / 2 {
            bytes.shrink_to_fit();
        }
        // a final CR removed after its check leaves a shorter valid prefix
        let utf8 = !g.utf8_bad && g.utf8_valid >= bytes.len();
        let opening = g.opening;
        (bytes, Checked { utf8, opening })
    }

    /// Drop the pending bytes.
    fn clear_pending(&mut self) {
        self.pending.clear();
        self.gathering = Gathering::default();
    }

    /// The preview of the current frame, made of the pending bytes followed by `seg`.
    fn preview_of(&self, seg: &[u8]) -> Vec<u8> {
        let n = PREVIEW_BYTES.min(self.max_frame + 1);
        let mut preview: Vec<u8> = self.pending.iter().take(n).copied().collect();
        let more = n - preview.len();
        preview.extend_from_slice(&seg[..more.min(seg.len())]);
        preview
    }

    /// Hand out a complete frame (terminator removed), unless blank; report it if oversize.
    fn emit<F: FnMut(Event<'_>)>(&self, frame: &[u8], offset: u64, sink: &mut F) {
        if frame.len() > self.max_frame {
            let n = PREVIEW_BYTES.min(self.max_frame + 1);
            sink(Event::Oversize {
                offset,
                preview: &frame[..n],
            });
        } else {
            let (bytes, offset) = match frame.strip_prefix(&BOM[..]) {
                Some(rest) if self.drops_bom(offset) => (rest, offset + BOM.len() as u64),
                _ => (frame, offset),
            };
            if !is_blank(bytes) {
                sink(Event::Frame { offset, bytes });
            }
        }
    }

    /// Hand out the assembled current frame (at most `max_frame` bytes), its BOM dropped, unless blank.
    fn assembled<F: FnMut(Event<'_>)>(&self, mut bytes: Vec<u8>, checked: Checked, sink: &mut F) {
        let mut offset = self.frame_start;
        if bytes.starts_with(&BOM[..]) && self.drops_bom(offset) {
            bytes.drain(..BOM.len()); // rare: a peer that writes a BOM before each line
            offset += BOM.len() as u64;
        }
        if !is_blank(&bytes) {
            sink(Event::Assembled {
                offset,
                bytes,
                checked,
            });
        }
    }

    /// Whether the frame starting at `offset` drops a leading BOM: every frame but the first after a
    /// stream-start BOM, dropped already (one BOM per frame).
    fn drops_bom(&self, offset: u64) -> bool {
        self.bom_matched < BOM.len() || offset != BOM.len() as u64
    }
}

#[cfg(test)]
mod tests;
