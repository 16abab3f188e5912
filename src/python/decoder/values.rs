//! Python values built straight from the envelope scan: an eager decoder holding the GIL builds
//! `params`/`result` while it validates them, so each payload byte is read once instead of being
//! skipped by the scan and then parsed again.

use std::borrow::Cow;

use jiter::{Jiter, JiterError, JiterErrorType, JiterResult, JsonErrorType, Peek};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};

use crate::envelope::Payloads;

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

/// The [`Payloads`] that builds Python objects (keys through jiter's string cache).
pub(crate) struct PyValues<'py> {
    py: Python<'py>,
    /// A Python error met while building (the scan then stops as if the JSON were bad).
    pub(crate) error: Option<PyErr>,
}

impl<'py> PyValues<'py> {
    pub(crate) fn new(py: Python<'py>) -> Self {
        Self { py, error: None }
    }

    fn value(&self, j: &mut Jiter<'_>, peek: Peek) -> Result<Bound<'py, PyAny>, Fail> {
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

    fn array(&self, j: &mut Jiter<'_>) -> Result<Bound<'py, PyAny>, Fail> {
        let mut items = Vec::new();
        let mut next = j.known_array()?;
        while let Some(peek) = next {
            items.push(self.value(j, peek)?);
            next = j.array_step()?;
        }
        Ok(PyList::new(self.py, items).map_err(Fail::Py)?.into_any())
    }

    fn object(&self, j: &mut Jiter<'_>) -> Result<Bound<'py, PyAny>, Fail> {
        let py = self.py;
        let dict = PyDict::new(py);
        let key_of = |raw: &[u8]| jiter::cached_py_string(py, &unescape(raw));
        let mut key = j.next_object_bytes()?.map(key_of);
        while let Some(k) = key {
            let peek = j.peek()?;
            let v = self.value(j, peek)?;
            dict.set_item(k, v).map_err(Fail::Py)?;
            key = j.next_key_bytes()?.map(key_of);
        }
        Ok(dict.into_any())
    }
}

impl Payloads for PyValues<'_> {
    type Value = Py<PyAny>;

    fn take(&mut self, j: &mut Jiter<'_>, peek: Peek) -> JiterResult<Option<Py<PyAny>>> {
        match self.value(j, peek) {
            Ok(v) => Ok(Some(v.unbind())),
            Err(Fail::Json(e)) => Err(e),
            Err(Fail::Py(e)) => {
                self.error = Some(e);
                let kind =
                    JsonErrorType::InternalError("Python error while building a value".into());
                Err(JiterError {
                    error_type: JiterErrorType::JsonError(kind),
                    index: j.current_index(),
                })
            }
        }
    }
}
