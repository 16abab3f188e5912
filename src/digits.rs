//! The integer digit limit of the core contract. An integer literal (no fraction, no exponent) of
//! more than [`MAX_INT_DIGITS`] digits makes its frame or batch element an Invalid Request, so that
//! neither backend ever builds such a value (CPython's own `int(str)` refuses them by default, and
//! building them costs time quadratic in their length).
//!
//! The scanner of `crate::scan` refuses such a literal like invalid JSON, which keeps the common
//! path free of any bookkeeping. Only when a frame fails its scan does the envelope layer look for
//! over-long literals here ([`long_integers`]); it then scans a copy in which each one is replaced
//! by a stand-in of the same length ([`with_stand_ins`]), so every position, every other byte and
//! the frame's validity stay what they were, and marks the messages that held one.

use std::ops::Range;
use std::sync::OnceLock;

use num_bigint::{BigInt, BigUint};

use crate::scan::{digits_end, number_shape, string_end};

/// The most digits an integer literal may have: CPython's default `sys.int_max_str_digits`.
pub const MAX_INT_DIGITS: usize = 4300;

/// True when `value` has more than [`MAX_INT_DIGITS`] decimal digits: one comparison of its
/// magnitude with `10^MAX_INT_DIGITS` (computed once), instead of writing it out.
pub fn exceeds_limit(value: &BigInt) -> bool {
    static BOUND: OnceLock<BigUint> = OnceLock::new();
    let bound = BOUND.get_or_init(|| BigUint::from(10u32).pow(MAX_INT_DIGITS as u32));
    value.magnitude() >= bound
}

/// The `EncodeError` message of an integer beyond the limit.
pub fn encode_limit_message() -> String {
    format!("Integer exceeds the limit of {MAX_INT_DIGITS} digits")
}

/// The ranges of the digits (sign excluded) of every integer literal of more than
/// [`MAX_INT_DIGITS`] digits outside strings, in order. One pass, linear in the length of `d`.
///
/// On valid JSON the walk sees exactly the scanner's tokens. On invalid JSON it may find literals
/// where the scanner would not get to (or stop at a broken string): any stand-in there leaves the
/// text exactly as invalid, since a stand-in is itself a number token of the same extent.
pub fn long_integers(d: &[u8]) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(&b) = d.get(i) {
        i = match b {
            b'"' => match string_end(d, i + 1) {
                Ok((end, _)) => end,
                // an unterminated or broken string: the rest is no valid JSON anyway
                Err(_) => break,
            },
            b'-' | b'0'..=b'9' => match number_shape(d, i) {
                Ok((end, Some(digits))) => {
                    if digits > MAX_INT_DIGITS {
                        found.push(end - digits..end);
                    }
                    end
                }
                Ok((end, None)) => end,
                // past the whole run of digits, so that a long run is never walked twice
                Err(_) => digits_end(d, i + 1),
            },
            _ => i + 1,
        };
    }
    found
}

/// A copy of `d` in which each range of `long` (from [`long_integers`]) reads `0` followed by
/// spaces: a valid integer of the same length, built without any cost.
pub fn with_stand_ins(d: &[u8], long: &[Range<usize>]) -> Vec<u8> {
    let mut copy = d.to_vec();
    for r in long {
        copy[r.start] = b'0';
        copy[r.start + 1..r.end].fill(b' ');
    }
    copy
}

/// True when one of the sorted positions `starts` lies in `range`.
pub fn any_in(starts: &[usize], range: &Range<usize>) -> bool {
    let k = starts.partition_point(|&p| p < range.start);
    starts.get(k).is_some_and(|&p| p < range.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(n: usize) -> Vec<u8> {
        let mut v = vec![b'7'; n];
        v[0] = b'1';
        v
    }

    fn join(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn limit_is_inclusive() {
        let ok = join(&[b"[", &digits(MAX_INT_DIGITS), b"]"]);
        assert!(long_integers(&ok).is_empty());
        let long = join(&[b"[-", &digits(MAX_INT_DIGITS + 1), b"]"]);
        assert_eq!(long_integers(&long), vec![2..2 + MAX_INT_DIGITS + 1]);
    }

    #[test]
    fn strings_fractions_and_exponents_are_not_integers() {
        let n = digits(MAX_INT_DIGITS + 5);
        let text = join(&[
            b"[\"",
            &n,
            b"\", \"\\\"",
            &n,
            b"\", 1.",
            &n,
            b", ",
            &n,
            b"e5, 2e",
            &n,
            b", 3E-",
            &n,
            b"]",
        ]);
        assert!(long_integers(&text).is_empty());
        // a key is a string too
        let key = join(&[b"{\"", &n, b"\": 1}"]);
        assert!(long_integers(&key).is_empty());
    }

    #[test]
    fn every_long_literal_is_found_in_order() {
        let n = digits(5000);
        let text = join(&[b"{\"a\":", &n, b",\"b\":[1,-", &n, b",{\"c\":", &n, b"}]}"]);
        let found = long_integers(&text);
        assert_eq!(found.len(), 3);
        for r in &found {
            assert_eq!(&text[r.clone()], &n[..]);
        }
        assert!(found.windows(2).all(|w| w[0].end < w[1].start));
    }

    #[test]
    fn stand_ins_keep_length_and_validity() {
        let n = digits(5000);
        let text = join(&[b"{\"id\":-", &n, b",\"x\":[", &n, b"]}"]);
        let long = long_integers(&text);
        let copy = with_stand_ins(&text, &long);
        assert_eq!(copy.len(), text.len());
        assert!(copy.starts_with(b"{\"id\":-0 "));
        assert!(crate::scan::skip_value(&copy, 0).is_ok_and(|end| end == copy.len()));
        assert!(crate::scan::skip_value(&text, 0).is_err());
    }

    #[test]
    fn broken_numbers_are_walked_once() {
        // a run of digits followed by a bad fraction, many times: linear, and nothing found
        let mut text = Vec::new();
        for _ in 0..1000 {
            text.extend_from_slice(&digits(5000));
            text.extend_from_slice(b".x");
        }
        assert!(long_integers(&text).is_empty());
        // a leading zero ends the literal: the digits after it are another (invalid) token
        let zero = join(&[b"[0", &digits(5000), b"]"]);
        assert_eq!(long_integers(&zero), vec![2..5002]);
        let copy = with_stand_ins(&zero, &long_integers(&zero));
        assert!(crate::scan::skip_value(&copy, 0).is_err());
    }

    #[test]
    fn an_unterminated_string_ends_the_walk() {
        let text = join(&[b"[\"abc", &digits(5000), b"]"]);
        assert!(long_integers(&text).is_empty());
    }

    #[test]
    fn encode_limit() {
        let at = BigInt::from(10u32).pow(MAX_INT_DIGITS as u32) - 1u32;
        assert_eq!(at.to_str_radix(10).len(), MAX_INT_DIGITS);
        assert!(!exceeds_limit(&at));
        assert!(!exceeds_limit(&-at.clone()));
        let over = at + 1u32;
        assert!(exceeds_limit(&over));
        assert!(exceeds_limit(&-over));
        assert!(!exceeds_limit(&BigInt::from(0)));
    }

    #[test]
    fn positions_in_a_range() {
        let starts = [3, 10, 20];
        assert!(any_in(&starts, &(0..4)));
        assert!(!any_in(&starts, &(4..10)));
        assert!(any_in(&starts, &(10..11)));
        assert!(!any_in(&starts, &(21..100)));
        assert!(!any_in(&[], &(0..100)));
    }
}
