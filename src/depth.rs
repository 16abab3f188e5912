//! Nesting depth of a frame, measured on its raw bytes by the exact scan of the core contract, so
//! that both backends agree even on invalid JSON: inside a string a backslash skips the next byte,
//! outside strings `[`/`{` go one level deeper and `]`/`}` one level up (never below zero).

/// The deepest nesting of arrays and objects allowed in a frame (the envelope object is level 1).
pub const MAX_DEPTH: usize = 128;

/// True when the nesting of `frame` goes deeper than `max` at any point of the contract's scan.
///
/// A frame with no more than `max` opening brackets cannot go deeper than `max`, so the exact scan
/// only runs when a cheap count of `[` and `{` (a SIMD search that stops at `max + 1`) says it
/// could; a frame of at most `max` bytes is not even searched.
pub fn exceeds(frame: &[u8], max: usize) -> bool {
    if frame.len() <= max {
        return false;
    }
    let opening = memchr::memchr2_iter(b'[', b'{', frame)
        .take(max + 1)
        .count();
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
    fn invalid_json_is_still_measured() {
        let v = vec![b'{'; MAX_DEPTH + 1];
        assert!(exceeds(&v, MAX_DEPTH));
    }
}
