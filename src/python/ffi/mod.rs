//! Every use of CPython internals by the native core, and the switch between them and the public C
//! API. "Internal" means outside CPython's documented C API: functions named with a leading
//! underscore (`_PyBytes_Resize`) and object layouts the documentation does not describe (the
//! entry table of a dict, the digits of an int). Documented macros and functions over the
//! non-limited API (`PyUnicode_DATA`, `PyList_GET_ITEM`, `PyDict_Next`, ...) are public and used
//! where they are needed.
//!
//! Each internal use is compiled only for the CPython minor versions it was verified on (the
//! `Py_3_*` cfgs of `build.rs`: the extension is built per interpreter, not for abi3):
//! - `dict_table`: the entry table of a dict, the same layout in 3.11, 3.12 and 3.13 with the GIL
//!   (verified on 3.11.7, 3.12.1, 3.13.0);
//! - `str_utf8`: the UTF-8 cache of a non-ASCII `str` of 3.11, 3.12 and 3.13 with the GIL (3.11
//!   with its `wstr` field; verified on 3.11.7, 3.12.1, 3.13.0);
//! - `int311`: the int digits of CPython 3.11 (verified on 3.11.7);
//! - `compact_int`: `PyUnstable_Long_IsCompact`/`PyUnstable_Long_CompactValue`, the documented
//!   unstable API of 3.12 and 3.13 for one-digit ints, written out from their `static inline`
//!   definitions (verified on 3.12.1, 3.13.0);
//! - `bytes`: `_PyBytes_Resize`, unchanged from 3.11 to 3.13 (verified on 3.11.7, 3.12.1, 3.13.0), and
//!   a line's `bytes` object ended in place by lowering its size (`settle_bytes`).
//!
//! At module import (`init`) each is switched on only when the running interpreter is CPython
//! (with the expected int digits, for the int paths) and `MCPFRAME_PUBLIC_ONLY` is unset (or `0`, `false`, `no`, `off`,
//! empty). Otherwise the callers take the public path: `PyDict_Next`, `PyUnicode_AsUTF8AndSize`,
//! `PyLong_AsLongLongAndOverflow`,
//! and a line built in a Rust buffer that is copied into its `bytes` object once. `paths` names the
//! path each one takes (`_core._ffi_paths()`), so a test can see the switch take effect.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod bytes;
#[cfg(all(Py_3_12, not(Py_3_14), not(PyPy), not(GraalPy)))]
mod compact_int;
#[cfg(not(all(Py_3_12, not(Py_3_14), not(PyPy), not(GraalPy))))]
mod compact_int {
    //! Stand-in where the unstable int API is not verified: no direct path, ever.

    use pyo3::ffi;

    /// No direct path on this interpreter.
    pub(crate) unsafe fn small_int(_int: *mut ffi::PyObject) -> Option<i64> {
        None
    }

    /// This build has no unstable int API to enable.
    pub(crate) const COMPILED: bool = false;
}
#[cfg(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED)))]
mod dict_table;
#[cfg(not(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED))))]
mod dict_table {
    //! Stand-in where the dict layout is not verified: no direct path, ever.

    use pyo3::ffi;

    /// Never constructed: `Entries::of` always answers `None` here.
    pub(crate) enum Entries {}

    impl Entries {
        /// No direct path on this interpreter.
        pub(crate) unsafe fn of(_dict: *mut ffi::PyObject) -> Option<Entries> {
            None
        }

        /// Unreachable (no value exists).
        pub(crate) fn str_keys(&self) -> bool {
            match *self {}
        }

        /// Unreachable (no value exists).
        pub(crate) fn first_values(&self, _count: usize, _hint: impl FnMut(*mut ffi::PyObject)) {
            match *self {}
        }

        /// Unreachable (no value exists).
        pub(crate) fn peek_value_at(&self, _ahead: usize) -> *mut ffi::PyObject {
            match *self {}
        }
    }

    impl Iterator for Entries {
        type Item = (*mut ffi::PyObject, *mut ffi::PyObject);

        fn next(&mut self) -> Option<Self::Item> {
            match *self {}
        }
    }

    /// This build has no layout to enable.
    pub(crate) const COMPILED: bool = false;
}
#[cfg(all(Py_3_11, not(Py_3_12), not(PyPy), not(GraalPy)))]
mod int311;
#[cfg(not(all(Py_3_11, not(Py_3_12), not(PyPy), not(GraalPy))))]
mod int311 {
    //! Stand-in where the 3.11 int layout does not apply: no direct path, ever.

