//! Python `str` objects from valid UTF-8, made the way CPython stores them: the narrowest kind
//! (1, 2 or 4 bytes per character) read off the bytes in one SIMD pass, then one filling pass;
//! ASCII text is a single copy.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// A Python `str`, through the ASCII fast path when it applies.
pub(super) fn new_str<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    let ascii = if s.len() >= BIG_STR {
        big_ascii(py, s.as_bytes())
    } else if s.is_ascii() {
        // SAFETY: `s` was just checked to be ASCII only.
        Some(unsafe { jiter::pystring_ascii_new(py, s) })
    } else {
        None
    };
    ascii
        .or_else(|| utf8_str(py, s))
        .unwrap_or_else(|| PyString::new(py, s))
}

/// The `str` of `s`, or the `MemoryError` of its allocation (`PyString::new` panics instead),
/// for the few strings of the decode path that are not built by `new_str`.
pub(crate) fn str_or_err<'py>(py: Python<'py>, s: &str) -> PyResult<Bound<'py, PyString>> {
    let len = ffi::Py_ssize_t::try_from(s.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err(()))?;
    // SAFETY: `s` is valid UTF-8 of `len` bytes; the call returns a new reference or NULL with
    // the exception set, which `from_owned_ptr_or_err` takes.
    unsafe {
        let ptr = ffi::PyUnicode_FromStringAndSize(s.as_ptr().cast(), len);
        Ok(Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked())
    }
}

/// The `bytes` of `b`, or the `MemoryError` of its allocation (`PyBytes::new` panics instead).
pub(crate) fn bytes_or_err<'py>(py: Python<'py>, b: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let len = ffi::Py_ssize_t::try_from(b.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err(()))?;
    // SAFETY: as in `str_or_err`: `b` holds `len` bytes, which the call copies.
    unsafe {
        let ptr = ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), len);
        Ok(Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked())
    }
}

/// The `str` of `s` (not all ASCII) made the way CPython stores it: the narrowest kind that
/// holds its largest character, read off the UTF-8 lead bytes, then filled in one decoding pass
/// (`None` if the allocation failed: the caller then tries `PyString::new`).
fn utf8_str<'py>(py: Python<'py>, s: &str) -> Option<Bound<'py, PyString>> {
    let bytes = s.as_bytes();
    let (chars, top) = shape(bytes);
    // 4-byte sequences encode U+10000 and up, 3-byte ones U+0800 and up, 2-byte ones with a lead
    // of C4 or more U+0100 and up; leads C2 and C3 alone mean a Latin-1 string
    let maxchar: u32 = match top {
        0xF0.. => 0x10_FFFF,
        0xE0.. => 0xFFFF,
        0xC4.. => 0x7FF,
        _ => 0xFF,
    };
    let size = isize::try_from(chars).ok()?;
    // SAFETY: `PyUnicode_New` returns a new reference or null; its data holds `chars` units of
    // the kind `maxchar` selects (1, 2 or 4 bytes), each written once below, as `decode_into`
    // writes exactly one unit per character; the values fit the kind by the choice above.
    unsafe {
        let string = new_unicode(py, size, maxchar)?;
        let data = ffi::PyUnicode_DATA(string.as_ptr());
        match maxchar {
            0xFF => decode_into(bytes, data.cast::<u8>()),
            0x10_FFFF => decode_into(bytes, data.cast::<u32>()),
            _ => decode_into(bytes, data.cast::<u16>()),
        }
        Some(string.cast_into_unchecked())
    }
}

