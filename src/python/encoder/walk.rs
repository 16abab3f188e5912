//! The Python object walker of the encoder: turns `dict`/`list`/`tuple`/`str`/`int`/`float`/`bool`/
//! `None` (and subclasses) into JSON text through the pure Rust writer in `crate::encode`.
//!
//! It works on borrowed object pointers (no reference counting per element) and never runs Python
//! code, so the containers it walks cannot change under it while it holds the GIL.

use std::ptr::addr_of_mut;

use num_bigint::BigInt;
use pyo3::ffi;
use pyo3::prelude::*;

use super::bytes_out::BytesOut;
use super::keys;
use crate::digits;
use crate::encode::{self, Output, MAX_CONTAINER_DEPTH};
// The direct reads of CPython internals, where verified and allowed (else `None`: public path).
use crate::python::ffi::{cached_utf8, dict_entries, small_int, Entries};

/// Why a value could not be encoded.
pub(crate) enum Failure {
    /// `Type is not JSON serializable: {name}`.
    Type(String),
    /// `Dict key must be str`.
    DictKey,
    /// `Recursion limit reached`.
    Recursion,
    /// `str is not valid UTF-8: surrogates not allowed`.
    Surrogates,
    /// `Integer exceeds the limit of {MAX_INT_DIGITS} digits`.
    LongInt,
    /// A Python error raised underneath (e.g. `MemoryError`), passed on as is.
    Python(PyErr),
}

impl Failure {
    /// The contract's `EncodeError` message, or `None` for a Python error passed on.
    pub(crate) fn message(&self) -> Option<String> {
        match self {
            Failure::Type(name) => Some(format!("Type is not JSON serializable: {name}")),
            Failure::DictKey => Some("Dict key must be str".to_owned()),
            Failure::Recursion => Some("Recursion limit reached".to_owned()),
            Failure::Surrogates => {
                Some("str is not valid UTF-8: surrogates not allowed".to_owned())
            }
            Failure::LongInt => Some(digits::encode_limit_message()),
            Failure::Python(_) => None,
        }
    }
}

/// The walk stopped; the reason is kept in the walker (a zero-sized error keeps the hot
/// `Result`s in registers).
pub(crate) struct Stop;

/// The result of every walking step.
pub(crate) type Walked = Result<(), Stop>;

/// Appends JSON for Python values to the `bytes` buffer it owns (owned rather than borrowed: one
/// indirection less on every write).
pub(crate) struct Walker<'py> {
    py: Python<'py>,
    out: BytesOut,
    depth: usize,
    failure: Option<Failure>,
}

impl<'py> Walker<'py> {
    /// A walker appending to `out`.
    pub(crate) fn new(py: Python<'py>, out: BytesOut) -> Self {
        Walker {
            py,
            out,
            depth: 0,
            failure: None,
        }
    }

    /// Record why the walk stops.
    #[cold]
    pub(crate) fn fail(&mut self, failure: Failure) -> Walked {
        self.failure = Some(failure);
        Err(Stop)
    }

    /// Why the walk stopped (after an `Err(Stop)`).
    pub(crate) fn take_failure(&mut self) -> Failure {
        let missing =
            || Failure::Python(pyo3::exceptions::PySystemError::new_err("encoder stopped"));
        self.failure.take().unwrap_or_else(missing)
    }

    /// The buffer written so far.
    pub(crate) fn out(&mut self) -> &mut BytesOut {
        &mut self.out
    }

    /// The buffer, given back.
    pub(crate) fn into_out(self) -> BytesOut {
        self.out
    }

    /// Append one value (the nesting count restarts at zero for each top-level value).
    pub(crate) fn value(&mut self, obj: &Bound<'py, PyAny>) -> Walked {
        self.depth = 0;
        self.any(obj.as_ptr())
    }

    /// Append a str object (the caller checked the type).
    pub(crate) fn string(&mut self, obj: &Bound<'py, PyAny>) -> Walked {
        // SAFETY: `obj` is a live object owned by the caller for the duration of the call.
        unsafe { self.str(obj.as_ptr()) }
    }

