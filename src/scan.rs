//! A validating JSON scanner that allocates nothing: it finds where a value (or a string, or a
//! number) ends and whether it is valid, following the JSON semantics of the core contract (RFC
//! 8259 grammar; no control characters in strings; no lone surrogate escapes; whitespace is space,
//! tab, CR and LF). The envelope scan walks the frame with it and skips payloads with it.
//!
//! Callers run it on text already known to be valid UTF-8, so bytes above 0x7F inside strings
//! are accepted as they are; outside strings they are invalid like any unexpected byte. An integer
//! literal longer than the contract's digit limit is refused too (see [`number_end`]).

use crate::digits::MAX_INT_DIGITS;

/// The scanned text is not valid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// The result of a scan step: usually the index just after what was scanned.
pub type Scan<T> = Result<T, Invalid>;

/// The deepest nesting [`skip_value`] follows: the contract's depth limit, which no valid frame
/// exceeds anywhere.
pub const STACK_BITS: usize = crate::depth::MAX_DEPTH;

/// The index of the first byte at or after `i` that is not JSON whitespace.
#[inline]
pub fn ws(d: &[u8], mut i: usize) -> usize {
    while let Some(&b) = d.get(i) {
        // one comparison for the usual case (compact JSON: no whitespace here at all), as every
        // JSON whitespace byte is at most a space
        if b > b' ' || !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
            break;
        }
        i += 1;
    }
    i
}

/// The index of the first byte at or after `i` that is not JSON whitespace, and that byte
/// (`None` at the end): [`ws`] and the read of what follows it in one step, so that the usual
/// case (compact JSON: no whitespace) checks the bounds and reads the byte once.
#[inline(always)]
pub fn ws_then(d: &[u8], i: usize) -> (usize, Option<u8>) {
    match d.get(i) {
        Some(&b) if b > b' ' => (i, Some(b)),
        _ => {
            let j = ws(d, i);
            (j, d.get(j).copied())
        }
    }
}

