//! Unit tests of the JSON writers: string escaping, numbers, literals.

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
    // every length through the short, 16..63-byte block and long paths, with ASCII, DEL and 2-byte fills
    let lengths = (0usize..=70).chain([97, 130]);
    for len in lengths {
        for fill in ['x', '\u{7f}', 'é'] {
            for pos in 0..len {
                for special in ['"', '\\', '\n', '\u{1}', '\u{1f}'] {
                    let mut chars = vec![fill; len];
                    chars[pos] = special;
                    let s: String = chars.iter().collect();
                    let expected: String = chars
                        .iter()
                        .map(|&c| match c {
                            '"' => "\\\"".to_string(),
                            '\\' => "\\\\".to_string(),
                            '\n' => "\\n".to_string(),
                            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
                            c => c.to_string(),
                        })
                        .collect();
                    assert_eq!(
                        string(&s),
                        format!("\"{expected}\""),
                        "len {len} fill {fill:?} pos {pos}"
                    );
                }
            }
        }
    }
}

#[test]
fn escape_heavy_strings_grow_the_buffer() {
    for n in 0..80 {
        for unit in ["\u{1}", "\"", "\u{1}a", "é\u{1f}"] {
            let s = unit.repeat(n);
            let mut out = b"x".to_vec();
            out.shrink_to_fit();
            write_str(&mut out, &s);
            let expected: String = s
                .chars()
                .map(|c| match c {
                    '"' => "\\\"".to_string(),
                    c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
                    c => c.to_string(),
                })
                .collect();
            assert_eq!(String::from_utf8(out).unwrap(), format!("x\"{expected}\""));
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
    for value in [
        0u64,
        9,
        10,
        99,
        100,
        101,
        12345,
        999_999,
        1_000_000,
        u64::MAX / 7,
    ] {
        write_u64(&mut out, value);
        out.push(b' ');
    }
    write_i64(&mut out, -7);
    out.push(b' ');
    write_i64(&mut out, i64::MIN);
    out.push(b' ');
    write_u64(&mut out, u64::MAX);
    out.push(b' ');
    write_bigint(&mut out, &(BigInt::from(1u8) << 70));
    out.push(b' ');
    write_bigint(&mut out, &(BigInt::from(-1) << 70));
    assert_eq!(
        out,
        b"0 9 10 99 100 101 12345 999999 1000000 2635249153387078802 -7 -9223372036854775808 18446744073709551615 1180591620717411303424 -1180591620717411303424"
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

/// `write_str`'s long path (64 bytes and more: AVX2 blocks that write escapes in place) against a
/// byte-at-a-time reference, for texts with escapes alone, several in one block, on block
/// boundaries, at the start and end, and dense enough to grow the buffer many times.
#[test]
fn long_texts_with_escapes_match_a_byte_at_a_time_reference() {
    fn reference(s: &str) -> String {
        let mut expected = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => expected.push_str("\\\""),
                '\\' => expected.push_str("\\\\"),
                '\n' => expected.push_str("\\n"),
                '\r' => expected.push_str("\\r"),
                '\t' => expected.push_str("\\t"),
                '\u{8}' => expected.push_str("\\b"),
                '\u{c}' => expected.push_str("\\f"),
                c if (c as u32) < 0x20 => expected.push_str(&format!("\\u{:04x}", c as u32)),
                c => expected.push(c),
            }
        }
        expected.push('"');
        expected
    }
    // A small xorshift: the same texts on every run.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let specials = ['"', '\\', '\n', '\u{1}', '\u{1f}', '\t'];
    let plain = ['a', 'b', ' ', 'é', '€', '😀', '\u{7f}'];
    for len in [64usize, 65, 95, 96, 97, 127, 128, 129, 200, 1000, 5000] {
        for every in [1u64, 2, 3, 31, 32, 33, 150, u64::MAX] {
            let text: String = (0..len)
                .map(|_| {
                    let roll = next();
                    if every != u64::MAX && roll % every == 0 {
                        specials[(roll >> 32) as usize % specials.len()]
                    } else {
                        plain[(roll >> 32) as usize % plain.len()]
                    }
                })
                .collect();
            let mut out = b"x".to_vec();
            out.shrink_to_fit();
            write_str(&mut out, &text);
            let written = String::from_utf8(out).unwrap();
            assert_eq!(
                written,
                format!("x{}", reference(&text)),
                "len {len} every {every}"
            );
        }
    }
    // Escapes exactly at the block edges of a long plain text.
    for pos in [0usize, 31, 32, 63, 64, 65, 95, 96, 99] {
        let mut text = "y".repeat(100);
        text.replace_range(pos..=pos, "\"");
        text.replace_range(99..100, "\n");
        assert_eq!(string(&text), reference(&text), "pos {pos}");
    }
}

/// `write_u64`/`write_i64` against `format!` on every digit count's edges (each power of ten and
/// its neighbours, where the formatter changes branch), both signs, and a spread of other values.
#[test]
fn integers_match_format_at_every_digit_count() {
    let mut values = vec![0u64, u64::MAX, u64::MAX - 1];
    let mut power = 1u64;
    while let Some(next) = power.checked_mul(10) {
        values.extend([power - 1, power, power + 1, 2 * power, next - 1]);
        power = next;
    }
    values.extend([power - 1, power, power + 1]);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        values.push(state >> (state % 64));
    }
    for value in values {
        let mut out = b"x".to_vec();
        out.shrink_to_fit();
        write_u64(&mut out, value);
        assert_eq!(out, format!("x{value}").into_bytes(), "{value}");
        for signed in [value as i64, (value as i64).wrapping_neg()] {
            let mut out = Vec::new();
            write_i64(&mut out, signed);
            assert_eq!(out, signed.to_string().into_bytes(), "{signed}");
        }
    }
}

/// Every length around the short, medium (16 to 63 bytes: overlapping blocks, no loop) and long
/// paths of `write_str`, plain and with one escape at the end, written after other bytes into a
/// buffer with no spare room, so each write has to grow it.
#[test]
fn plain_texts_of_every_length_are_copied_whole() {
    let units = ["a", "é", "€", "😀", " ", "\u{7f}"];
    for len in 0..80 {
        let text: String = (0..len)
            .map(|i| units[(i * 7 + len) % units.len()])
            .collect();
        for with_escape in [false, true] {
            let text = if with_escape {
                format!("{text}\n")
            } else {
                text.clone()
            };
            let mut out = b"x".to_vec();
            out.shrink_to_fit();
            write_str(&mut out, &text);
            let expected = format!("x\"{}\"", text.replace('\n', "\\n"));
            assert_eq!(String::from_utf8(out).unwrap(), expected, "len {len}");
        }
    }
}