    /// One value. The scalar types are handled inline (this is inlined in the container loops,
    /// so a list of strings or numbers makes no call per item); containers and everything else go
    /// through `other`, which is never inlined (it recurses).
    #[inline(always)]
    fn any(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        // SAFETY: `ptr` is a live object: the top-level value is owned by the caller and every
        // nested one is borrowed from a container that stays alive and unchanged (no Python code
        // runs during the walk). The type objects compared against are CPython's static types.
        unsafe {
            let ty = ffi::Py_TYPE(ptr);
            if ty == addr_of_mut!(ffi::PyUnicode_Type) {
                self.str(ptr)
            } else if ty == addr_of_mut!(ffi::PyLong_Type) {
                self.int(ptr)
            } else if ptr == ffi::Py_None() {
                encode::write_null(&mut self.out);
                Ok(())
            } else if ty == addr_of_mut!(ffi::PyBool_Type) {
                encode::write_bool(&mut self.out, ptr == ffi::Py_True());
                Ok(())
            } else if ty == addr_of_mut!(ffi::PyFloat_Type) {
                encode::write_f64(&mut self.out, ffi::PyFloat_AS_DOUBLE(ptr));
                Ok(())
            } else {
                self.other(ptr, ty)
            }
        }
    }

    /// Containers, and instances of subclasses of the supported types.
    #[inline(never)]
    fn other(&mut self, ptr: *mut ffi::PyObject, ty: *mut ffi::PyTypeObject) -> Walked {
        // SAFETY: as in `any`: `ptr` is live and `ty` is its type.
        unsafe {
            if ty == addr_of_mut!(ffi::PyDict_Type) {
                self.dict(ptr)
            } else if ty == addr_of_mut!(ffi::PyList_Type) {
                self.list(ptr)
            } else if ty == addr_of_mut!(ffi::PyTuple_Type) {
                self.tuple(ptr)
            } else {
                self.subclass(ptr, ty)
            }
        }
    }

    /// Instances of subclasses of the supported types (bool cannot be subclassed).
    unsafe fn subclass(&mut self, ptr: *mut ffi::PyObject, ty: *mut ffi::PyTypeObject) -> Walked {
        // SAFETY: as in `any`: `ptr` is live and `ty` is its type.
        unsafe {
            let has = |flag| ffi::PyType_HasFeature(ty, flag) != 0;
            if has(ffi::Py_TPFLAGS_UNICODE_SUBCLASS) {
                self.str(ptr)
            } else if has(ffi::Py_TPFLAGS_LONG_SUBCLASS) {
                self.int(ptr)
            } else if has(ffi::Py_TPFLAGS_DICT_SUBCLASS) {
                self.dict(ptr)
            } else if has(ffi::Py_TPFLAGS_LIST_SUBCLASS) {
                self.list(ptr)
            } else if has(ffi::Py_TPFLAGS_TUPLE_SUBCLASS) {
                self.tuple(ptr)
            } else if ffi::PyFloat_Check(ptr) != 0 {
                encode::write_f64(&mut self.out, ffi::PyFloat_AS_DOUBLE(ptr));
                Ok(())
            } else {
                self.type_failure(ptr)
            }
        }
    }

    #[cold]
    fn type_failure(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        // SAFETY: `ptr` is a live object (see `any`).
        let obj = unsafe { Borrowed::from_ptr(self.py, ptr) };
        let failure = match obj.get_type().name() {
            Ok(name) => Failure::Type(name.to_string()),
            Err(err) => Failure::Python(err),
        };
        self.fail(failure)
    }

    unsafe fn str(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        // SAFETY: `ptr` is a live str (or subclass) object. A compact ASCII string stores its
        // `length` bytes (ASCII, hence UTF-8) inline; otherwise the UTF-8 form cached in the
        // object (valid while it lives) is read from it where verified, or CPython returns it
        // (creating the cache) or NULL with an exception set.
        let text = unsafe {
            let bytes = if ffi::PyUnicode_IS_COMPACT_ASCII(ptr) != 0 {
                let data = ffi::PyUnicode_DATA(ptr).cast::<u8>();
                std::slice::from_raw_parts(data, ffi::PyUnicode_GET_LENGTH(ptr) as usize)
            } else if let Some(cached) = cached_utf8(ptr) {
                cached
            } else {
                let mut size: ffi::Py_ssize_t = 0;
                let data = ffi::PyUnicode_AsUTF8AndSize(ptr, &mut size);
                if data.is_null() {
                    return self.str_failure();
                }
                std::slice::from_raw_parts(data.cast::<u8>(), size as usize)
            };
            std::str::from_utf8_unchecked(bytes)
        };
        encode::write_str(&mut self.out, text);
        Ok(())
    }