/// Byte-wise constant of a `u64` word.
const fn splat(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

const LOW: u64 = splat(0x01);
const HIGH: u64 = splat(0x80);

/// Flags (bit 7 of each byte) the bytes of `w` that are `"`, `\` or a control character. The
/// lowest flag is exact (borrows only run towards higher bytes), which is all the caller uses.
#[inline]
fn special(w: u64) -> u64 {
    let zero = |v: u64| v.wrapping_sub(LOW) & !v & HIGH;
    let control = w.wrapping_sub(splat(0x20)) & !w & HIGH;
    zero(w ^ splat(b'"')) | zero(w ^ splat(b'\\')) | control
}

/// The index of the first `"`, `\` or control byte at or after `i`, or `d.len()`.
#[inline]
fn next_special(d: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    return match sse2::next_special_16(d, i) {
        Ok(found) => found,
        Err(rest) => sse2::next_special_tail(d, rest),
    };
    #[cfg(not(target_arch = "x86_64"))]
    next_special_8(d, i)
}

/// [`next_special`] eight bytes at a time, then byte by byte.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline]
fn next_special_8(d: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = d.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let flags = special(u64::from_le_bytes(word));
        if flags != 0 {
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    next_special_bytes(d, i)
}

/// [`next_special`] byte by byte.
#[inline]
fn next_special_bytes(d: &[u8], mut i: usize) -> usize {
    while let Some(&b) = d.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_xor_si128,
    };

    /// Sets every byte of the sixteen at `d[i..]` that is `"`, `\` or a control byte.
    ///
    /// # Safety
    /// `d[i..i + 16]` must be inside `d`.
    #[inline(always)]
    unsafe fn flags(d: &[u8], i: usize) -> __m128i {
        // SSE2 is part of every x86_64 target; the unaligned load reads `d[i..i + 16]`.
        let x = _mm_loadu_si128(d.as_ptr().add(i).cast());
        // flipping bit 1 takes `"` (0x22) to 0x20 and keeps 0x00-0x1F among themselves, so
        // one unsigned `<= 0x20` test (min(y, 0x20) == y) finds both the quote and the controls
        let y = _mm_xor_si128(x, _mm_set1_epi8(0x02));
        let quote_or_control = _mm_cmpeq_epi8(_mm_min_epu8(y, _mm_set1_epi8(0x20)), y);
        let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        _mm_or_si128(quote_or_control, backslash)
    }

    /// The index of the first `"`, `\` or control byte at or after `i`, fewer than sixteen bytes
    /// before the end of `d`: one block read of the last sixteen bytes (the mask of those before
    /// `i` shifted out), where a loop read them eight at a time, then byte by byte (the strings
    /// near the end of every frame, the last payload values and the method of a notification,
    /// end there). Byte by byte only in a frame shorter than sixteen bytes.
    #[inline(always)]
    pub(super) fn next_special_tail(d: &[u8], i: usize) -> usize {
        let Some(base) = d.len().checked_sub(16) else {
            return super::next_special_bytes(d, i);
        };
        // `i` is past `base` (else the block search would have read on); nothing is left at or
        // after the end (`i` is returned then, as the byte loop returns it)
        debug_assert!(
            i > base,
            "the block search reads on while sixteen bytes are left"
        );
        let skip = i - base;
        if skip >= 16 {
            return i;
        }
        // SAFETY: `d[base..base + 16]` is the last sixteen bytes of `d`.
        let mask = unsafe { _mm_movemask_epi8(flags(d, base)) } as u32 >> skip;
        if mask != 0 {
            i + mask.trailing_zeros() as usize
        } else {
            d.len()
        }
    }

    /// The index of the first `"`, `\` or control byte at or after `i` found sixteen bytes at a
    /// time; else (`Err`) the index where fewer than sixteen bytes remain.
    #[inline]
    pub(super) fn next_special_16(d: &[u8], mut i: usize) -> Result<usize, usize> {
        // the first sixteen alone: most strings (keys, short values) end in them
        if i + 16 > d.len() {
            return Err(i);
        }
        // SAFETY: `d[i..i + 16]` is inside `d` by the test above.
        let mask = unsafe { _mm_movemask_epi8(flags(d, i)) };
        if mask != 0 {
            return Ok(i + mask.trailing_zeros() as usize);
        }
        i += 16;
        // then thirty-two at a time, one mask test per block, for the long ones
        while i + 32 <= d.len() {
            // SAFETY: both loads are inside `d[i..i + 32]`, inside `d` by the loop condition.
            let (low, high) = unsafe { (flags(d, i), flags(d, i + 16)) };
            // SAFETY: SSE2 is part of every x86_64 target.
            let any = unsafe { _mm_movemask_epi8(_mm_or_si128(low, high)) };
            if any != 0 {
                // SAFETY: as above.
                let low = unsafe { _mm_movemask_epi8(low) };
                if low != 0 {
                    return Ok(i + low.trailing_zeros() as usize);
                }
                // SAFETY: as above.
                let high = unsafe { _mm_movemask_epi8(high) };
                return Ok(i + 16 + high.trailing_zeros() as usize);
            }
            i += 32;
        }
        if i + 16 <= d.len() {
            // SAFETY: `d[i..i + 16]` is inside `d` by the test above.
            let mask = unsafe { _mm_movemask_epi8(flags(d, i)) };
            if mask != 0 {
                return Ok(i + mask.trailing_zeros() as usize);
            }
            i += 16;
        }
        Err(i)
    }
}

/// The end of a string whose opening quote is just before `i`: the index after its closing quote,
/// and whether it has an escape. Inlined for the common case (no escape before the closing quote).
#[inline(always)]
pub fn string_end(d: &[u8], i: usize) -> Scan<(usize, bool)> {
    let at = next_special(d, i);
    if d.get(at) == Some(&b'"') {
        return Ok((at + 1, false));
    }
    string_end_slow(d, at)
}

/// [`string_end`] from the first special byte at `i` that is not the closing quote.
#[inline(never)]
fn string_end_slow(d: &[u8], mut i: usize) -> Scan<(usize, bool)> {
    let mut escaped = false;
    loop {
        match d.get(i) {
            Some(b'"') => return Ok((i + 1, escaped)),
            Some(b'\\') => {
                escaped = true;
                i = next_special(d, escape_end(d, i + 1)?);
            }
            _ => return Err(Invalid),
        }
    }
}

/// The end of a string whose opening quote is just before `i`: the index after its closing quote.
/// [`string_end`] for the skip, which needs no escape flag: inlined whole, escapes included, so
/// that the skip loop makes no call (a call clobbers the SSE registers that hold the search's
/// constants, and the compiler reloaded them, with a shuffle of the other registers, after every
/// string, on the fast path too).
#[inline(always)]
fn string_skip(d: &[u8], i: usize) -> Scan<usize> {
    string_skip_at(d, next_special(d, i))
}

/// [`string_skip`] from the string's first `"`, `\` or control byte, at `i`.
#[inline(always)]
fn string_skip_at(d: &[u8], mut i: usize) -> Scan<usize> {
    loop {
        match d.get(i) {
            Some(b'"') => return Ok(i + 1),
            Some(b'\\') => i = next_special(d, escape_end(d, i + 1)?),
            _ => return Err(Invalid),
        }
    }
}

/// The end of an escape whose backslash is just before `i`.
#[inline(always)]
fn escape_end(d: &[u8], i: usize) -> Scan<usize> {
    match d.get(i) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 1),
        Some(b'u') => {
            let unit = hex4(d, i + 1)?;
            match unit {
                0xDC00..=0xDFFF => Err(Invalid),
                0xD800..=0xDBFF => {
                    if d.get(i + 5..i + 7) != Some(b"\\u") {
                        return Err(Invalid);
                    }
                    match hex4(d, i + 7)? {
                        0xDC00..=0xDFFF => Ok(i + 11),
                        _ => Err(Invalid),
                    }
                }
                _ => Ok(i + 5),
            }
        }
        _ => Err(Invalid),
    }
}

