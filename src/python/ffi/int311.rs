//! The int layout of CPython 3.11 the encoder reads directly, instead of calling
//! `PyLong_AsLongLongAndOverflow` per int. Compiled only for 3.11 (verified on 3.11.7) and used
//! only when `ffi::init` enabled it: the value of an int of at most two 30-bit digits
//! (`Include/cpython/longintrepr.h`). Larger ints are left to the public path.

use pyo3::ffi;

/// This build has the layout (`ffi::init` still checks the digit size at run time).
pub(crate) const COMPILED: bool = true;

/// Bits per digit of an int (`PYLONG_BITS_IN_DIGIT`; `ffi::init` checks it).
const DIGIT_BITS: u32 = 30;

/// The value of the int (or subclass) object `int` when it has at most two digits, or `None`.
///
/// # Safety
/// `int` must be a live int object, with the GIL held, on CPython 3.11 with 30-bit digits.
#[inline(always)]
pub(crate) unsafe fn small_int(int: *mut ffi::PyObject) -> Option<i64> {
    // SAFETY: on CPython 3.11 with 30-bit digits (the caller's contract) an int is a `PyVarObject`
    // whose `ob_size` is the signed count of `u32` digits stored right after the header.
    unsafe {
        let size = (*int.cast::<ffi::PyVarObject>()).ob_size;
        let digits = int
            .cast::<u8>()
            .add(std::mem::size_of::<ffi::PyVarObject>())
            .cast::<u32>();
        let magnitude = match size.unsigned_abs() {
            0 => 0,
            1 => i64::from(*digits),
            2 => i64::from(*digits) | i64::from(*digits.add(1)) << DIGIT_BITS,
            _ => return None,
        };
        Some(if size < 0 { -magnitude } else { magnitude })
    }
}