    /// A str CPython could not give as UTF-8: lone surrogates (`UnicodeEncodeError`), or another
    /// error passed on. The `UnicodeEncodeError` is cleared without being fetched: a fetched
    /// error dropped here would hold Python references that `encode`'s C entry point (which runs
    /// without PyO3's attachment count, `call.rs`) could only queue for later release.
    #[cold]
    fn str_failure(&mut self) -> Walked {
        // SAFETY: an exception is set (CPython returned NULL); the GIL is held.
        let surrogates = unsafe { ffi::PyErr_ExceptionMatches(ffi::PyExc_UnicodeEncodeError) } != 0;
        if surrogates {
            // SAFETY: as above.
            unsafe { ffi::PyErr_Clear() };
            self.fail(Failure::Surrogates)
        } else {
            self.fail(Failure::Python(PyErr::fetch(self.py)))
        }
    }

    #[inline]
    unsafe fn int(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        // SAFETY: `ptr` is a live int (or subclass).
        match unsafe { small_int(ptr) } {
            Some(value) => {
                encode::write_i64(&mut self.out, value);
                Ok(())
            }
            None => self.int_slow(ptr),
        }
    }

    /// `int` beyond the direct path: through the C API, any size.
    #[inline(never)]
    fn int_slow(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        let mut overflow = 0;
        // SAFETY: `ptr` is a live int (or subclass): no `__index__` call, no Python code runs.
        let value = unsafe { ffi::PyLong_AsLongLongAndOverflow(ptr, &mut overflow) };
        if overflow == 0 {
            if value == -1 && PyErr::occurred(self.py) {
                return self.fail(Failure::Python(PyErr::fetch(self.py)));
            }
            encode::write_i64(&mut self.out, value);
            return Ok(());
        }
        self.bigint(ptr)
    }

    #[cold]
    fn bigint(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        // SAFETY: `ptr` is a live int (or subclass).
        let obj = unsafe { Borrowed::from_ptr(self.py, ptr) };
        match obj.extract::<BigInt>() {
            Ok(big) if digits::exceeds_limit(&big) => self.fail(Failure::LongInt),
            Ok(big) => {
                encode::write_bigint(&mut self.out, &big);
                Ok(())
            }
            Err(err) => self.fail(Failure::Python(err)),
        }
    }

    fn enter(&mut self) -> Walked {
        self.depth += 1;
        if self.depth > MAX_CONTAINER_DEPTH {
            return self.fail(Failure::Recursion);
        }
        Ok(())
    }

    unsafe fn dict(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        self.enter()?;
        // SAFETY: every dict starts with `PyDictObject`, whose `ma_used` is what the public
        // `PyDict_GET_SIZE` reads. An empty one skips the set-up of the member loop.
        if unsafe { (*ptr.cast::<ffi::PyDictObject>()).ma_used } == 0 {
            self.out.extend_from_slice(b"{}");
            self.depth -= 1;
            return Ok(());
        }
        self.out.push(b'{');
        // SAFETY: `ptr` is a live dict (or subclass) that nothing mutates during the walk; both
        // iterations hand out borrowed references that live as long as the dict. Every dict
        // starts with `PyDictObject`, whose `ma_used` is what the public `PyDict_GET_SIZE` reads.
        unsafe {
            if let Some(entries) = dict_entries(ptr) {
                self.table_entries(entries)?;
            } else {
                let mut pos: ffi::Py_ssize_t = 0;
                let mut key: *mut ffi::PyObject = std::ptr::null_mut();
                let mut value: *mut ffi::PyObject = std::ptr::null_mut();
                // Exactly `len` calls: the call that would find the end is saved (a fifth of the
                // calls on small dicts); the dict cannot change, so it has `len` entries.
                // Each entry is fetched one ahead and its value's header prefetched, so the
                // load of its type overlaps the writing of the member before it (the walk of a
                // corpus larger than the cache waits on those loads).
                let len = (*ptr.cast::<ffi::PyDictObject>()).ma_used;
                let mut more =
                    len > 0 && ffi::PyDict_Next(ptr, &mut pos, &mut key, &mut value) != 0;
                let mut i = 0;
                while more {
                    let (this_key, this_value) = (key, value);
                    i += 1;
                    more = i < len && ffi::PyDict_Next(ptr, &mut pos, &mut key, &mut value) != 0;
                    if more {
                        prefetch(value);
                    }
                    self.entry(i == 1, this_key, this_value)?;
                }
            }
        }
        self.out.push(b'}');
        self.depth -= 1;
        Ok(())
    }

