//! Python values built straight from the envelope scan: an eager decoder holding the GIL builds
//! `params`/`result` while it validates them, so each payload byte is read once instead of being
//! skipped by the scan and then parsed again.

use std::borrow::Cow;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};

use num_bigint::BigInt;

use super::strings::new_str;
use crate::depth::MAX_DEPTH;
use crate::envelope::{Payloads, Skip};
use crate::scan::{hex4, number_end, string_end, ws, Invalid, Scan};

/// Why building stopped: bad JSON (a frame error) or a Python failure (raised to the caller).
enum Fail {
    Json,
    Py(PyErr),
}

impl From<Invalid> for Fail {
    fn from(_: Invalid) -> Self {
        Self::Json
    }
}

/// `bytes` as text: a piece of a string token's content cut at ASCII positions (quotes,
/// backslashes, ends of escapes).
fn as_text(bytes: &[u8]) -> &str {
    // SAFETY: the envelope scan only runs on frames that are valid UTF-8 (step 1 comes first),
    // and every cut made here is next to an ASCII byte, so on a character boundary.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

/// The text of a JSON string token from its raw content (between the quotes), which the scan has
/// validated: escapes well formed, surrogates paired, no control characters. Most strings have no
/// escape and are used in place.
fn unescape(raw: &[u8]) -> Cow<'_, str> {
    let Some(first) = memchr::memchr(b'\\', raw) else {
        return Cow::Borrowed(as_text(raw));
    };
    let mut out = String::with_capacity(raw.len());
    out.push_str(as_text(&raw[..first]));
    let mut i = first;
    while i < raw.len() {
        let Some(next) = memchr::memchr(b'\\', &raw[i..]) else {
            out.push_str(as_text(&raw[i..]));
            break;
        };
        out.push_str(as_text(&raw[i..i + next]));
        i += next + 1;
        let (c, used) = escaped(&raw[i..]);
        out.push(c);
        i += used;
    }
    Cow::Owned(out)
}

/// The character of a (validated) escape whose backslash was just before `rest`, and how many
/// bytes of `rest` it used.
fn escaped(rest: &[u8]) -> (char, usize) {
    // the scan checked the four hex digits after each `\u` (so `hex4` cannot fail here)
    let hex = |at: usize| hex4(rest, at).unwrap_or(0);
    match rest[0] {
        b'b' => ('\u{8}', 1),
        b'f' => ('\u{c}', 1),
        b'n' => ('\n', 1),
        b'r' => ('\r', 1),
        b't' => ('\t', 1),
        b'u' => {
            let high = hex(1);
            if (0xD800..0xDC00).contains(&high) {
                // a pair (the scan refused lone surrogates): `\uD83D\uDE00`
                let low = hex(7);
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                (char::from_u32(code).unwrap_or('\u{fffd}'), 11)
            } else {
                (char::from_u32(high).unwrap_or('\u{fffd}'), 5)
            }
        }
        other => (char::from(other), 1),
    }
}

/// Object keys seen so far, by their raw bytes: MCP payloads repeat a few keys endlessly, so a
/// key is one lookup and a shared `str`, not a new string (nor a hash of the decoded text).
/// The slots are allocated on first use.
pub(crate) struct Keys {
    slots: Vec<Option<KeyEntry>>,
    /// Number of slots, a power of two.
    size: usize,
}

impl Default for Keys {
    fn default() -> Self {
        Self::with_slots(KEY_SLOTS)
    }
}

/// A cached key: its raw bytes and its string.
type KeyEntry = (Box<[u8]>, Py<PyString>);

/// Slots of [`Keys`] (a power of two); keys longer than `KEY_MAX` bytes are not cached.
const KEY_SLOTS: usize = 256;
const KEY_MAX: usize = 48;

impl Keys {
    /// The `str` for a key whose raw token content is `raw`.
    /// A cache of `size` slots (a power of two), allocated on first use.
    fn with_slots(size: usize) -> Self {
        Self {
            slots: Vec::new(),
            size,
        }
    }