/// The value of the four hex digits at `i`.
#[inline(always)]
pub(crate) fn hex4(d: &[u8], i: usize) -> Scan<u32> {
    let digits = d.get(i..i + 4).ok_or(Invalid)?;
    let mut n = 0;
    for &c in digits {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err(Invalid),
        };
        n = n * 16 + u32::from(v);
    }
    Ok(n)
}

/// The index after the digits at or after `i`.
#[inline]
pub fn digits_end(d: &[u8], mut i: usize) -> usize {
    while d.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// At least one digit at `i`: the index after the run.
fn some_digits(d: &[u8], i: usize) -> Scan<usize> {
    let end = digits_end(d, i);
    if end == i {
        Err(Invalid)
    } else {
        Ok(end)
    }
}

/// The end of the number starting at `i`, and whether it is an integer (no fraction, no exponent).
/// A leading zero ends the integer part (`01` is then rejected by whatever follows it). An integer
/// of more than [`MAX_INT_DIGITS`] digits is refused like invalid JSON, so that no caller ever
/// builds one; the envelope scan then tells the two cases apart (see `crate::digits`), and the
/// common path pays a single comparison.
#[inline]
pub fn number_end(d: &[u8], i: usize) -> Scan<(usize, bool)> {
    match number_shape(d, i)? {
        (_, Some(digits)) if digits > MAX_INT_DIGITS => Err(Invalid),
        (end, digits) => Ok((end, digits.is_some())),
    }
}

/// The end of the number starting at `i`, and for an integer the number of digits of its literal
/// (its sign not counted); `None` for a number with a fraction or an exponent. No digit limit.
// inlined into the scans of values: a call returned its three results through memory, which cost
// about as much as reading a short number
#[inline(always)]
pub fn number_shape(d: &[u8], mut i: usize) -> Scan<(usize, Option<usize>)> {
    if d.get(i) == Some(&b'-') {
        i += 1;
    }
    let first = i;
    i = match d.get(i) {
        Some(b'0') => i + 1,
        Some(b'1'..=b'9') => digits_end(d, i + 1),
        _ => return Err(Invalid),
    };
    let digits = i - first;
    let mut int = true;
    if d.get(i) == Some(&b'.') {
        int = false;
        i = some_digits(d, i + 1)?;
    }
    if matches!(d.get(i), Some(b'e' | b'E')) {
        int = false;
        i += 1;
        if matches!(d.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = some_digits(d, i)?;
    }
    Ok((i, int.then_some(digits)))
}

/// The index after `word` at `i`.
fn literal(d: &[u8], i: usize, word: &[u8]) -> Scan<usize> {
    if d.get(i..i + word.len()) == Some(word) {
        Ok(i + word.len())
    } else {
        Err(Invalid)
    }
}

/// The end of a scalar (string, number, literal) at `i`.
#[inline]
fn scalar_end(d: &[u8], i: usize) -> Scan<usize> {
    match d.get(i) {
        Some(b'"') => string_skip(d, i + 1),
        Some(b'-' | b'0'..=b'9') => number_end(d, i).map(|(end, _)| end),
        Some(b't') => literal(d, i, b"true"),
        Some(b'f') => literal(d, i, b"false"),
        Some(b'n') => literal(d, i, b"null"),
        _ => Err(Invalid),
    }
}

/// After `{` or `,` in an object: the index of the member's value (its key and colon skipped).
/// Inlined into the skip loop: it runs for every member of every payload object.
#[inline(always)]
fn member_value(d: &[u8], i: usize) -> Scan<usize> {
    if d.get(i) != Some(&b'"') {
        return Err(Invalid);
    }
    let at = next_special(d, i + 1);
    // the usual compact key: its closing quote and the colon right after it, as one comparison
    if d.get(at..at + 2) == Some(b"\":") {
        return Ok(ws(d, at + 2));
    }
    let end = string_skip_at(d, at)?;
    match ws_then(d, end) {
        (colon, Some(b':')) => Ok(ws(d, colon + 1)),
        _ => Err(Invalid),
    }
}

/// The open containers of [`skip_nested`], one bit per level (set for an object), the innermost
/// in bit 0: pushing and popping a level are a shift each.
struct Stack {
    bits: u128,
    depth: usize,
}

impl Stack {
    /// Open one more level (the caller checked there is room for it).
    #[inline(always)]
    fn push(&mut self, object: bool) {
        self.bits = self.bits << 1 | u128::from(object);
        self.depth += 1;
    }

    #[inline(always)]
    fn pop(&mut self) {
        self.bits >>= 1;
        self.depth -= 1;
    }

    #[inline(always)]
    fn top_is_object(&self) -> bool {
        self.bits & 1 == 1
    }
}

/// The end of the value starting at `i` (no whitespace before it), validating all of it; arrays
/// and objects may nest [`STACK_BITS`] levels deep (deeper is refused like invalid JSON).
pub fn skip_value(d: &[u8], i: usize) -> Scan<usize> {
    skip_nested(d, i, STACK_BITS)
}

/// [`skip_value`] for a value that may open at most `levels` nested arrays and objects (capped at
/// [`STACK_BITS`]): one more is refused like invalid JSON. The envelope scan passes what is left
/// of the contract's depth limit where the value sits, so that a frame it accepts is never too
/// deep, and the caller measures the depth itself only when the scan fails (see `crate::envelope`).
pub fn skip_nested(d: &[u8], mut i: usize, levels: usize) -> Scan<usize> {
    let levels = levels.min(STACK_BITS);
    let mut stack = Stack { bits: 0, depth: 0 };
    loop {
        // `i` is at a value: a string (the usual), an array or an object (one test for both: `[`
        // and `{` differ only in bit 5, as `]` and `}` do, and each closer is its opener plus 2),
        // else another scalar; tests rather than a jump table, whose one indirect jump for every
        // value mispredicted as the kinds of value alternate
        let b = d.get(i).copied().ok_or(Invalid)?;
        if b == b'"' {
            i = string_skip(d, i + 1)?;
        } else if b | 0x20 == b'{' {
            // an empty container is a level too
            if stack.depth == levels {
                return Err(Invalid);
            }
            let (at, next) = ws_then(d, i + 1);
            i = at;
            if next == Some(b + 2) {
                i += 1;
            } else if b == b'{' {
                stack.push(true);
                i = member_value(d, i)?;
                continue;
            } else {
                stack.push(false);
                continue;
            }
        } else {
            i = scalar_end(d, i)?;
        }
        // after a value: close containers until one continues
        loop {
            if stack.depth == 0 {
                return Ok(i);
            }
            let (at, next) = ws_then(d, i);
            i = at;
            let object = stack.top_is_object();
            match (next, object) {
                (Some(b','), true) => {
                    i = member_value(d, ws(d, i + 1))?;
                    break;
                }
                (Some(b','), false) => {
                    i = ws(d, i + 1);
                    break;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    stack.pop();
                    i += 1;
                }
                _ => return Err(Invalid),
            }
        }
    }
}

#[cfg(test)]
mod tests;
