//! JSON text writer: the byte-level half of the encoder (no PyO3). It appends compact JSON
//! fragments (strings with escaping, integers, floats, the JSON-RPC envelope pieces) to an
//! `Output` (a `Vec<u8>`, or the bindings' `bytes` buffer); the Python object walker in
//! `python/encoder/walk.rs` drives it. Output rules follow `docs/core-contract.md`: UTF-8 passes
//! through unescaped, `"` `\` and U+0000..U+001F are escaped (`\n` `\r` `\t` `\b` `\f`, else
//! `\u00XX`), floats use the shortest round-trip form with orjson's spelling (`1e+16`, `1e-7`, from
//! `zmij`), and non-finite floats become `null`. Strings are copied and scanned in one pass,
//! 16 bytes at a time with SSE2 (32 with AVX2 when the CPU has it) on x86_64.

use num_bigint::BigInt;

/// Where the writer appends: a growable byte buffer. `Vec<u8>` is one; the bindings have another
/// that writes straight into a Python `bytes` object (no copy at the end).
pub trait Output {
    /// Bytes written so far.
    fn len(&self) -> usize;
    /// Bytes that fit without growing.
    fn capacity(&self) -> usize;
    /// Make room for at least `additional` more bytes (aborts when memory runs out, as `Vec`).
    fn reserve(&mut self, additional: usize);
    /// Start of the buffer (valid for `capacity()` bytes until the next `reserve`).
    fn as_mut_ptr(&mut self) -> *mut u8;
    /// Set the number of bytes written.
    ///
    /// # Safety
    /// `len <= capacity()`, and the first `len` bytes must have been written.
    unsafe fn set_len(&mut self, len: usize);

    /// Whether nothing was written.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append one byte.
    #[inline]
    fn push(&mut self, byte: u8) {
        self.reserve(1);
        let len = self.len();
        // SAFETY: one byte of room was reserved at `len`.
        unsafe {
            *self.as_mut_ptr().add(len) = byte;
            self.set_len(len + 1);
        }
    }

    /// Append `bytes`.
    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        let len = self.len();
        // SAFETY: `bytes.len()` bytes of room were reserved at `len`; the regions are distinct.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.as_mut_ptr().add(len), bytes.len());
            self.set_len(len + bytes.len());
        }
    }
}

impl Output for Vec<u8> {
    #[inline]
    fn len(&self) -> usize {
        Vec::len(self)
    }

    #[inline]
    fn capacity(&self) -> usize {
        Vec::capacity(self)
    }

    #[inline]
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }

    #[inline]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        Vec::as_mut_ptr(self)
    }

    #[inline]
    unsafe fn set_len(&mut self, len: usize) {
        // SAFETY: the caller's guarantee is `Vec::set_len`'s.
        unsafe { Vec::set_len(self, len) }
    }

    #[inline]
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }

    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }
}

/// Containers (arrays and objects) allowed inside one encoded value, as with orjson: the 255th
/// level of nesting fails with `"Recursion limit reached"`.
pub const MAX_CONTAINER_DEPTH: usize = 254;

/// Start of every envelope: `{"jsonrpc":"2.0"`.
pub const ENVELOPE_START: &[u8] = b"{\"jsonrpc\":\"2.0\"";
/// Separator and key before an id value.
pub const KEY_ID: &[u8] = b",\"id\":";
/// Separator and key before a method string.
pub const KEY_METHOD: &[u8] = b",\"method\":";
/// Separator and key before params.
pub const KEY_PARAMS: &[u8] = b",\"params\":";
/// Separator and key before a result.
pub const KEY_RESULT: &[u8] = b",\"result\":";
/// Separator, key and opening of the error object, up to the code value.
pub const KEY_ERROR_CODE: &[u8] = b",\"error\":{\"code\":";
/// Separator and key before the error message.
pub const KEY_MESSAGE: &[u8] = b",\"message\":";
/// Separator and key before the error data.
pub const KEY_DATA: &[u8] = b",\"data\":";
/// End of an envelope line whose last member is the error object.
pub const ERROR_END: &[u8] = b"}}\n";
/// End of an envelope line.
pub const ENVELOPE_END: &[u8] = b"}\n";

/// What follows the backslash for each byte value, or 0 when the byte is written as is.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = b'u';
        i += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes per SSE2 block.
const BLOCK: usize = 16;

