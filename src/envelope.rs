//! Validation and classification of one frame as a JSON-RPC 2.0 message (or batch), following the
//! order of the core contract: UTF-8, depth, JSON syntax, then the envelope rules. One pass of the
//! allocation-free scanner of `crate::scan` both checks the whole frame and records the byte spans
//! of `id`, `params`, `result` and `error`, so the bindings can build payload values lazily (or
//! splice a new id) straight from the raw bytes. Nothing here allocates for a valid message
//! except an escaped method or id string.

use std::borrow::Cow;
use std::ops::Range;

use crate::depth::{self, MAX_DEPTH};
use crate::digits;
use crate::framing::PREVIEW_BYTES;
use crate::scan::{self, Scan};

use rules::judge;
use walk::scan_frame;

mod rules;
mod walk;

/// JSON-RPC code for frames that are not valid UTF-8 JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC code for valid JSON that is not a valid message.
pub const INVALID_REQUEST: i64 = -32600;

/// The four kinds of valid message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `method` and a non-null `id`.
    Request,
    /// `method` and no `id`.
    Notification,
    /// `result` and a non-null `id`.
    Result,
    /// `error` (with an `id`, possibly `null`).
    Error,
}

impl Kind {
    /// The name used by the Python API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Notification => "notification",
            Self::Result => "result",
            Self::Error => "error",
        }
    }
}

/// A decoded JSON string: the exact bytes of the token's content when it has no escapes, else an
/// owned decoded copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    /// Range of the content (between the quotes) in the frame.
    Span(Range<usize>),
    /// The decoded string (the token had escapes).
    Owned(Box<str>),
}

impl Text {
    /// The UTF-8 bytes of the string, given the frame the span refers to.
    pub fn as_bytes<'a>(&'a self, frame: &'a [u8]) -> &'a [u8] {
        match self {
            Self::Span(r) => &frame[r.clone()],
            Self::Owned(s) => s.as_bytes(),
        }
    }

    /// The string, given the frame the span refers to.
    pub fn as_str<'a>(&'a self, frame: &'a [u8]) -> &'a str {
        match self {
            Self::Span(r) => std::str::from_utf8(&frame[r.clone()]).unwrap_or_default(),
            Self::Owned(s) => s,
        }
    }
}

/// A valid message id (string or integer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id {
    /// An integer that fits in `i64`.
    Int(i64),
    /// A larger integer: range of its literal in the frame.
    Big(Range<usize>),
    /// A string.
    Str(Text),
}

impl Id {
    /// The id as an [`OwnedId`], given the frame its spans refer to.
    pub fn owned(&self, frame: &[u8]) -> OwnedId {
        match self {
            Self::Int(i) => OwnedId::Int(*i),
            Self::Big(r) => OwnedId::Big(String::from_utf8_lossy(&frame[r.clone()]).into()),
            Self::Str(t) => OwnedId::Str(t.as_str(frame).into()),
        }
    }
}

/// A valid id owned by a `Failure` (whose frame bytes may not be kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedId {
    /// An integer that fits in `i64`.
    Int(i64),
    /// A larger integer, as its JSON literal.
    Big(Box<str>),
    /// A string.
    Str(Box<str>),
}

/// A valid message. All ranges are byte ranges in the frame given to [`validate`]. `V` is the
/// type of payload value a [`Payloads`] builds during the scan (`()` when it only validates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope<V = ()> {
    /// What kind of message.
    pub kind: Kind,
    /// The id; `None` for notifications and for an error with `id: null`.
    pub id: Option<Id>,
    /// The method (requests and notifications).
    pub method: Option<Text>,
    /// The message bytes: the whole frame, or a batch element without surrounding whitespace.
    pub raw: Range<usize>,
    /// The `id` value's bytes, when present (`null` included).
    pub raw_id: Option<Range<usize>>,
    /// The `params` value's bytes, when present (in a response too, where it means nothing).
    pub raw_params: Option<Range<usize>>,
    /// The `result` value's bytes (kind `Result` only).
    pub raw_result: Option<Range<usize>>,
    /// The `error` value's bytes (kind `Error` only).
    pub raw_error: Option<Range<usize>>,
    /// Index within its batch.
    pub batch: Option<u32>,
    /// The `params` (requests, notifications) or `result` value, if the scan built it.
    pub payload: Option<V>,
}