    /// The members of a dict read from its entry table. The headers of the first `AHEAD` values
    /// are asked for at once, then one more `AHEAD` members ahead of the one written, so their
    /// loads overlap; the keys of a unicode-kind table are known to be exact `str` without
    /// loading their type.
    #[inline(always)]
    unsafe fn table_entries(&mut self, mut entries: Entries) -> Walked {
        let str_keys = entries.str_keys();
        let mut first = true;
        entries.first_values(AHEAD, prefetch);
        while let Some((key, value)) = entries.next() {
            prefetch(entries.peek_value_at(AHEAD - 1));
            // SAFETY: borrowed references from the dict being walked (see `dict`).
            unsafe {
                if str_keys {
                    self.str_entry(first, key, value)?;
                } else {
                    self.entry(first, key, value)?;
                }
            }
            first = false;
        }
        Ok(())
    }

    /// One `"key":value` member whose key is an exact `str`.
    #[inline(always)]
    unsafe fn str_entry(
        &mut self,
        first: bool,
        key: *mut ffi::PyObject,
        value: *mut ffi::PyObject,
    ) -> Walked {
        // SAFETY: as in `entry`.
        unsafe {
            self.out.reserve(keys::WRITE_ROOM);
            let len = self.out.len();
            let written = keys::write(key, first, self.out.as_mut_ptr().add(len));
            if written != 0 {
                self.out.set_len(len + written);
            } else {
                self.key_uncached(first, key)?;
            }
        }
        self.any(value)
    }

    /// One `"key":value` member of an object.
    unsafe fn entry(
        &mut self,
        first: bool,
        key: *mut ffi::PyObject,
        value: *mut ffi::PyObject,
    ) -> Walked {
        // SAFETY: `key` and `value` are live borrowed references from the dict being walked;
        // `keys::write` gets `WRITE_ROOM` bytes of spare capacity and writes no more than that,
        // and the length it returns counts bytes it wrote.
        unsafe {
            if ffi::Py_TYPE(key) == addr_of_mut!(ffi::PyUnicode_Type) {
                self.out.reserve(keys::WRITE_ROOM);
                let len = self.out.len();
                let written = keys::write(key, first, self.out.as_mut_ptr().add(len));
                if written != 0 {
                    self.out.set_len(len + written);
                    return self.any(value);
                }
            }
            self.key_uncached(first, key)?;
        }
        self.any(value)
    }

    /// `,"key":` (no comma when `first`) for a key the cache does not hold: any `str`.
    #[inline(never)]
    unsafe fn key_uncached(&mut self, first: bool, key: *mut ffi::PyObject) -> Walked {
        if !first {
            self.out.push(b',');
        }
        // SAFETY: `key` is a live borrowed reference from the dict being walked.
        unsafe {
            if ffi::PyUnicode_Check(key) == 0 {
                return self.fail(Failure::DictKey);
            }
            self.str(key)?;
        }
        self.out.push(b':');
        Ok(())
    }