/// Append `s` as a JSON string literal (quotes included).
///
/// One pass: runs of bytes that need no escaping are copied a block at a time straight into
/// the spare capacity of `out`, which always has room for the rest of the text. A long text on a
/// CPU with AVX2 takes `write_long_avx2`, which also writes its escapes without leaving its loop.
/// A text of 16 to 63 bytes first tries `write_medium` (no loop, when it has nothing to escape).
#[inline]
pub fn write_str<O: Output>(out: &mut O, s: &str) {
    let src = s.as_bytes();
    #[cfg(target_arch = "x86_64")]
    if src.len() >= 4 * BLOCK {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available (checked just above).
            unsafe { write_long_avx2(out, src) };
            return;
        }
    } else if src.len() >= BLOCK && write_medium(out, src) {
        return;
    }
    out.reserve(src.len() + 2);
    let mut len = out.len();
    let mut i = 0;
    // SAFETY: invariant before each copy: `capacity - len >= (src.len() - i) + 1`. It holds
    // after the reserve above and the opening quote; `copy_plain` writes at most `src.len() - i`
    // bytes and advances `len` and `i` equally; before an escape (up to 6 bytes for 1 byte of
    // input) the capacity is topped up to keep it; the closing quote needs 1 byte. Every byte
    // below `len` is written before `set_len`.
    unsafe {
        *out.as_mut_ptr().add(len) = b'"';
        len += 1;
        while copy_run(out, src, &mut i, &mut len) {}
        *out.as_mut_ptr().add(len) = b'"';
        out.set_len(len + 1);
    }
}

/// One step of the copy-then-escape loop of `write_str` and `write_long_avx2`: copy the run of
/// `src[*i..]` that needs no escaping to `out` at `*len`, then, unless the
/// run reached the end of `src`, write the escape of the byte after it; advance `*i` and `*len`
/// past what was written. Return whether bytes of `src` remain (`false`: the text is done, the
/// buffer did not move).
///
/// # Safety
/// The first `*len` bytes of `out` were written and the invariant of `write_str` holds
/// (`capacity - *len >= (src.len() - *i) + 1`). After a `true` the buffer may have moved.
#[inline(always)]
unsafe fn copy_run<O: Output>(out: &mut O, src: &[u8], i: &mut usize, len: &mut usize) -> bool {
    // SAFETY: `copy_plain` writes at most `src.len() - *i` bytes at `*len`, inside the
    // capacity (the caller's invariant); `escape_at` gets its contract from the same invariant.
    unsafe {
        let run = copy_plain(&src[*i..], out.as_mut_ptr().add(*len));
        *len += run;
        *i += run;
        if *i == src.len() {
            return false;
        }
        *len = escape_at(out, *len, src, *i);
    }
    *i += 1;
    true
}

/// Write the escape of `src[i]` at `len` (bytes written so far), first growing `out` so that
/// the invariant of `write_str` holds after it (room for the rest of `src` and the closing
/// quote); return the new length.
///
/// # Safety
/// `src[i]` needs an escape; the first `len` bytes of `out` were written and
/// `capacity - len >= src.len() - i` (the invariant of `write_str` before the byte).
#[inline(always)]
unsafe fn escape_at<O: Output>(out: &mut O, len: usize, src: &[u8], i: usize) -> usize {
    let needed = 6 + (src.len() - i - 1) + 1;
    // SAFETY: the caller's contract; after the top-up 6 bytes are writable at `len`.
    unsafe {
        if out.capacity() - len < needed {
            out.set_len(len);
            out.reserve(needed);
        }
        len + write_escape(out.as_mut_ptr().add(len), src[i])
    }
}

