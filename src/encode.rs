//! JSON text writer: the byte-level half of the encoder (no PyO3). It appends compact JSON
//! fragments (strings with escaping, integers, floats, the JSON-RPC envelope pieces) to a `Vec<u8>`;
//! the Python object walker in `python/encoder.rs` drives it. Output rules follow
//! `docs/core-contract.md`: UTF-8 passes through unescaped, `"` `\` and U+0000..U+001F are escaped
//! (`\n` `\r` `\t` `\b` `\f`, else `\u00XX`), floats use the shortest round-trip form with orjson's
//! spelling (`1e+16`, `1e-7`), and non-finite floats become `null`.

use num_bigint::BigInt;

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

/// Append `s` as a JSON string literal (quotes included).
#[inline]
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    loop {
        let run = find_escape(&bytes[start..]);
        let stop = start + run;
        out.extend_from_slice(&bytes[start..stop]);
        if stop == bytes.len() {
            break;
        }
        write_escape(out, bytes[stop]);
        start = stop + 1;
    }
    out.push(b'"');
}

#[cold]
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    match ESCAPE[byte as usize] {
        b'u' => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[(byte >> 4) as usize],
            HEX[(byte & 0xf) as usize],
        ]),
        short => out.extend_from_slice(&[b'\\', short]),
    }
}

/// Length of the leading run of `bytes` that needs no escaping.
#[inline]
fn find_escape(bytes: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    let mut i = sse2::skip_plain(bytes);
    #[cfg(not(target_arch = "x86_64"))]
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        let mask = swar_mask(u64::from_le_bytes(word));
        if mask != 0 {
            return i + (mask.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && ESCAPE[bytes[i] as usize] == 0 {
        i += 1;
    }
    i
}

/// High bit set in each byte lane of `word` that holds `"`, `\` or a byte below 0x20.
#[inline]
fn swar_mask(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    control | has_zero(word ^ (ONES * b'"' as u64)) | has_zero(word ^ (ONES * b'\\' as u64))
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    //! 16-byte scan for bytes that need escaping; SSE2 is part of the x86_64 baseline.
    use core::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// Index of the first byte needing an escape within the whole 16-byte blocks of `bytes`, or
    /// the length of those blocks when there is none (the caller scans the tail).
    #[inline]
    pub(super) fn skip_plain(bytes: &[u8]) -> usize {
        let mut i = 0;
        // SAFETY: SSE2 is always available on x86_64; every load reads 16 bytes starting at
        // `i` with `i + 16 <= bytes.len()`, so it stays inside the slice (unaligned load allowed).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let below = _mm_set1_epi8(0x1f);
            while i + 16 <= bytes.len() {
                let v = _mm_loadu_si128(bytes.as_ptr().add(i).cast::<__m128i>());
                let control = _mm_cmpeq_epi8(_mm_min_epu8(v, below), v);
                let special = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
                let mask = _mm_movemask_epi8(_mm_or_si128(control, special)) as u32;
                if mask != 0 {
                    return i + mask.trailing_zeros() as usize;
                }
                i += 16;
            }
        }
        i
    }
}

/// Append a signed integer.
#[inline]
pub fn write_i64(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Append an unsigned integer.
#[inline]
pub fn write_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Append an integer of any size.
pub fn write_bigint(out: &mut Vec<u8>, value: &BigInt) {
    out.extend_from_slice(value.to_str_radix(10).as_bytes());
}

/// Append a float in its shortest round-trip form (`1.0`, `0.1`, `1e+16`, `1e-7`), or `null` for
/// NaN and the infinities.
#[inline]
pub fn write_f64(out: &mut Vec<u8>, value: f64) {
    if !value.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(value).as_bytes();
    match text.iter().position(|&b| b == b'e') {
        Some(e) if text.get(e + 1) != Some(&b'-') => {
            out.extend_from_slice(&text[..=e]);
            out.push(b'+');
            out.extend_from_slice(&text[e + 1..]);
        }
        _ => out.extend_from_slice(text),
    }
}

/// Append `true` or `false`.
#[inline]
pub fn write_bool(out: &mut Vec<u8>, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

/// Append `null`.
#[inline]
pub fn write_null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"null");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    fn float(f: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, f);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_quotes_backslashes_and_controls() {
        assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(string("\u{0}\u{1f}\u{7f}"), "\"\\u0000\\u001f\u{7f}\"");
        assert_eq!(string("/é\u{2028}😀"), "\"/é\u{2028}😀\"");
    }

    #[test]
    fn escapes_at_every_position_of_long_strings() {
        for len in [0usize, 1, 7, 8, 15, 16, 17, 31, 33, 64] {
            for pos in 0..len {
                for special in ['"', '\\', '\n', '\u{1}', '\u{1f}'] {
                    let mut s = "x".repeat(len);
                    s.replace_range(pos..=pos, &special.to_string());
                    let expected: String = s
                        .chars()
                        .map(|c| match c {
                            '"' => "\\\"".to_string(),
                            '\\' => "\\\\".to_string(),
                            '\n' => "\\n".to_string(),
                            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
                            c => c.to_string(),
                        })
                        .collect();
                    assert_eq!(string(&s), format!("\"{expected}\""), "len {len} pos {pos}");
                }
            }
        }
    }

    #[test]
    fn bytes_above_0x7f_are_never_escaped() {
        let s = "é".repeat(40) + "ÿ\u{80}";
        assert_eq!(string(&s), format!("\"{s}\""));
    }

    #[test]
    fn floats_match_orjson_spelling() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "0.00001"),
            (1e-6, "1e-6"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
            (f64::NEG_INFINITY, "null"),
        ];
        for (value, text) in cases {
            assert_eq!(float(value), text);
        }
    }

    #[test]
    fn integers_are_exact() {
        let mut out = Vec::new();
        write_i64(&mut out, i64::MIN);
        out.push(b' ');
        write_u64(&mut out, u64::MAX);
        out.push(b' ');
        write_bigint(&mut out, &(BigInt::from(1u8) << 70));
        out.push(b' ');
        write_bigint(&mut out, &(BigInt::from(-1) << 70));
        assert_eq!(
            out,
            b"-9223372036854775808 18446744073709551615 1180591620717411303424 -1180591620717411303424"
        );
    }

    #[test]
    fn bools_and_null() {
        let mut out = Vec::new();
        write_bool(&mut out, true);
        write_bool(&mut out, false);
        write_null(&mut out);
        assert_eq!(out, b"truefalsenull");
    }
}
