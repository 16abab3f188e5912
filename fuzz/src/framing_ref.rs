//! The framing rules of the core contract, restated as directly as possible over a whole stream
//! prefix: what must have been produced once these bytes were fed, and how many bytes must be held.
//! It rescans the prefix every time (quadratic, fine for fuzz-sized inputs); the real framer
//! must agree with it after every `feed`, whatever the chunking.

use mcpframe_core::framing::{BOM, PREVIEW_BYTES};

/// One framer event, owned, so that events from different runs can be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A complete, non-blank frame that fits.
    Frame {
        /// Stream offset of its first byte.
        offset: u64,
        /// Its bytes, terminator excluded.
        bytes: Vec<u8>,
    },
    /// A frame longer than the limit.
    Oversize {
        /// Stream offset of its first byte.
        offset: u64,
        /// Its first `min(PREVIEW_BYTES, max_frame + 1)` bytes.
        preview: Vec<u8>,
    },
}

/// Only spaces, tabs and CRs (or nothing): skipped silently.
fn blank(frame: &[u8]) -> bool {
    frame.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r'))
}

fn preview(frame: &[u8], max_frame: usize) -> Vec<u8> {
    frame[..frame.len().min(PREVIEW_BYTES.min(max_frame + 1))].to_vec()
}

/// The event for a complete frame (terminator removed) at `offset`, if it yields one.
fn complete(frame: &[u8], offset: usize, max_frame: usize, out: &mut Vec<Seen>) {
    let offset = offset as u64;
    if frame.len() > max_frame {
        let preview = preview(frame, max_frame);
        out.push(Seen::Oversize { offset, preview });
    } else if !blank(frame) {
        let bytes = frame.to_vec();
        out.push(Seen::Frame { offset, bytes });
    }
}

/// What a framer with `max_frame` must have produced after being fed `prefix` (and then closed, if
/// `closed`), and the bytes it must hold for an incomplete frame (`buffered`).
pub fn expected(prefix: &[u8], max_frame: usize, closed: bool) -> (Vec<Seen>, usize) {
    // rule 1: a BOM at offset 0 is dropped; a prefix that may still become one is held
    let start = if prefix.starts_with(BOM) {
        BOM.len()
    } else if !closed && BOM.starts_with(prefix) {
        return (Vec::new(), prefix.len());
    } else {
        0
    };
    let mut out = Vec::new();
    let mut begin = start;
    while let Some(k) = prefix[begin..].iter().position(|&b| b == b'\n') {
        let line = &prefix[begin..begin + k];
        complete(
            line.strip_suffix(b"\r").unwrap_or(line),
            begin,
            max_frame,
            &mut out,
        );
        begin += k + 1;
    }
    let tail = &prefix[begin..];
    if closed {
        // rule 4: the final frame as if terminated (a CR at its very end is the terminator's)
        complete(
            tail.strip_suffix(b"\r").unwrap_or(tail),
            begin,
            max_frame,
            &mut out,
        );
        return (out, 0);
    }
    // rule 3: oversize as soon as `max_frame + 1` bytes are known not to end in a CRLF
    let limit = max_frame.saturating_add(1);
    if tail.len() > limit || (tail.len() == limit && tail.last() != Some(&b'\r')) {
        let preview = preview(tail, max_frame);
        out.push(Seen::Oversize {
            offset: begin as u64,
            preview,
        });
        return (out, 0);
    }
    (out, tail.len())
}