    use pyo3::ffi;

    /// No direct path on this interpreter.
    pub(crate) unsafe fn small_int(_int: *mut ffi::PyObject) -> Option<i64> {
        None
    }

    /// This build has no layout to enable.
    pub(crate) const COMPILED: bool = false;
}

#[cfg(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED)))]
mod str_utf8;
#[cfg(not(all(Py_3_11, not(Py_3_14), not(PyPy), not(GraalPy), not(Py_GIL_DISABLED))))]
mod str_utf8 {
    //! Stand-in where the unicode layout is not verified: no direct path, ever.

    use pyo3::ffi;

    /// No direct path on this interpreter.
    pub(crate) unsafe fn cached_utf8<'a>(_text: *mut ffi::PyObject) -> Option<&'a [u8]> {
        None
    }

    /// This build has no layout to enable.
    pub(crate) const COMPILED: bool = false;
}

pub(crate) use dict_table::Entries;

/// The environment variable that forces every public path (read once, at module import).
pub(crate) const PUBLIC_ONLY_VAR: &str = "MCPFRAME_PUBLIC_ONLY";

/// Whether dict entry tables are read directly (set once by `init`).
static DICT_TABLE: AtomicBool = AtomicBool::new(false);
/// Whether the UTF-8 cache of a `str` is read from the object (set once by `init`).
static STR_UTF8: AtomicBool = AtomicBool::new(false);
/// Whether ints are read from the 3.11 digits (set once by `init`).
static INT311: AtomicBool = AtomicBool::new(false);
/// Whether ints are read with the unstable compact-int API of 3.12/3.13 (set once by `init`).
static COMPACT_INT: AtomicBool = AtomicBool::new(false);
/// Whether large lines are grown in place with `_PyBytes_Resize` (set once by `init`).
static BYTES_RESIZE: AtomicBool = AtomicBool::new(false);

/// Whether `value` (of `MCPFRAME_PUBLIC_ONLY`) asks for the public paths: any value but the
/// usual spellings of "off" does (the same rule as the Python side's `_unstable`).
fn asks_public_only(value: &str) -> bool {
    let value = value.trim().to_ascii_lowercase();
    !matches!(value.as_str(), "" | "0" | "false" | "no" | "off")
}

/// Decide, once, which internal paths this process may take (called at module import).
pub(crate) fn init(py: Python<'_>) -> PyResult<()> {
    let public_only = std::env::var(PUBLIC_ONLY_VAR).is_ok_and(|value| asks_public_only(&value));
    let sys = py.import("sys")?;
    let name: String = sys.getattr("implementation")?.getattr("name")?.extract()?;
    let int_info = sys.getattr("int_info")?;
    let bits: u32 = int_info.getattr("bits_per_digit")?.extract()?;
    let digit_size: u32 = int_info.getattr("sizeof_digit")?.extract()?;
    let cpython = name == "cpython" && !public_only;
    // The cfgs already pin the minor version the extension was built for; the import machinery
    // refuses to load it into another one, so only the digit size remains to check.
    DICT_TABLE.store(cpython && dict_table::COMPILED, Ordering::Relaxed);
    STR_UTF8.store(cpython && str_utf8::COMPILED, Ordering::Relaxed);
    let int311 = cpython && int311::COMPILED && bits == 30 && digit_size == 4;
    INT311.store(int311, Ordering::Relaxed);
    // The compact value is one digit read as a `uint32_t`: only with 4-byte digits.
    let compact = cpython && compact_int::COMPILED && digit_size == 4;
    COMPACT_INT.store(compact, Ordering::Relaxed);
    BYTES_RESIZE.store(cpython && bytes::COMPILED, Ordering::Relaxed);
    Ok(())
}

