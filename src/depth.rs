//! Nesting depth of a frame, measured on its raw bytes by the exact scan of the core contract, so
//! that both backends agree even on invalid JSON: inside a string a backslash skips the next byte,
//! outside strings `[`/`{` go one level deeper and `]`/`}` one level up (never below zero).

/// The deepest nesting of arrays and objects allowed in a frame (the envelope object is level 1).
pub const MAX_DEPTH: usize = 128;

/// True when the nesting of `frame` goes deeper than `max` at any point of the contract's scan.
///
/// A frame with no more than `max` opening brackets cannot go deeper than `max`, so the exact scan
/// only runs when a cheap count of `[` and `{` says it could; a frame of at most `max` bytes is not
/// even counted.
pub fn exceeds(frame: &[u8], max: usize) -> bool {
    frame.len() > max && count_opening(frame, max) > max && exceeds_exact(frame, max)
}

/// The number of `[` and `{` bytes in `frame`, or some number above `max` once it is known to be.
/// Branch-free per byte (`[` and `{` differ only in bit 0x20) with byte-wide counters, so the
/// compiler vectorises it.
fn count_opening(frame: &[u8], max: usize) -> usize {
    let mut total = 0;
    for block in frame.chunks(255) {
        let mut n = 0u8;
        for &b in block {
            n += u8::from(b | 0x20 == b'{');
        }
        total += usize::from(n);
        if total > max {
            break;
        }
    }
    total
}

/// The number of `[` and `{` bytes in `bytes`.
pub fn opening(bytes: &[u8]) -> usize {
    count_opening(bytes, usize::MAX)
}

/// True when a frame with `opening` bytes `[` and `{` in all (see [`opening`]) goes deeper than
/// `max`: the exact scan runs only when the count says it could.
pub fn exceeds_counted(frame: &[u8], opening: usize, max: usize) -> bool {
    opening > max && exceeds_exact(frame, max)
}

/// The exact scan, without the pre-check.
fn exceeds_exact(frame: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = 0;
    while i < frame.len() {
        let b = frame[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max {
                        return true;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> Vec<u8> {
        let mut v = vec![b'['; n];
        v.extend(std::iter::repeat_n(b']', n));
        v
    }

    #[test]
    fn limit_is_inclusive() {
        assert!(!exceeds(&nested(MAX_DEPTH), MAX_DEPTH));
        assert!(exceeds(&nested(MAX_DEPTH + 1), MAX_DEPTH));
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        let mut v = b"{\"a\":\"".to_vec();
        v.extend(std::iter::repeat_n(b'[', 500));
        v.extend(b"\"}");
        assert!(!exceeds(&v, MAX_DEPTH));
    }

    #[test]
    fn escaped_quote_keeps_string_open() {
        // the `\"` does not close the string, so the brackets after it are still inside it
        let mut v = b"[\"\\\"".to_vec();
        v.extend(std::iter::repeat_n(b'[', 200));
        v.extend(b"\"]");
        assert!(!exceeds(&v, MAX_DEPTH));
        // a backslash outside a string is just a byte
        let mut w = b"\\\"".to_vec();
        w.extend(std::iter::repeat_n(b'{', 200));
        assert!(!exceeds(&w, MAX_DEPTH));
    }

    #[test]
    fn depth_never_goes_below_zero() {
        let mut v = vec![b']'; 50];
        v.extend(nested(MAX_DEPTH));
        assert!(!exceeds(&v, MAX_DEPTH));
        let mut w = vec![b'}'; 50];
        w.extend(vec![b'['; MAX_DEPTH + 1]);
        assert!(exceeds(&w, MAX_DEPTH));
    }

    #[test]
    fn many_sibling_brackets_are_shallow() {
        let v: Vec<u8> = std::iter::repeat_n(&b"[]{}"[..], 300)
            .flatten()
            .copied()
            .collect();
        assert!(!exceeds(&v, MAX_DEPTH));
    }

    #[test]
    fn opening_count_matches_a_naive_count() {
        let all: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let naive = all.iter().filter(|&&b| b == b'[' || b == b'{').count();
        assert_eq!(count_opening(&all, usize::MAX), naive);
        assert!(count_opening(&all, 3) > 3);
    }

    #[test]
    fn invalid_json_is_still_measured() {
        let v = vec![b'{'; MAX_DEPTH + 1];
        assert!(exceeds(&v, MAX_DEPTH));
    }
}