/// `write_str` for a text of at least 64 bytes with AVX2: 32 bytes at a time are stored and
/// checked; a byte that needs an escape is written where it stands and the blocks go on from the
/// byte after it, so an escape costs no return to `write_str` and no new set-up (the text of a
/// large message has one every ~150 bytes: its newlines and quotes). The last bytes (fewer than
/// a block) go through `copy_plain`.
///
/// # Safety
/// AVX2 must be available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn write_long_avx2<O: Output>(out: &mut O, src: &[u8]) {
    use core::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_storeu_si256,
    };
    let below = _mm256_set1_epi8(0x1f);
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    out.reserve(src.len() + 2);
    let mut len = out.len();
    let mut i = 0;
    // SAFETY: the invariant of `write_str` (`capacity - len >= (src.len() - i) + 1` before each
    // copy), kept the same way; a block is loaded only when 32 bytes of `src` remain at `i`, so
    // its store of 32 bytes at `len` is inside the capacity. `dst` is refreshed after every
    // call that may move the buffer (`escape_at`).
    unsafe {
        let mut dst = out.as_mut_ptr();
        *dst.add(len) = b'"';
        len += 1;
        loop {
            while i + 2 * BLOCK <= src.len() {
                let v = _mm256_loadu_si256(src.as_ptr().add(i).cast::<__m256i>());
                _mm256_storeu_si256(dst.add(len).cast::<__m256i>(), v);
                let control = _mm256_cmpeq_epi8(_mm256_min_epu8(v, below), v);
                let special =
                    _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash));
                let mask = _mm256_movemask_epi8(_mm256_or_si256(control, special)) as u32;
                if mask == 0 {
                    i += 2 * BLOCK;
                    len += 2 * BLOCK;
                    continue;
                }
                let run = mask.trailing_zeros() as usize;
                i += run;
                len += run;
                len = escape_at(out, len, src, i);
                i += 1;
                dst = out.as_mut_ptr();
            }
            if !copy_run(out, src, &mut i, &mut len) {
                break;
            }
            dst = out.as_mut_ptr();
        }
        *dst.add(len) = b'"';
        out.set_len(len + 1);
    }
}

/// Write the escape sequence of `byte` at `dst` and return its length (2 or 6).
///
/// # Safety
/// `dst` must be valid for writing 6 bytes.
#[inline]
unsafe fn write_escape(dst: *mut u8, byte: u8) -> usize {
    let short = ESCAPE[byte as usize];
    // SAFETY: the caller guarantees 6 writable bytes at `dst`.
    unsafe {
        if short == b'u' {
            let seq = [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(byte >> 4) as usize],
                HEX[(byte & 0xf) as usize],
            ];
            std::ptr::copy_nonoverlapping(seq.as_ptr(), dst, 6);
            6
        } else {
            *dst = b'\\';
            *dst.add(1) = short;
            2
        }
    }
}

/// Copy the leading run of `src` that needs no escaping to `dst`; return its length. Whole
/// blocks are stored before they are checked, so bytes past the run (up to the end of `src`)
/// may be written too: the caller overwrites or ignores them.
///
/// # Safety
/// `dst` must be valid for writing `src.len()` bytes.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn copy_plain(src: &[u8], dst: *mut u8) -> usize {
    use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
    let mut k = 0;
    // SAFETY: SSE2 is part of the x86_64 baseline. Loads read 16 bytes inside `src` (whole
    // blocks, and the last 16 bytes when `src` is longer than 16); stores write 16 bytes at
    // `dst + k` with `k + 16 <= src.len()`, which the caller guarantees to be writable.
    unsafe {
        while k + BLOCK <= src.len() {
            let v = _mm_loadu_si128(src.as_ptr().add(k).cast::<__m128i>());
            _mm_storeu_si128(dst.add(k).cast::<__m128i>(), v);
            let mask = sse2_mask(v);
            if mask != 0 {
                return k + mask.trailing_zeros() as usize;
            }
            k += BLOCK;
        }
        let rest = src.len() - k;
        if rest == 0 {
            return k;
        }
        if k == 0 {
            return copy_short(src, dst);
        }
        // The last 16 bytes overlap the blocks already copied (all plain, so rewriting them is
        // harmless); only the lanes of the `rest` new bytes are looked at.
        let last = src.len() - BLOCK;
        let v = _mm_loadu_si128(src.as_ptr().add(last).cast::<__m128i>());
        _mm_storeu_si128(dst.add(last).cast::<__m128i>(), v);
        let mask = sse2_mask(v) >> (BLOCK - rest);
        k + if mask != 0 {
            mask.trailing_zeros() as usize
        } else {
            rest
        }
    }
}

/// Bit `i` set when byte `i` of `v` is `"`, `\\` or below 0x20.
#[cfg(target_arch = "x86_64")]
#[inline]
fn sse2_mask(v: core::arch::x86_64::__m128i) -> u32 {
    // SAFETY: SSE2 is part of the x86_64 baseline; this only computes on registers.
    unsafe { core::arch::x86_64::_mm_movemask_epi8(sse2_special(v)) as u32 }
}

