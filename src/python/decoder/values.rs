//! Python values built straight from the envelope scan: an eager decoder holding the GIL builds
//! `params`/`result` while it validates them, so each payload byte is read once instead of being
//! skipped by the scan and then parsed again.

use std::borrow::Cow;

use jiter::{Jiter, JiterError, Peek};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};

use crate::envelope::Payloads;
use crate::scan::{Invalid, Scan};

/// Why building stopped: bad JSON (a frame error) or a Python failure (raised to the caller).
enum Fail {
    Json(JiterError),
    Py(PyErr),
}

impl From<JiterError> for Fail {
    fn from(e: JiterError) -> Self {
        Self::Json(e)
    }
}

/// A Python `str`, through the ASCII fast path when it applies.
fn new_str<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    if s.is_ascii() {
        // SAFETY: `s` was just checked to be ASCII only.
        unsafe { jiter::pystring_ascii_new(py, s) }
    } else {
        PyString::new(py, s)
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
    let hex =
        |b: &[u8]| u32::from_str_radix(std::str::from_utf8(b).unwrap_or("0"), 16).unwrap_or(0);
    match rest[0] {
        b'b' => ('\u{8}', 1),
        b'f' => ('\u{c}', 1),
        b'n' => ('\n', 1),
        b'r' => ('\r', 1),
        b't' => ('\t', 1),
        b'u' => {
            let high = hex(&rest[1..5]);
            if (0xD800..0xDC00).contains(&high) {
                // a pair (the scan refused lone surrogates): `\uD83D\uDE00`
                let low = hex(&rest[7..11]);
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

/// The [`Payloads`] that builds Python objects.
pub(crate) struct PyValues<'a, 'py> {
    py: Python<'py>,
    keys: &'a mut Keys,
    /// A Python error met while building (the scan then stops as if the JSON were bad).
    pub(crate) error: Option<PyErr>,
}

impl<'a, 'py> PyValues<'a, 'py> {
    pub(crate) fn new(py: Python<'py>, keys: &'a mut Keys) -> Self {
        Self {
            py,
            keys,
            error: None,
        }
    }

    fn value(&mut self, j: &mut Jiter<'_>, peek: Peek) -> Result<Bound<'py, PyAny>, Fail> {
        let py = self.py;
        Ok(match peek {
            Peek::Null => {
                j.known_null()?;
                py.None().into_bound(py)
            }
            Peek::True | Peek::False => PyBool::new(py, j.known_bool(peek)?).to_owned().into_any(),
            Peek::String => new_str(py, &unescape(j.known_bytes()?)).into_any(),
            Peek::Array => self.array(j)?,
            Peek::Object => self.object(j)?,
            _ => j.known_number(peek)?.into_pyobject(py).map_err(Fail::Py)?,
        })
    }

    fn array(&mut self, j: &mut Jiter<'_>) -> Result<Bound<'py, PyAny>, Fail> {
        let mut items = Vec::new();
        let mut next = j.known_array()?;
        while let Some(peek) = next {
            items.push(self.value(j, peek)?);
            next = j.array_step()?;
        }
        Ok(PyList::new(self.py, items).map_err(Fail::Py)?.into_any())
    }

    fn object(&mut self, j: &mut Jiter<'_>) -> Result<Bound<'py, PyAny>, Fail> {
        let py = self.py;
        let dict = PyDict::new(py);
        let mut key = j.next_object_bytes()?.map(|raw| self.keys.get(py, raw));
        while let Some(k) = key {
            let peek = j.peek()?;
            let v = self.value(j, peek)?;
            dict.set_item(k, v).map_err(Fail::Py)?;
            key = j.next_key_bytes()?.map(|raw| self.keys.get(py, raw));
        }
        Ok(dict.into_any())
    }
}

impl Payloads for PyValues<'_, '_> {
    type Value = Py<PyAny>;

    fn take(&mut self, frame: &[u8], at: usize) -> Scan<(Option<Py<PyAny>>, usize)> {
        let mut j = Jiter::new(&frame[at..]);
        let built = j
            .peek()
            .map_err(Fail::Json)
            .and_then(|peek| self.value(&mut j, peek));
        match built {
            Ok(v) => Ok((Some(v.unbind()), at + j.current_index())),
            Err(Fail::Json(_)) => Err(Invalid),
            Err(Fail::Py(e)) => {
                // the scan stops as if the JSON were bad; the caller raises this error instead
                self.error = Some(e);
                Err(Invalid)
            }
        }
    }
}

/// Build the value of one JSON text already validated by the envelope scan (a lazy payload, or
/// one validated without the GIL), with a small key cache of its own.
pub(crate) fn parse<'py>(py: Python<'py>, json: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let mut keys = Keys::with_slots(32);
    let mut values = PyValues::new(py, &mut keys);
    let mut j = Jiter::new(json);
    let built = j
        .peek()
        .map_err(Fail::Json)
        .and_then(|peek| values.value(&mut j, peek));
    match built {
        Ok(v) => Ok(v),
        Err(Fail::Py(e)) => Err(e),
        Err(Fail::Json(e)) => Err(PyValueError::new_err(format!("invalid JSON payload: {e}"))),
    }
}
