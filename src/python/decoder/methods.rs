//! A decoder's small cache of method-name strings: a stream uses a handful of methods over and
//! over, so each message shares one `str` per method instead of building (or hashing) a new one.

use pyo3::prelude::*;
use pyo3::types::PyString;

/// How many distinct methods are kept (a stream with more just builds the rest each time).
const CAPACITY: usize = 32;

/// Method names seen so far, with their Python strings.
#[derive(Default)]
pub(crate) struct Methods {
    entries: Vec<(Box<str>, Py<PyString>)>,
}

impl Methods {
    /// The Python string for `name`, shared with earlier messages when possible.
    pub(crate) fn get(&mut self, py: Python<'_>, name: &str) -> Py<PyString> {
        if let Some((_, s)) = self.entries.iter().find(|(k, _)| **k == *name) {
            return s.clone_ref(py);
        }
        let s = PyString::new(py, name).unbind();
        if self.entries.len() < CAPACITY {
            self.entries.push((name.into(), s.clone_ref(py)));
        }
        s
    }
}