    fn get<'py>(&mut self, py: Python<'py>, raw: &[u8]) -> Bound<'py, PyString> {
        if raw.len() > KEY_MAX {
            return new_str(py, &unescape(raw));
        }
        let hash = slot_hash(raw);
        if self.slots.is_empty() {
            self.slots.resize_with(self.size, || None);
        }
        let slot = &mut self.slots[(hash as usize) & (self.size - 1)];
        if let Some((k, s)) = slot {
            if **k == *raw {
                return s.bind(py).clone();
            }
        }
        let s = new_str(py, &unescape(raw));
        *slot = Some((raw.into(), s.clone().unbind()));
        s
    }
}

/// A cheap hash that only picks a slot of [`Keys`] (a hit is confirmed by comparing the bytes):
/// the length and the first and last (up to) eight bytes, mixed by one multiplication.
fn slot_hash(raw: &[u8]) -> u64 {
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let n = raw.len().min(8);
    let mixed = word(&raw[..n]) ^ word(&raw[raw.len() - n..]).rotate_left(29) ^ raw.len() as u64;
    let product = u128::from(mixed) * 0x9E37_79B9_7F4A_7C15;
    (product >> 64) as u64 ^ product as u64
}

/// The [`Payloads`] that builds Python objects, walking the JSON with the validating scanner of
/// `crate::scan` (so a value is checked and built in one pass).
pub(crate) struct PyValues<'a, 'py> {
    py: Python<'py>,
    keys: &'a mut Keys,
    /// Items of the arrays being built (nested arrays stack theirs above their parent's).
    items: Vec<Bound<'py, PyAny>>,
    /// A Python error met while building (the scan then stops as if the JSON were bad).
    error: Option<PyErr>,
}

type Built<'py> = Result<(Bound<'py, PyAny>, usize), Fail>;

impl<'a, 'py> PyValues<'a, 'py> {
    pub(crate) fn new(py: Python<'py>, keys: &'a mut Keys) -> Self {
        Self {
            py,
            keys,
            items: Vec::new(),
            error: None,
        }
    }

    /// The value starting at `i` in `d` (no whitespace before it), and the index after it. It may
    /// open `levels` nested arrays and objects: one more fails like bad JSON (the envelope scan
    /// then measures the frame's depth; this also bounds the recursion).
    fn value(&mut self, d: &[u8], i: usize, levels: usize) -> Built<'py> {
        let py = self.py;
        let constant = |word: &[u8], v: Bound<'py, PyAny>| {
            if d.get(i..i + word.len()) == Some(word) {
                Ok((v, i + word.len()))
            } else {
                Err(Fail::Json)
            }
        };
        match d.get(i) {
            Some(b'{' | b'[') if levels == 0 => Err(Fail::Json),
            Some(b'{') => self.object(d, i, levels - 1),
            Some(b'[') => self.array(d, i, levels - 1),
            Some(b'"') => {
                let (end, escaped) = string_end(d, i + 1)?;
                Ok((text(py, &d[i + 1..end - 1], escaped).into_any(), end))
            }
            Some(b'-' | b'0'..=b'9') => {
                let (end, int) = number_end(d, i)?;
                Ok((number(py, as_text(&d[i..end]), int)?, end))
            }
            Some(b't') => constant(b"true", PyBool::new(py, true).to_owned().into_any()),
            Some(b'f') => constant(b"false", PyBool::new(py, false).to_owned().into_any()),
            Some(b'n') => constant(b"null", py.None().into_bound(py)),
            _ => Err(Fail::Json),
        }
    }

    /// The array whose `[` is at `i` (its items may nest `levels` deep).
    fn array(&mut self, d: &[u8], i: usize, levels: usize) -> Built<'py> {
        let mark = self.items.len();
        let mut i = ws(d, i + 1);
        if d.get(i) == Some(&b']') {
            return Ok((PyList::empty(self.py).into_any(), i + 1));
        }
        loop {
            let (v, end) = self.value(d, i, levels)?;
            self.items.push(v);
            let after = ws(d, end);
            match d.get(after) {
                Some(b',') => i = ws(d, after + 1),
                Some(b']') => {
                    i = after + 1;
                    break;
                }
                _ => return Err(Fail::Json),
            }
        }
        let list = PyList::new(self.py, self.items.drain(mark..)).map_err(Fail::Py)?;
        Ok((list.into_any(), i))
    }

    /// The object whose `{` is at `i` (its values may nest `levels` deep).
    fn object(&mut self, d: &[u8], i: usize, levels: usize) -> Built<'py> {
        let py = self.py;
        let dict = PyDict::new(py);
        let mut i = ws(d, i + 1);
        if d.get(i) == Some(&b'}') {
            return Ok((dict.into_any(), i + 1));
        }
        loop {
            if d.get(i) != Some(&b'"') {
                return Err(Fail::Json);
            }
            let (key_end, _) = string_end(d, i + 1)?;
            let key = self.keys.get(py, &d[i + 1..key_end - 1]);
            let colon = ws(d, key_end);
            if d.get(colon) != Some(&b':') {
                return Err(Fail::Json);
            }
            let (v, end) = self.value(d, ws(d, colon + 1), levels)?;
            // the C call itself: `set_item`'s generic conversions cost about as much again
            // SAFETY: `dict` is a dict and `key`, `v` are live objects, borrowed (not stolen).
            if unsafe { ffi::PyDict_SetItem(dict.as_ptr(), key.as_ptr(), v.as_ptr()) } != 0 {
                return Err(Fail::Py(PyErr::fetch(py)));
            }
            let after = ws(d, end);
            match d.get(after) {
                Some(b',') => i = ws(d, after + 1),
                Some(b'}') => return Ok((dict.into_any(), after + 1)),
                _ => return Err(Fail::Json),
            }
        }
    }
}

