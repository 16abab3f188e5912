//! Exact byte scans the contract defines on raw frames: the nesting depth (step 2), and the
//! integer literals that the digit limit counts.

/// `MAX_INT_DIGITS` of the contract: the most digits an integer literal may have.
pub const MAX_INT_DIGITS: usize = 4300;

/// The contract's depth scan, word for word: inside a string a backslash skips the next byte;
/// outside, `[`/`{` go deeper and `]`/`}` up, never below zero; deeper than `max` at any point.
pub fn deeper_than(frame: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut skip) = (0usize, false, false);
    for &b in frame {
        if skip {
            skip = false;
        } else if in_string {
            match b {
                b'\\' => skip = true,
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
    }
    false
}

/// True when valid JSON `text` holds an integer literal (no fraction, no exponent) with more than
/// `MAX_INT_DIGITS` digits, the sign not counted.
pub fn long_int_literal(text: &[u8]) -> bool {
    let (mut i, mut in_string) = (0, false);
    while i < text.len() {
        let b = text[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
        } else if b == b'"' {
            in_string = true;
            i += 1;
        } else if b == b'-' || b.is_ascii_digit() {
            let end = i + text[i..]
                .iter()
                .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .unwrap_or(text.len() - i);
            let token = &text[i..end];
            let integer = !token.iter().any(|c| matches!(c, b'.' | b'e' | b'E'));
            if integer && token.iter().filter(|c| c.is_ascii_digit()).count() > MAX_INT_DIGITS {
                return true;
            }
            i = end;
        } else {
            i += 1;
        }
    }
    false
}