/// Lane `i` all ones when byte `i` of `v` is `"`, `\\` or below 0x20, else zero.
#[cfg(target_arch = "x86_64")]
#[inline]
fn sse2_special(v: core::arch::x86_64::__m128i) -> core::arch::x86_64::__m128i {
    use core::arch::x86_64::{_mm_cmpeq_epi8, _mm_min_epu8, _mm_or_si128, _mm_set1_epi8};
    // SAFETY: SSE2 is part of the x86_64 baseline; these intrinsics only compute on registers.
    unsafe {
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_or_si128(control, _mm_or_si128(quote, backslash))
    }
}

/// `write_str` for a text of 16 to 63 bytes with nothing to escape, the usual value of a message
/// (a name, a word or two, a short sentence): two or four overlapping 16-byte blocks cover the
/// text, are stored and checked together, and the quotes put around them, with no loop and no
/// per-block branch. Return `false`, having written nothing that counts, when a byte needs an
/// escape: the general loop then writes the text from its start.
///
/// `src.len()` must be in `BLOCK..4 * BLOCK` (checked by the caller; otherwise nothing is
/// written and the answer is `false`).
#[cfg(target_arch = "x86_64")]
#[inline]
fn write_medium<O: Output>(out: &mut O, src: &[u8]) -> bool {
    use core::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_storeu_si128,
    };
    let n = src.len();
    if !(BLOCK..4 * BLOCK).contains(&n) {
        return false;
    }
    out.reserve(n + 2);
    let len = out.len();
    // SAFETY: SSE2 is part of the x86_64 baseline. `n + 2` bytes are reserved at `len`: the
    // quote at `dst`, the text at `dst + 1 .. dst + 1 + n` and the closing quote after it. The
    // loads read 16 bytes at offsets `0`, `16`, `n - 32` and `n - 16` of `src`, all inside it as
    // `16 <= n < 64` (the middle two only when `n > 32`); each store writes the 16 bytes it
    // loaded at the same offset from `dst + 1`. The length is set only when the whole text
    // needed no escape (then every one of its bytes was stored).
    unsafe {
        let dst = out.as_mut_ptr().add(len);
        let text = dst.add(1);
        let p = src.as_ptr();
        let head = _mm_loadu_si128(p.cast::<__m128i>());
        let tail = _mm_loadu_si128(p.add(n - BLOCK).cast::<__m128i>());
        _mm_storeu_si128(text.cast::<__m128i>(), head);
        _mm_storeu_si128(text.add(n - BLOCK).cast::<__m128i>(), tail);
        let mut special = _mm_or_si128(sse2_special(head), sse2_special(tail));
        if n > 2 * BLOCK {
            let second = _mm_loadu_si128(p.add(BLOCK).cast::<__m128i>());
            let third = _mm_loadu_si128(p.add(n - 2 * BLOCK).cast::<__m128i>());
            _mm_storeu_si128(text.add(BLOCK).cast::<__m128i>(), second);
            _mm_storeu_si128(text.add(n - 2 * BLOCK).cast::<__m128i>(), third);
            special = _mm_or_si128(
                special,
                _mm_or_si128(sse2_special(second), sse2_special(third)),
            );
        }
        if _mm_movemask_epi8(special) != 0 {
            return false;
        }
        *dst = b'"';
        *text.add(n) = b'"';
        out.set_len(len + n + 2);
    }
    true
}

/// `copy_plain` for texts shorter than one block: two overlapping 8- or 4-byte words checked
/// together in one SSE2 register (no per-byte loop for the common short key or value), bytes
/// otherwise.
///
/// # Safety
/// `dst` must be valid for writing `src.len()` bytes.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn copy_short(src: &[u8], dst: *mut u8) -> usize {
    let n = src.len();
    let p = src.as_ptr();
    // SAFETY: every read is inside `src` (`0..8` and `n - 8..n` when `n >= 8`, `0..4` and
    // `n - 4..n` when `n >= 4`) and every write inside `dst[0..n]`.
    unsafe {
        if n >= 8 {
            let head = p.cast::<u64>().read_unaligned();
            let tail = p.add(n - 8).cast::<u64>().read_unaligned();
            let both = core::arch::x86_64::_mm_set_epi64x(tail as i64, head as i64);
            if sse2_mask(both) == 0 {
                dst.cast::<u64>().write_unaligned(head);
                dst.add(n - 8).cast::<u64>().write_unaligned(tail);
                return n;
            }
        } else if n >= 4 {
            let head = p.cast::<u32>().read_unaligned();
            let tail = p.add(n - 4).cast::<u32>().read_unaligned();
            let word = u64::from(tail) << 32 | u64::from(head);
            // The upper 8 lanes are zero (which counts as a control byte): only the low 8 count.
            if sse2_mask(core::arch::x86_64::_mm_cvtsi64_si128(word as i64)) & 0xff == 0 {
                dst.cast::<u32>().write_unaligned(head);
                dst.add(n - 4).cast::<u32>().write_unaligned(tail);
                return n;
            }
        }
        for (i, &byte) in src.iter().enumerate() {
            if ESCAPE[byte as usize] != 0 {
                return i;
            }
            *dst.add(i) = byte;
        }
    }
    n
}