/// An invalid frame or batch element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `PARSE_ERROR` or `INVALID_REQUEST`.
    pub code: i64,
    /// The contract's message text.
    pub message: Cow<'static, str>,
    /// The top-level id when it is a string or an integer within the digit limit (envelope and
    /// digit-limit failures only).
    pub id: Option<OwnedId>,
    /// Position of the frame or element in the frame given to [`validate`].
    pub start: usize,
    /// Where the frame or element ends there (its bytes are `start..end`).
    pub end: usize,
    /// Its first `PREVIEW_BYTES` bytes.
    pub preview: Vec<u8>,
    /// Index within its batch.
    pub batch: Option<u32>,
    /// A valid notification rejected all the same (by the integer digit limit): MCP never answers
    /// it. Every other failure, an invalid envelope with `method` and no `id` included, is `false`.
    pub notification: bool,
}

impl Failure {
    /// A failure of `frame` as a whole (not of one batch element): no id, its first bytes as preview.
    pub fn of_frame(frame: &[u8], code: i64, message: Cow<'static, str>) -> Self {
        Failure {
            code,
            message,
            id: None,
            start: 0,
            end: frame.len(),
            preview: frame[..frame.len().min(PREVIEW_BYTES)].to_vec(),
            batch: None,
            notification: false,
        }
    }
}

/// What one frame yields: messages and failures, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item<V = ()> {
    /// A valid message.
    Message(Envelope<V>),
    /// An invalid frame or batch element.
    Failure(Failure),
}

/// The invalid-JSON message.
pub const INVALID_JSON: &str = "Parse error: invalid JSON";
const NOT_OBJECT: &str = "Invalid Request: expected a JSON object";
const EMPTY_BATCH: &str = "Invalid Request: empty batch";
const NO_BATCHES: &str = "Invalid Request: batches are not supported";
/// The message of the digit-limit failure (`MAX_INT_DIGITS` is 4300; a test checks the text).
pub const LONG_INTEGER: &str = "Invalid Request: integer literal longer than 4300 digits";

/// The id member as found, before the envelope rules judge it.
#[derive(Debug)]
enum IdTag {
    Null,
    Int(i64),
    Big,
    Str(Text),
    Bad,
}

/// How the scan consumes the `params` and `result` values: it must consume (and so validate) the
/// value, and may build something from it on the way, saving a second pass over its bytes.
pub trait Payloads {
    /// What is built from a value.
    type Value;
    /// Consume the value that starts at `at` in `frame` (no whitespace before it): what was
    /// built from it, and the index just after it. The value may open at most `levels` nested
    /// arrays and objects (what is left of the depth limit there): one more must fail the
    /// scan, which then measures the frame's depth itself.
    fn take(
        &mut self,
        frame: &[u8],
        at: usize,
        levels: usize,
    ) -> Scan<(Option<Self::Value>, usize)>;
}

/// Validate payload values without building anything.
#[derive(Debug)]
pub struct Skip<V = ()>(std::marker::PhantomData<V>);

impl<V> Default for Skip<V> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<V> Payloads for Skip<V> {
    type Value = V;
    fn take(&mut self, frame: &[u8], at: usize, levels: usize) -> Scan<(Option<V>, usize)> {
        scan::skip_nested(frame, at, levels).map(|end| (None, end))
    }
}

/// What the scan of an object recorded about its members (the last duplicate wins).
#[derive(Debug)]
struct Members<V> {
    jsonrpc: Option<bool>,
    method: Option<Option<Text>>,
    id: Option<(Range<usize>, IdTag)>,
    params: Option<(Range<usize>, bool)>,
    result: Option<Range<usize>>,
    error: Option<(Range<usize>, ErrShape)>,
    params_value: Option<V>,
    result_value: Option<V>,
}

impl<V> Default for Members<V> {
    fn default() -> Self {
        Self {
            jsonrpc: None,
            method: None,
            id: None,
            params: None,
            result: None,
            error: None,
            params_value: None,
            result_value: None,
        }
    }
}

/// What the `error` member looked like.
#[derive(Debug, Clone, Copy)]
enum ErrShape {
    NotObject,
    Object { code: bool, message: bool },
}