    unsafe fn list(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        self.enter()?;
        // SAFETY: `ptr` is a live list that nothing resizes during the walk, so every index
        // below its size holds a live borrowed item.
        unsafe {
            let len = ffi::PyList_GET_SIZE(ptr) as usize;
            if len == 0 {
                self.out.extend_from_slice(b"[]");
                self.depth -= 1;
                return Ok(());
            }
            self.out.push(b'[');
            let items = (*ptr.cast::<ffi::PyListObject>()).ob_item;
            // The first `AHEAD` items' headers at once, then one `AHEAD` items ahead (see
            // `AHEAD`); past the end, the last item again: no branch on the list's length (see
            // `Entries::first_values`).
            let last = len - 1;
            for i in 0..AHEAD {
                prefetch(*items.add(i.min(last)));
            }
            for i in 0..len {
                if i > 0 {
                    self.out.push(b',');
                }
                prefetch(*items.add((i + AHEAD).min(last)));
                self.any(*items.add(i))?;
            }
        }
        self.out.push(b']');
        self.depth -= 1;
        Ok(())
    }

    unsafe fn tuple(&mut self, ptr: *mut ffi::PyObject) -> Walked {
        self.enter()?;
        self.out.push(b'[');
        // SAFETY: `ptr` is a live tuple (immutable); every index below its size holds an item.
        unsafe {
            for i in 0..ffi::PyTuple_GET_SIZE(ptr) {
                if i > 0 {
                    self.out.push(b',');
                }
                self.any(ffi::PyTuple_GET_ITEM(ptr, i))?;
            }
        }
        self.out.push(b']');
        self.depth -= 1;
        Ok(())
    }
}

/// Dict values and list items whose headers are asked for ahead of the one being written. On a
/// corpus larger than the caches every value's header is a miss; asking for one member ahead
/// (before) left each load little time to arrive and started the first ones of a container
/// only as it was reached. Four at once: `fresh7` 0.87 -> 0.83 of orjson's CPU time (3.13, the
/// builds side by side); 2 and 8 were between the two (`benches/README.md`).
///
/// Asking for more did not pay on `fresh7` in allocation order, where pymalloc puts the objects of
/// consecutive messages side by side (s27, 3.13, `--fresh 7`, ratio to orjson, base 0.85-0.88): a
/// breadth-first pass over the message before the walk, prefetching every header of a level, then
/// every entry table and item array, then the next level's headers, 0.94-0.97 (its misses moved
/// into the pass, none went away; +0.2-0.5 us/msg on 100 messages in the cache); prefetching, two
/// members ahead, the entry table or item array of a nested dict or list, no change (0.83-0.89)
/// for 3-6 % more instructions. Both helped only when the same messages were walked in shuffled
/// order (0.82 -> 0.75 and 0.76): misses with no neighbours already on their way.
const AHEAD: usize = 4;

/// Cache lines asked for per value: the one holding its header and the four after it.
///
/// A value's fields often run past its first line (a `str`'s `state` and UTF-8 pointer sit 32-56
/// bytes in, pymalloc places objects at any 16-byte offset of a line, and a text continues into the
/// next lines), and the objects made with it (siblings, children, a dict's keys object, a list's
/// items) were probably allocated close by in the same pools: the lines after a header are often
/// the next ones the walk needs. Asked for with the header, their misses are in flight together
/// instead of one after another. `fresh7` (larger than the caches; 3.12, builds side by side, CPU
/// medians x orjson): the header's line alone 0.81-0.88, +64 0.80-0.87, +256 0.75-0.83, five lines
/// 0.66-0.74, eight 0.68-0.72; walked in a shuffled order (`--shuffle`) 0.77-0.82 -> 0.61-0.76 with
/// five. Each line is one more instruction (fresh7 9,041 -> 9,648 per message); `small` (in the
/// caches) ~3 % slower best time with five, ~10 % with eight (`benches/README.md`).
/// A line past the end of an allocation is only a wasted hint: a prefetch never faults.
const SPAN_LINES: usize = 5;

/// Ask the CPU to bring the cache line holding `obj`'s header (its type, and for most scalars their
/// value) into the cache, and the `SPAN_LINES - 1` lines after it: hints only, they never fault.
#[inline(always)]
fn prefetch(obj: *mut ffi::PyObject) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..SPAN_LINES {
        let at = obj.cast::<i8>().wrapping_add(line * 64);
        // SAFETY: a prefetch reads nothing architecturally and never faults, whatever the address.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(at);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = obj;
}