/// The number of characters of valid UTF-8 `bytes` and its largest byte (which tells the largest
/// character's range): every character has exactly one byte that is not a continuation byte
/// (0x80..=0xBF). Sixteen bytes at a time on x86_64 (the byte loop is not vectorised).
fn shape(bytes: &[u8]) -> (usize, u8) {
    #[cfg(target_arch = "x86_64")]
    let (chars, top, done) = sse2::shape_16(bytes);
    #[cfg(not(target_arch = "x86_64"))]
    let (chars, top, done) = (0, 0, 0);
    bytes[done..].iter().fold((chars, top), |(chars, top), &b| {
        (chars + usize::from((b as i8) >= -0x40), top.max(b))
    })
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_sad_epu8, _mm_set1_epi8,
        _mm_setzero_si128, _mm_storeu_si128, _mm_sub_epi8,
    };

    /// [`super::shape`] of the whole 16-byte blocks of `bytes`: characters, largest byte, and
    /// how many bytes that covers (the rest is left to the caller).
    pub(super) fn shape_16(bytes: &[u8]) -> (usize, u8, usize) {
        let blocks = bytes.len() / 16;
        let mut chars = 0usize;
        // SAFETY: SSE2 is part of every x86_64 target; each unaligned load reads
        // `bytes[16 * b..16 * b + 16]`, inside `bytes` as `b < blocks`; the stores write
        // 16-byte local arrays.
        unsafe {
            let mut top = _mm_setzero_si128();
            let mut b = 0;
            while b < blocks {
                // per-byte counters of 8 bits: summed into `chars` at least every 255 blocks
                let mut counts = _mm_setzero_si128();
                let end = blocks.min(b + 255);
                while b < end {
                    let x = _mm_loadu_si128(bytes.as_ptr().add(16 * b).cast::<__m128i>());
                    // a byte that is not a continuation is, as a signed byte, above -0x41;
                    // the comparison gives -1 for it, so subtracting counts it
                    let lead = _mm_cmpgt_epi8(x, _mm_set1_epi8(-0x41));
                    counts = _mm_sub_epi8(counts, lead);
                    top = _mm_max_epu8(top, x);
                    b += 1;
                }
                let mut sums = [0u64; 2];
                let summed = _mm_sad_epu8(counts, _mm_setzero_si128());
                _mm_storeu_si128(sums.as_mut_ptr().cast::<__m128i>(), summed);
                chars += (sums[0] + sums[1]) as usize;
            }
            let mut tops = [0u8; 16];
            _mm_storeu_si128(tops.as_mut_ptr().cast::<__m128i>(), top);
            (chars, tops.into_iter().max().unwrap_or(0), blocks * 16)
        }
    }
}

/// A new, unfilled `str` of `size` characters up to `maxchar`, or `None` if the allocation failed.
/// The `MemoryError` is then taken: the caller falls back to another way of building the string,
/// which raises (panics) in turn if memory is still short, and must not succeed with an exception
/// left set.
///
/// # Safety
/// The caller must fill the string's `size` characters before it is used.
unsafe fn new_unicode(py: Python<'_>, size: isize, maxchar: u32) -> Option<Bound<'_, PyAny>> {
    // SAFETY: `PyUnicode_New` returns a new reference or NULL with an exception set.
    let string = unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyUnicode_New(size, maxchar)) };
    if string.is_none() {
        drop(PyErr::take(py));
    }
    string
}

/// A unit of a CPython string's data: 1, 2 or 4 bytes per character.
trait Unit: Copy {
    /// The unit of character `c` (which fits, by the caller's choice of kind).
    fn of(c: u32) -> Self;

    /// Write the eight ASCII bytes of the little-endian `word` as eight units from `out`.
    ///
    /// # Safety
    /// `out` must be valid for writing eight units.
    unsafe fn ascii8(out: *mut Self, word: u64);
}

impl Unit for u8 {
    fn of(c: u32) -> Self {
        c as u8
    }

    unsafe fn ascii8(out: *mut Self, word: u64) {
        // SAFETY: eight bytes from `out` are writable (the caller's contract).
        unsafe { out.cast::<u64>().write_unaligned(word.to_le()) }
    }
}

impl Unit for u16 {
    fn of(c: u32) -> Self {
        c as u16
    }

    unsafe fn ascii8(out: *mut Self, word: u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of every x86_64 target; the store writes the 16 bytes of eight
        // units from `out` (the caller's contract).
        unsafe {
            use std::arch::x86_64::{_mm_cvtsi64_si128, _mm_setzero_si128};
            use std::arch::x86_64::{_mm_storeu_si128, _mm_unpacklo_epi8};
            let x = _mm_cvtsi64_si128(word as i64);
            _mm_storeu_si128(out.cast(), _mm_unpacklo_epi8(x, _mm_setzero_si128()));
        }
        #[cfg(not(target_arch = "x86_64"))]
        for (j, b) in word.to_le_bytes().into_iter().enumerate() {
            // SAFETY: as above, `j < 8`.
            unsafe { out.add(j).write(u16::from(b)) };
        }
    }
}

impl Unit for u32 {
    fn of(c: u32) -> Self {
        c
    }