/// The `str` of a string token's raw content.
fn text<'py>(py: Python<'py>, raw: &[u8], escaped: bool) -> Bound<'py, PyString> {
    if escaped {
        new_str(py, &unescape(raw))
    } else {
        new_str(py, as_text(raw))
    }
}

/// The `int` or `float` of a (valid) number literal.
fn number<'py>(py: Python<'py>, literal: &str, int: bool) -> Result<Bound<'py, PyAny>, Fail> {
    let built = if !int {
        // a literal beyond the double range parses as an infinity, as the contract says
        let f: f64 = literal.parse().map_err(|_| Fail::Json)?;
        Ok(PyFloat::new(py, f).into_any())
    } else if let Ok(i) = literal.parse::<i64>() {
        Ok(PyInt::new(py, i).into_any())
    } else {
        big_int(py, literal.as_bytes())
    };
    built.map_err(Fail::Py)
}

/// The `int` of a JSON integer literal beyond 64 bits (at most `MAX_INT_DIGITS` digits: the scan
/// refuses longer ones). Read into binary limbs in Rust and handed to CPython as bytes, so neither
/// `sys.int_max_str_digits` nor CPython's quadratic `int(str)` is involved.
pub(crate) fn big_int<'py>(py: Python<'py>, literal: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    if let Some(value) = int_128(literal) {
        // most "big" integers (ids beyond 2^63) are short: no big-number arithmetic for them
        return Ok(value.into_pyobject(py)?.into_any());
    }
    match BigInt::parse_bytes(literal, 10) {
        Some(value) => Ok(value.into_pyobject(py)?.into_any()),
        None => Err(PyValueError::new_err("invalid JSON integer")),
    }
}

/// The value of an integer literal (optional `-`, then ASCII digits) of at most 38 digits, which
/// always fits in `i128`; `None` for a longer one or anything else.
fn int_128(literal: &[u8]) -> Option<i128> {
    let (negative, digits) = match literal.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, literal),
    };
    if digits.is_empty() || digits.len() > 38 {
        return None;
    }
    let mut value: i128 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        // below 10^38 < i128::MAX by the length check: no overflow
        value = value * 10 + i128::from(c - b'0');
    }
    Some(if negative { -value } else { value })
}