/// The index of the first byte of the first invalid UTF-8 sequence in `bytes`, `None` if it is all
/// valid. A SIMD check first (the common case is valid text, often not ASCII); the exact position
/// only when that fails, with simdutf8's `compat` check (the same position as `std`'s
/// `valid_up_to`, but SIMD too: a 64 KiB chunk cut inside a character fails the first check and
/// would otherwise be read again byte by byte).
pub fn invalid_utf8_at(bytes: &[u8]) -> Option<usize> {
    if simdutf8::basic::from_utf8(bytes).is_ok() {
        return None;
    }
    simdutf8::compat::from_utf8(bytes)
        .err()
        .map(|e| e.valid_up_to())
}

/// Validate `frame` and append what it yields to `out`: one item, or one per batch element.
pub fn validate(frame: &[u8], batches: bool, out: &mut Vec<Item>) {
    validate_with(frame, batches, &mut Skip::default(), out);
}

/// [`validate`], with `payloads` consuming the `params` and `result` values.
pub fn validate_with<P: Payloads>(
    frame: &[u8],
    batches: bool,
    payloads: &mut P,
    out: &mut Vec<Item<P::Value>>,
) {
    if let Some(at) = invalid_utf8_at(frame) {
        let message = format!("Parse error: invalid UTF-8 at byte {at} of the frame");
        out.push(frame_failure(frame, PARSE_ERROR, message.into()));
        return;
    }
    validate_utf8(frame, batches, payloads, out);
}

/// [`validate`] for a frame already known to be valid UTF-8 (the caller checked a whole chunk
/// at once): steps 2 onwards.
pub fn validate_utf8<P: Payloads>(
    frame: &[u8],
    batches: bool,
    payloads: &mut P,
    out: &mut Vec<Item<P::Value>>,
) {
    let deep = || depth::exceeds(frame, MAX_DEPTH);
    validate_depth_later(frame, deep, batches, payloads, out);
}

/// [`validate_with`] for a frame whose framer checked its UTF-8 (`utf8`: all valid) and counted
/// its `opening` brackets as it gathered it, so a large frame is not read again for them.
pub fn validate_counted<P: Payloads>(
    frame: &[u8],
    (utf8, opening): (bool, usize),
    batches: bool,
    payloads: &mut P,
    out: &mut Vec<Item<P::Value>>,
) {
    if !utf8 {
        validate_with(frame, batches, payloads, out);
        return;
    }
    let deep = || depth::exceeds_counted(frame, opening, MAX_DEPTH);
    validate_depth_later(frame, deep, batches, payloads, out);
}

/// Steps 2 onwards for valid UTF-8, `deep` saying whether the nesting exceeds the limit. The
/// contract checks the depth (step 2) before the syntax (step 4), but the scan bounds every value
/// by what is left of the limit where it sits: a frame it accepts is within the limit, and only
/// one it refuses pays for measuring the depth, so the common path reads the frame once.
fn validate_depth_later<P: Payloads>(
    frame: &[u8],
    deep: impl FnOnce() -> bool,
    batches: bool,
    payloads: &mut P,
    out: &mut Vec<Item<P::Value>>,
) {
    let before = out.len();
    if scan_frame(frame, batches, payloads, out, &[]).is_ok() {
        return;
    }
    out.truncate(before);
    if deep() {
        let message = format!("Parse error: nesting deeper than {MAX_DEPTH} levels");
        out.push(frame_failure(frame, PARSE_ERROR, message.into()));
        return;
    }
    if !rescan_long_integers(frame, batches, payloads, out) {
        out.truncate(before);
        out.push(frame_failure(frame, PARSE_ERROR, INVALID_JSON.into()));
    }
}

/// The second chance of a frame whose scan failed: if it holds integer literals beyond the digit
/// limit, scan a copy with stand-ins for them (see `crate::digits`), marking the messages that
/// held one. False when there are none or the copy is invalid too (then it is invalid JSON).
fn rescan_long_integers<P: Payloads>(
    frame: &[u8],
    batches: bool,
    payloads: &mut P,
    out: &mut Vec<Item<P::Value>>,
) -> bool {
    let long = digits::long_integers(frame);
    if long.is_empty() {
        return false;
    }
    let copy = digits::with_stand_ins(frame, &long);
    let starts: Vec<usize> = long.iter().map(|r| r.start).collect();
    let before = out.len();
    if scan_frame(&copy, batches, payloads, out, &starts).is_err() {
        return false;
    }
    // the previews were cut from the copy: show the frame's own bytes. A batch element that is a bare
    // long literal ended after its stand-in's `0` in the copy: it ends where the literal does.
    for item in &mut out[before..] {
        if let Item::Failure(f) = item {
            if let Some(r) = long.iter().find(|r| r.start < f.end && f.end < r.end) {
                f.end = r.end;
            }
            f.preview = preview(frame, &(f.start..f.end));
        }
    }
    true
}