/// `_core._ffi_paths()`: the path each internal use takes in this process, as
/// `{"dict": ..., "str": ..., "int": ..., "bytes": ...}`, each value starting with `private:` or `public:`.
#[pyfunction]
fn _ffi_paths(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let pick = |private: bool, yes: &'static str, no: &'static str| if private { yes } else { no };
    let paths = PyDict::new(py);
    let dict = pick(
        DICT_TABLE.load(Ordering::Relaxed),
        "private:dict-entry-table",
        "public:PyDict_Next",
    );
    paths.set_item("dict", dict)?;
    let str_path = pick(
        STR_UTF8.load(Ordering::Relaxed),
        "private:unicode-utf8-cache",
        "public:PyUnicode_AsUTF8AndSize",
    );
    paths.set_item("str", str_path)?;
    let int = if COMPACT_INT.load(Ordering::Relaxed) {
        "private:PyUnstable_Long_CompactValue"
    } else {
        pick(
            INT311.load(Ordering::Relaxed),
            "private:cpython311-int-digits",
            "public:PyLong_AsLongLongAndOverflow",
        )
    };
    paths.set_item("int", int)?;
    let resize = BYTES_RESIZE.load(Ordering::Relaxed);
    let bytes = pick(resize, "private:_PyBytes_Resize", "public:copy-into-bytes");
    paths.set_item("bytes", bytes)?;
    Ok(paths)
}

/// Add `_ffi_paths` to the module (after `init`). Set as an attribute, not with `add_function`,
/// which would also list it in `__all__`: the contract's names are the public ones only.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.setattr("_ffi_paths", wrap_pyfunction!(_ffi_paths, m)?)
}

/// The live `(key, value)` entries of the dict `dict` read straight from its table, or `None`
/// when the caller must use `PyDict_Next` (public path, or a table the direct path skips).
///
/// # Safety
/// `dict` must be a live `dict` (or subclass) instance that is not mutated while the returned
/// iterator is used, with the GIL held.
#[inline]
pub(crate) unsafe fn dict_entries(dict: *mut ffi::PyObject) -> Option<Entries> {
    if !DICT_TABLE.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: the layout was verified for this interpreter (`init`); the caller's contract.
    unsafe { Entries::of(dict) }
}

/// The UTF-8 form cached in the `str` (or subclass) `text` that is not compact ASCII, read from
/// the object, or `None` when the caller must call `PyUnicode_AsUTF8AndSize` (public path, or no
/// cache yet).
///
/// # Safety
/// `text` must be a live `str` that is not compact ASCII, with the GIL held; the slice lives as
/// long as `text`.
#[inline]
pub(crate) unsafe fn cached_utf8<'a>(text: *mut ffi::PyObject) -> Option<&'a [u8]> {
    if !STR_UTF8.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: the layout was verified for this interpreter (`init`); the caller's contract.
    unsafe { str_utf8::cached_utf8(text) }
}

/// The value of the int (or subclass) `int` read from its digits when it is small, or `None`
/// when the caller must use `PyLong_AsLongLongAndOverflow`.
///
/// # Safety
/// `int` must be a live int object, with the GIL held.
#[inline(always)]
pub(crate) unsafe fn small_int(int: *mut ffi::PyObject) -> Option<i64> {
    // SAFETY: each path only where `init` verified it for this interpreter; the caller's contract.
    unsafe {
        if COMPACT_INT.load(Ordering::Relaxed) {
            return compact_int::small_int(int);
        }
        if !INT311.load(Ordering::Relaxed) {
            return None;
        }
        int311::small_int(int)
    }
}

/// Whether `resize_bytes` may be used (else a line is built in a Rust buffer and copied).
#[inline]
pub(crate) fn can_resize_bytes() -> bool {
    BYTES_RESIZE.load(Ordering::Relaxed)
}

/// Resize the `bytes` object `*bytes` to `size` bytes, in place when possible; `false` (and
/// `*bytes` NULL, the object released, `MemoryError` set) when memory ran out.
///
/// # Safety
/// `can_resize_bytes()` must be true; `*bytes` must be a `bytes` object with a reference count of
/// 1 that no Python code has seen; the GIL must be held.
#[inline]
pub(crate) unsafe fn resize_bytes(bytes: &mut *mut ffi::PyObject, size: ffi::Py_ssize_t) -> bool {
    // SAFETY: the caller's contract.
    unsafe { bytes::resize(bytes, size) }
}

/// End a line written into the `bytes` object `*bytes` (grown with `resize_bytes`): give it the size
/// `len`, in place when little is left over (its size lowered, a NUL written after the line: no
/// `realloc`, whose `mremap` of a large block costs fresh page faults on every later large line),
/// else shrunk with `resize_bytes`. `false` as `resize_bytes`'s.
///
/// # Safety
/// As `resize_bytes`; `len` is at most the object's size.
#[inline]
pub(crate) unsafe fn settle_bytes(bytes: &mut *mut ffi::PyObject, len: ffi::Py_ssize_t) -> bool {
    // SAFETY: the caller's contract.
    unsafe { bytes::settle(bytes, len) }
}
