//! A decoder's small cache of method-name strings: a stream uses a handful of methods over and
//! over, so each message shares one `str` per method instead of building (or hashing) a new one.

use pyo3::prelude::*;
use pyo3::types::PyString;

/// Slots of the cache (a power of two): MCP has a few dozen methods.
const SLOTS: usize = 64;

/// Method names seen so far, with their Python strings, in a table indexed by a cheap hash of the
/// name; a name is looked for in its slot and the next one (two ways), so two methods that share
/// a slot both stay. A stream with more methods than fit builds the rest each time.
#[derive(Default)]
pub(crate) struct Methods {
    /// Allocated on first use.
    slots: Vec<Option<(Box<str>, Py<PyString>)>>,
}

/// The slot of `name`: its length and three of its bytes, mixed by one multiplication.
fn slot(name: &[u8]) -> usize {
    let n = name.len();
    let (first, middle, last) = match n {
        0 => (0, 0, 0),
        _ => (name[0], name[n / 2], name[n - 1]),
    };
    let key = u32::from_le_bytes([first, middle, last, n as u8]);
    (key.wrapping_mul(0x9E37_79B1) >> 26) as usize % SLOTS
}

impl Methods {
    /// The Python string for `name`, shared with earlier messages when possible.
    pub(crate) fn get(&mut self, py: Python<'_>, name: &str) -> Py<PyString> {
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        let home = slot(name.as_bytes());
        let ways = [home, (home + 1) % SLOTS];
        for at in ways {
            if let Some((k, s)) = &self.slots[at] {
                if **k == *name {
                    return s.clone_ref(py);
                }
            }
        }
        let s = PyString::new(py, name).unbind();
        if let Some(free) = ways.into_iter().find(|&at| self.slots[at].is_none()) {
            self.slots[free] = Some((name.into(), s.clone_ref(py)));
        }
        s
    }
}