/// Copy the leading run of `src` that needs no escaping to `dst`; return its length.
///
/// # Safety
/// `dst` must be valid for writing `src.len()` bytes.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
unsafe fn copy_plain(src: &[u8], dst: *mut u8) -> usize {
    let run = src
        .iter()
        .position(|&b| ESCAPE[b as usize] != 0)
        .unwrap_or(src.len());
    // SAFETY: `run <= src.len()` bytes fit at `dst`; the regions do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, run) };
    run
}

/// `"00" "01" ... "99"`: two decimal digits per entry.
const DIGIT_PAIRS: [u8; 200] = {
    let mut table = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        table[2 * i] = b'0' + (i / 10) as u8;
        table[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    table
};

/// Most bytes an `i64` or `u64` takes in decimal (`-9223372036854775808`, `18446744073709551615`).
const INT_ROOM: usize = 20;

/// Append an unsigned integer, formatted straight into the buffer two digits at a time (a
/// formatter with its own buffer costs a copy that stalls on store forwarding).
#[inline(always)]
pub fn write_u64<O: Output>(out: &mut O, value: u64) {
    out.reserve(INT_ROOM);
    // SAFETY: `INT_ROOM` bytes are reserved at `len`, as many as any `u64` takes, and
    // `write_digits` says how many it wrote.
    unsafe {
        let len = out.len();
        let written = write_digits(out.as_mut_ptr().add(len), value);
        out.set_len(len + written);
    }
}

/// Append a signed integer.
#[inline(always)]
pub fn write_i64<O: Output>(out: &mut O, value: i64) {
    out.reserve(INT_ROOM + 1);
    // SAFETY: `INT_ROOM + 1` bytes are reserved at `len`: the sign and the digits.
    unsafe {
        let len = out.len();
        let dst = out.as_mut_ptr().add(len);
        let sign = usize::from(value < 0);
        *dst = b'-';
        let written = write_digits(dst.add(sign), value.unsigned_abs());
        out.set_len(len + sign + written);
    }
}

/// Write two digits of `pair` (below 100) at `dst`.
///
/// # Safety
/// `dst` must be valid for writing 2 bytes.
#[inline(always)]
unsafe fn write_pair(dst: *mut u8, pair: u64) {
    // SAFETY: `pair < 100`, so both bytes read are inside `DIGIT_PAIRS`; the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(DIGIT_PAIRS.as_ptr().add(2 * pair as usize), dst, 2) }
}

/// Write `value` (below 10,000) at `dst` with no leading zeros; return the digits written (1-4).
/// The usual JSON-RPC integer (an id, a count, a code) takes this path alone: a few compares and
/// one division by a constant, instead of counting the digits first.
///
/// # Safety
/// `dst` must be valid for writing 4 bytes.
#[inline(always)]
unsafe fn write_small(dst: *mut u8, value: u64) -> usize {
    // SAFETY: at most 4 bytes are written at `dst` (the caller's contract).
    unsafe {
        if value < 10 {
            *dst = b'0' + value as u8;
            1
        } else if value < 100 {
            write_pair(dst, value);
            2
        } else if value < 1000 {
            *dst = b'0' + (value / 100) as u8;
            write_pair(dst.add(1), value % 100);
            3
        } else {
            write_pair(dst, value / 100);
            write_pair(dst.add(2), value % 100);
            4
        }
    }
}

/// Write `value` (below 10^8) at `dst` as exactly 8 digits, leading zeros included.
///
/// # Safety
/// `dst` must be valid for writing 8 bytes.
#[inline(always)]
unsafe fn write_eight(dst: *mut u8, value: u64) {
    let (high, low) = (value / 10_000, value % 10_000);
    // SAFETY: 8 bytes at `dst` (the caller's contract).
    unsafe {
        write_pair(dst, high / 100);
        write_pair(dst.add(2), high % 100);
        write_pair(dst.add(4), low / 100);
        write_pair(dst.add(6), low % 100);
    }
}

/// Write `value` in decimal at `dst`; return the digits written. Below 10,000 inline (the usual
/// integer of a message), else through `write_digits_long`.
///
/// # Safety
/// `dst` must be valid for writing `INT_ROOM` bytes.
#[inline(always)]
unsafe fn write_digits(dst: *mut u8, value: u64) -> usize {
    // SAFETY: the caller's contract covers both.
    unsafe {
        if value < 10_000 {
            write_small(dst, value)
        } else {
            write_digits_long(dst, value)
        }
    }
}

/// `write_digits` for a `value` of 5 digits or more.
///
/// # Safety
/// `dst` must be valid for writing `INT_ROOM` bytes.
#[inline(never)]
unsafe fn write_digits_long(dst: *mut u8, value: u64) -> usize {
    // SAFETY: each branch writes as many digits as `value` has (at most 20), inside `INT_ROOM`.
    unsafe {
        if value < 100_000_000 {
            return write_digits_below_1e8(dst, value);
        }
        if value < 10_000_000_000_000_000 {
            let head = write_digits_below_1e8(dst, value / 100_000_000);
            write_eight(dst.add(head), value % 100_000_000);
            return head + 8;
        }
        // 17 to 20 digits: at most 1844 above the last 16.
        let head = write_small(dst, value / 10_000_000_000_000_000);
        let rest = value % 10_000_000_000_000_000;
        write_eight(dst.add(head), rest / 100_000_000);
        write_eight(dst.add(head + 8), rest % 100_000_000);
        head + 16
    }
}

/// `write_digits` for a `value` below 10^8 (the leading part of a longer number).
///
/// # Safety
/// `dst` must be valid for writing 8 bytes.
#[inline(always)]
unsafe fn write_digits_below_1e8(dst: *mut u8, value: u64) -> usize {
    // SAFETY: at most 8 bytes at `dst` (the caller's contract).
    unsafe {
        if value < 10_000 {
            return write_small(dst, value);
        }
        let head = write_small(dst, value / 10_000);
        let low = value % 10_000;
        write_pair(dst.add(head), low / 100);
        write_pair(dst.add(head + 2), low % 100);
        head + 4
    }
}

/// Append an integer of any size.
pub fn write_bigint<O: Output>(out: &mut O, value: &BigInt) {
    out.extend_from_slice(value.to_str_radix(10).as_bytes());
}

/// Append a float in its shortest round-trip form, spelled as orjson does (`1.0`, `0.1`, `1e+16`,
/// `1e-7`), or `null` for NaN and the infinities.
#[inline]
pub fn write_f64<O: Output>(out: &mut O, value: f64) {
    if value.is_finite() {
        write_finite(out, value);
    } else {
        out.extend_from_slice(b"null");
    }
}

/// Size of the formatter's buffer, reserved in the output for it.
const FLOAT_ROOM: usize = std::mem::size_of::<zmij::Buffer>();
const _: () = assert!(std::mem::align_of::<zmij::Buffer>() == 1 && FLOAT_ROOM <= 64);

/// Format a finite float with `zmij` directly in the spare capacity of `out`: the formatter
/// writes with wide stores, and copying its text out of a separate buffer stalls on store
/// forwarding (measured: a third of the time of a float-heavy message).
#[inline]
fn write_finite<O: Output>(out: &mut O, value: f64) {
    out.reserve(FLOAT_ROOM);
    let len = out.len();
    // SAFETY: `zmij::Buffer` is a byte buffer of uninitialised bytes (every bit pattern, and
    // none, is valid), with alignment 1 (asserted above); `FLOAT_ROOM` bytes of spare capacity
    // are reserved at `dst`, so it may be viewed as one. The text it returns lies inside that
    // room; when it starts at `dst` (zmij writes from the start), it is already in place,
    // otherwise it is moved there. Only the text's bytes are then counted as initialised.
    unsafe {
        let dst = out.as_mut_ptr().add(len);
        let room = &mut *dst.cast::<zmij::Buffer>();
        let text = room.format_finite(value).as_bytes();
        let n = text.len();
        if text.as_ptr() != dst.cast_const() {
            std::ptr::copy(text.as_ptr(), dst, n);
        }
        out.set_len(len + n);
    }
}

/// Append `true` or `false`.
#[inline]
pub fn write_bool<O: Output>(out: &mut O, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

/// Append `null`.
#[inline]
pub fn write_null<O: Output>(out: &mut O) {
    out.extend_from_slice(b"null");
}

#[cfg(test)]
mod tests;
