//! Non-ASCII `str` written as a JSON string straight from the object's own characters (its
//! 1-, 2- or 4-byte code units), without CPython's UTF-8 cache: no second memory region to read
//! and, on first touch, no cache to allocate and fill (fresh text is mostly read once).
//!
//! The escapes are those of `crate::encode::write_str`: `"`, `\` and the controls below U+0020,
//! short forms where JSON has them; everything else is copied as UTF-8 (no `ensure_ascii`).

use crate::encode::Output;

/// Longest text (in code units) transcoded here. Longer text goes to CPython, whose UTF-8 encoder
/// then the block-wise `write_str` were faster on long, escape-rich text (the `mixed` corpus's
/// 3,000-250,000-character strings: 2.5 ms against 3.7 ms), and whose cache a long text can afford.
pub(crate) const MAX_INLINE: usize = 1024;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Most UTF-8 bytes one code unit of each kind can take (1-, 2- and 4-byte kinds).
const fn utf8_max(kind: usize) -> usize {
    match kind {
        1 => 2,
        2 => 3,
        _ => 4,
    }
}

/// Append the `len` code units of width `kind` (1, 2 or 4 bytes) at `data` as a JSON string
/// literal. Returns `false`, with `out` as it was, at a lone surrogate (U+D800..U+DFFF): the
/// caller then takes the path that reports it.
///
/// # Safety
/// `data` must be valid for reading `len` code units of `kind` bytes, aligned to `kind`.
#[inline]
pub(crate) unsafe fn write<O: Output>(out: &mut O, kind: u32, data: *const u8, len: usize) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe {
        match kind {
            1 => write_units(out, std::slice::from_raw_parts(data, len)),
            2 => write_units(out, std::slice::from_raw_parts(data.cast::<u16>(), len)),
            _ => write_units(out, std::slice::from_raw_parts(data.cast::<u32>(), len)),
        }
    }
}

/// A code unit of one of the three kinds.
trait Unit: Copy {
    const KIND: usize;
    fn get(self) -> u32;
}

impl Unit for u8 {
    const KIND: usize = 1;
    #[inline(always)]
    fn get(self) -> u32 {
        u32::from(self)
    }
}

impl Unit for u16 {
    const KIND: usize = 2;
    #[inline(always)]
    fn get(self) -> u32 {
        u32::from(self)
    }
}

impl Unit for u32 {
    const KIND: usize = 4;
    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
}

#[inline(always)]
fn write_units<O: Output, U: Unit>(out: &mut O, units: &[U]) -> bool {
    let start = out.len();
    let max = utf8_max(U::KIND);
    // Room for every unit at its widest UTF-8 form plus both quotes; an escape (6 bytes for a
    // unit budgeted at `max`) tops it up first so the invariant holds for what is left.
    out.reserve(units.len() * max + 2);
    let mut len = start;
    // SAFETY: invariant before each unit `i`: `capacity - len >= (units.len() - i) * max + 1`.
    // It holds after the reserve and the opening quote; a unit writes at most `max` bytes, or
    // 6 for an escape after the capacity was topped up to `6 + rest * max + 1`; the closing
    // quote needs 1 byte. Every byte below `len` is written before `set_len`.
    unsafe {
        let mut dst = out.as_mut_ptr().add(len);
        *dst = b'"';
        dst = dst.add(1);
        len += 1;
        let mut i = 0;
        while i < units.len() {
            // Runs of plain ASCII (no escape) eight units at a time: one check, eight stores.
            while i + 8 <= units.len() {
                let chunk = &units[i..i + 8];
                let mut plain = true;
                for unit in chunk {
                    let c = unit.get();
                    plain &= (0x20..0x80).contains(&c) && c != 0x22 && c != 0x5c;
                }
                if !plain {
                    break;
                }
                for (k, unit) in chunk.iter().enumerate() {
                    *dst.add(k) = unit.get() as u8;
                }
                dst = dst.add(8);
                len += 8;
                i += 8;
            }
            if i == units.len() {
                break;
            }
            let c = units[i].get();
            i += 1;
            if c < 0x80 {
                let byte = c as u8;
                let short = ESCAPE[byte as usize];
                if short == 0 {
                    *dst = byte;
                    dst = dst.add(1);
                    len += 1;
                    continue;
                }
                let needed = 6 + (units.len() - i) * max + 1;
                if out.capacity() - len < needed {
                    out.set_len(len);
                    out.reserve(needed);
                    dst = out.as_mut_ptr().add(len);
                }
                let wrote = write_escape(dst, byte, short);
                dst = dst.add(wrote);
                len += wrote;
            } else if c < 0x800 {
                *dst = 0xc0 | (c >> 6) as u8;
                *dst.add(1) = 0x80 | (c & 0x3f) as u8;
                dst = dst.add(2);
                len += 2;
            } else if c < 0x1_0000 {
                if (0xd800..0xe000).contains(&c) {
                    out.set_len(start);
                    return false;
                }
                *dst = 0xe0 | (c >> 12) as u8;
                *dst.add(1) = 0x80 | ((c >> 6) & 0x3f) as u8;
                *dst.add(2) = 0x80 | (c & 0x3f) as u8;
                dst = dst.add(3);
                len += 3;
            } else {
                *dst = 0xf0 | (c >> 18) as u8;
                *dst.add(1) = 0x80 | ((c >> 12) & 0x3f) as u8;
                *dst.add(2) = 0x80 | ((c >> 6) & 0x3f) as u8;
                *dst.add(3) = 0x80 | (c & 0x3f) as u8;
                dst = dst.add(4);
                len += 4;
            }
        }
        *dst = b'"';
        out.set_len(len + 1);
    }
    true
}

/// What follows the backslash for each ASCII byte, `b'u'` for a `\u00XX` escape, or 0 when the
/// byte is written as is (the escapes of `crate::encode::write_str`).
const ESCAPE: [u8; 128] = {
    let mut table = [0u8; 128];
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

/// Write the escape of `byte` (`short` from `ESCAPE`) at `dst`; return its length (2 or 6).
///
/// # Safety
/// `dst` must be valid for writing 6 bytes.
#[inline]
unsafe fn write_escape(dst: *mut u8, byte: u8, short: u8) -> usize {
    // SAFETY: the caller guarantees 6 writable bytes at `dst`.
    unsafe {
        *dst = b'\\';
        if short != b'u' {
            *dst.add(1) = short;
            return 2;
        }
        let seq = [
            b'u',
            b'0',
            b'0',
            HEX[(byte >> 4) as usize],
            HEX[(byte & 0xf) as usize],
        ];
        std::ptr::copy_nonoverlapping(seq.as_ptr(), dst.add(1), 5);
        6
    }
}