    unsafe fn ascii8(out: *mut Self, word: u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of every x86_64 target; the two stores write the 32 bytes of
        // eight units from `out` (the caller's contract).
        unsafe {
            use std::arch::x86_64::{_mm_cvtsi64_si128, _mm_setzero_si128, _mm_storeu_si128};
            use std::arch::x86_64::{_mm_unpackhi_epi16, _mm_unpacklo_epi16, _mm_unpacklo_epi8};
            let zero = _mm_setzero_si128();
            let wide = _mm_unpacklo_epi8(_mm_cvtsi64_si128(word as i64), zero);
            _mm_storeu_si128(out.cast(), _mm_unpacklo_epi16(wide, zero));
            _mm_storeu_si128(out.add(4).cast(), _mm_unpackhi_epi16(wide, zero));
        }
        #[cfg(not(target_arch = "x86_64"))]
        for (j, b) in word.to_le_bytes().into_iter().enumerate() {
            // SAFETY: as above, `j < 8`.
            unsafe { out.add(j).write(u32::from(b)) };
        }
    }
}

/// Write the code points of valid UTF-8 `s` to `out`, one unit per character; runs of ASCII go
/// eight bytes at a time (eight units written by one or two SIMD stores).
///
/// # Safety
/// `out` must be valid for writing as many `T` as `s` has characters.
unsafe fn decode_into<T: Unit>(s: &[u8], out: *mut T) {
    let (mut i, mut k) = (0, 0);
    let tail = |at: usize| u32::from(s[at] & 0x3F);
    while i < s.len() {
        if let Some(chunk) = s.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let word = u64::from_le_bytes(word);
            let high = word & 0x8080_8080_8080_8080;
            if high == 0 {
                // SAFETY: eight ASCII bytes are eight characters, all still unwritten.
                unsafe { T::ascii8(out.add(k), word) };
                i += 8;
                k += 8;
                continue;
            }
            // the ASCII bytes before the first non-ASCII one are written at once, so mixed
            // text does not retry the block after each character
            let ascii = (high.trailing_zeros() / 8) as usize;
            for (j, b) in word.to_le_bytes()[..ascii].iter().enumerate() {
                // SAFETY: ASCII bytes are one character each, all still unwritten.
                unsafe { out.add(k + j).write(T::of(u32::from(*b))) };
            }
            i += ascii;
            k += ascii;
        }
        let b = s[i];
        let (c, len) = match b {
            0..=0x7F => (u32::from(b), 1),
            0xC0..=0xDF => ((u32::from(b & 0x1F) << 6) | tail(i + 1), 2),
            0xE0..=0xEF => (
                (u32::from(b & 0x0F) << 12) | (tail(i + 1) << 6) | tail(i + 2),
                3,
            ),
            _ => (
                (u32::from(b & 0x07) << 18)
                    | (tail(i + 1) << 12)
                    | (tail(i + 2) << 6)
                    | tail(i + 3),
                4,
            ),
        };
        // SAFETY: `k` counts the characters written so far, fewer than `s` has (the caller's
        // bound) since one more starts at `i`.
        unsafe { out.add(k).write(T::of(c)) };
        k += 1;
        i += len;
    }
}

/// Strings from this length on are built by [`big_ascii`] first.
const BIG_STR: usize = 1 << 16;

/// The `str` of a long `s` if it is ASCII (else `None`): checked and copied block by block into
/// the new string, so each block is read from memory once (the copy finds it in cache), and
/// with huge pages for a very long one.
fn big_ascii<'py>(py: Python<'py>, s: &[u8]) -> Option<Bound<'py, PyString>> {
    const BLOCK: usize = 1 << 14;
    if !s[..BLOCK.min(s.len())].is_ascii() {
        return None;
    }
    let len = isize::try_from(s.len()).ok()?;
    // SAFETY: `new_unicode` gives a new string or `None` (the caller then tries another way);
    // with a maximum character of 127 it is a compact ASCII string whose
    // data is `s.len()` writable bytes (then its terminating NUL, written by `PyUnicode_New`).
    // Only ASCII blocks are copied in; if a block is not, the string (never exposed, its
    // contents never read) is dropped.
    unsafe {
        let string = new_unicode(py, len, 127)?;
        let data = ffi::PyUnicode_DATA(string.as_ptr()).cast::<u8>();
        if s.len() >= crate::pages::HUGE_FROM {
            crate::pages::advise_huge(data, s.len());
        }
        for (k, block) in s.chunks(BLOCK).enumerate() {
            if !block.is_ascii() {
                return None;
            }
            std::ptr::copy_nonoverlapping(block.as_ptr(), data.add(k * BLOCK), block.len());
        }
        Some(string.cast_into_unchecked())
    }
}