/// A payload builder of the bindings: it may meet a Python error, which stops the scan as if the
/// JSON were bad; the caller takes it to tell the two apart.
pub(crate) trait PyPayloads: Payloads<Value = Py<PyAny>> {
    /// The Python error met since the last call, if any.
    fn take_error(&mut self) -> Option<PyErr>;
}

impl PyPayloads for Skip<Py<PyAny>> {
    fn take_error(&mut self) -> Option<PyErr> {
        None
    }
}

impl PyPayloads for PyValues<'_, '_> {
    fn take_error(&mut self) -> Option<PyErr> {
        self.error.take()
    }
}

impl Payloads for PyValues<'_, '_> {
    type Value = Py<PyAny>;

    fn take(&mut self, frame: &[u8], at: usize, levels: usize) -> Scan<(Option<Py<PyAny>>, usize)> {
        self.items.clear();
        match self.value(frame, at, levels) {
            Ok((v, end)) => Ok((Some(v.unbind()), end)),
            Err(Fail::Json) => Err(Invalid),
            Err(Fail::Py(e)) => {
                // the scan stops as if the JSON were bad; the caller raises this error instead
                self.error = Some(e);
                Err(Invalid)
            }
        }
    }
}

/// Build the value of one JSON text already validated by the envelope scan (a lazy payload, an
/// error's value, or one validated without the GIL), with the key cache that such values share.
pub(crate) fn parse<'py>(py: Python<'py>, json: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let mut keys = shared_keys::take();
    let built = parse_with(py, json, &mut keys);
    shared_keys::put(keys);
    built
}

/// Slots of the key cache of [`parse`]: a message's payload has a few keys, but a stream's
/// payloads share most of theirs.
const PARSE_KEY_SLOTS: usize = 64;

/// The key cache of values built one message at a time (lazy payloads on access, errors): one
/// per process on GIL builds, so that each value no longer makes (zeroes) and drops a table of
/// its own and a recurring key is one shared `str` (an error's value cost ~1,000 instructions,
/// most of them that table and its new keys).
#[cfg(not(Py_GIL_DISABLED))]
mod shared_keys {
    use std::cell::Cell;

    use super::{Keys, PARSE_KEY_SLOTS};

    struct Slot(Cell<Option<Keys>>);
    // SAFETY: used only by `take` and `put`, with the GIL held (compiled only for GIL builds).
    unsafe impl Sync for Slot {}
    static SLOT: Slot = Slot(Cell::new(None));

    /// The shared cache, or a new one while it is out: building a value may run Python code (a
    /// collection, a finalizer) that builds another, which then gets a cache of its own.
    pub(super) fn take() -> Keys {
        SLOT.0
            .take()
            .unwrap_or_else(|| Keys::with_slots(PARSE_KEY_SLOTS))
    }

    /// Give the cache back (the last one given back is kept).
    pub(super) fn put(keys: Keys) {
        // dropping the one it replaces (only after a nested build) releases its strings: the
        // GIL is held
        drop(SLOT.0.replace(Some(keys)));
    }
}

/// Free-threaded builds share no cache between threads: each value has its own.
#[cfg(Py_GIL_DISABLED)]
mod shared_keys {
    use super::{Keys, PARSE_KEY_SLOTS};

    pub(super) fn take() -> Keys {
        Keys::with_slots(PARSE_KEY_SLOTS)
    }

    pub(super) fn put(_keys: Keys) {}
}

fn parse_with<'py>(py: Python<'py>, json: &[u8], keys: &mut Keys) -> PyResult<Bound<'py, PyAny>> {
    let mut values = PyValues::new(py, keys);
    // a payload of a frame within the depth limit (the frame's object is a level of its own)
    match values.value(json, ws(json, 0), MAX_DEPTH) {
        Ok((v, end)) if ws(json, end) == json.len() => Ok(v),
        Ok(_) | Err(Fail::Json) => Err(PyValueError::new_err("invalid JSON payload")),
        Err(Fail::Py(e)) => Err(e),
    }
}