/// A failure of the frame as a whole (steps 1-4 and batch-level rules).
fn frame_failure<V>(frame: &[u8], code: i64, message: Cow<'static, str>) -> Item<V> {
    Item::Failure(Failure::of_frame(frame, code, message))
}

fn classify_element<V>(
    members: Option<Members<V>>,
    range: Range<usize>,
    index: u32,
    frame: &[u8],
    long: &[usize],
) -> Item<V> {
    match members {
        Some(m) => classify(m, range, Some(index), frame, long),
        None => Item::Failure(Failure {
            code: INVALID_REQUEST,
            message: NOT_OBJECT.into(),
            id: None,
            start: range.start,
            end: range.end,
            preview: preview(frame, &range),
            batch: Some(index),
            notification: false,
        }),
    }
}

fn preview(frame: &[u8], range: &Range<usize>) -> Vec<u8> {
    frame[range.start..range.end.min(range.start + PREVIEW_BYTES)].to_vec()
}

/// The message or failure for an object's members; `long` holds the positions of the integer
/// literals beyond the digit limit in the frame (empty on the common path).
// inlined into the scan of a frame, so that the message is built straight into `out`'s slot
// rather than returned (a copy of the whole item per message)
#[inline(always)]
fn classify<V>(
    m: Members<V>,
    raw: Range<usize>,
    batch: Option<u32>,
    frame: &[u8],
    long: &[usize],
) -> Item<V> {
    let verdict = judge(&m);
    let too_long = !long.is_empty() && digits::any_in(long, &raw);
    let (message, notification) = match verdict {
        Ok(kind) if !too_long => return Item::Message(envelope(m, kind, raw, batch)),
        Ok(kind) => (LONG_INTEGER, kind == Kind::Notification),
        Err(message) => (message, false),
    };
    // an id beyond the digit limit is no readable id (its stand-in is not its value)
    let id_too_long = too_long && m.id.as_ref().is_some_and(|(r, _)| digits::any_in(long, r));
    Item::Failure(Failure {
        code: INVALID_REQUEST,
        message: message.into(),
        id: if id_too_long {
            None
        } else {
            owned_id(&m, frame)
        },
        start: raw.start,
        end: raw.end,
        preview: preview(frame, &raw),
        batch,
        notification,
    })
}

#[inline(always)]
fn envelope<V>(m: Members<V>, kind: Kind, raw: Range<usize>, batch: Option<u32>) -> Envelope<V> {
    let (raw_id, id) = match m.id {
        Some((r, tag)) => {
            let id = match tag {
                IdTag::Int(i) => Some(Id::Int(i)),
                IdTag::Big => Some(Id::Big(r.clone())),
                IdTag::Str(t) => Some(Id::Str(t)),
                IdTag::Null | IdTag::Bad => None,
            };
            (Some(r), id)
        }
        None => (None, None),
    };
    Envelope {
        kind,
        id,
        method: m.method.flatten(),
        raw,
        raw_id,
        // a response may carry a `params` member too: it is ignored, but its bytes are there
        raw_params: m.params.map(|p| p.0),
        raw_result: m.result,
        raw_error: m.error.map(|e| e.0),
        batch,
        payload: match kind {
            Kind::Request | Kind::Notification => m.params_value,
            Kind::Result => m.result_value,
            Kind::Error => None,
        },
    }
}

fn owned_id<V>(m: &Members<V>, frame: &[u8]) -> Option<OwnedId> {
    match &m.id {
        Some((_, IdTag::Int(i))) => Some(OwnedId::Int(*i)),
        Some((r, IdTag::Big)) => Some(OwnedId::Big(
            String::from_utf8_lossy(&frame[r.clone()]).into(),
        )),
        Some((_, IdTag::Str(t))) => Some(OwnedId::Str(t.as_str(frame).into())),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
