//! `PyUnstable_Long_IsCompact` and `PyUnstable_Long_CompactValue` of CPython 3.12 and 3.13: the
//! documented unstable C API for reading an int that fits one digit without a call.
//!
//! Both are `static inline` functions of `cpython/longintrepr.h`, which a Rust extension cannot
//! call, so they are written out here as the headers of 3.12.1 and 3.13.0 define them (identical
//! in both): the object header is followed by `uintptr_t lv_tag` (digit count `<< 3`, sign in the
//! low two bits: 0 positive, 1 zero, 2 negative) and the `uint32_t` digits. Compiled only for
//! those minor versions; `ffi::init` also checks the digit size at run time.

use pyo3::ffi;

/// This build has the unstable int API (`ffi::init` still checks the digit size at run time).
pub(crate) const COMPILED: bool = true;

/// `_PyLong_NON_SIZE_BITS`: the low bits of `lv_tag` that are not the digit count.
const NON_SIZE_BITS: u32 = 3;
/// `_PyLong_SIGN_MASK`.
const SIGN_MASK: usize = 3;

/// `PyLongObject` of CPython 3.12 and 3.13, up to its first digit.
#[repr(C)]
struct LongObject {
    _ob_base: ffi::PyObject,
    lv_tag: usize,
    digit: u32,
}

/// The value of the int (or subclass) object `int` when it is compact (at most one digit), or
/// `None`.
///
/// # Safety
/// `int` must be a live int object, with the GIL held, on CPython 3.12 or 3.13 with 4-byte digits.
#[inline(always)]
pub(crate) unsafe fn small_int(int: *mut ffi::PyObject) -> Option<i64> {
    // SAFETY: on those versions (the caller's contract) every int starts with `LongObject`, and a
    // compact one (`PyUnstable_Long_IsCompact`) has its one digit in place (zero has one too).
    unsafe {
        let object = &*int.cast::<LongObject>();
        if object.lv_tag >= 2 << NON_SIZE_BITS {
            return None;
        }
        // `PyUnstable_Long_CompactValue`: sign (1, 0 or -1) times the digit.
        let sign = 1 - (object.lv_tag & SIGN_MASK) as i64;
        Some(sign * i64::from(object.digit))
    }
}
