//! The scanner agrees with `jiter` (a complete JSON parser) on what is valid, over hand-picked
//! texts and every one-byte edit of them.

use super::*;
use jiter::Jiter;

/// Valid by the scanner: one value, whitespace around it.
fn ours(text: &[u8]) -> bool {
    let start = ws(text, 0);
    skip_value(text, start).is_ok_and(|end| ws(text, end) == text.len())
}

fn theirs(text: &[u8]) -> bool {
    let mut j = Jiter::new(text);
    j.next_skip().is_ok() && j.finish().is_ok()
}

const SAMPLES: &[&str] = &[
    r#"{"a":[1,2.5,-0,1e5,1E+2,-3.25e-7,true,false,null],"b":{"c":"d\n\u00e9\ud83d\ude00"}}"#,
    r#" [ {} , [] , "" , 0 , "x\"y\\z\/" ] "#,
    r#"{"k":"v","k":{"x":[[[]]]}}"#,
    r#""\u0041\uD834\uDD1E plain é text that is longer than eight bytes""#,
    "123456789012345678901234567890",
    r#"{"a" : 1 , "b" :	2}"#,
    // keys whose closing quote and colon meet (or nearly): escaped quotes before a colon, a colon
    // inside a key, keys past the first sixteen bytes of the search
    r#"{"k\":":{"\\":[],"x:":1,"a long key past sixteen bytes":{"\u0022":"v"}},"":0}"#,
];

const INVALID: &[&str] = &[
    "",
    " ",
    "01",
    "1.",
    ".5",
    "1e",
    "1e+",
    "-",
    "+1",
    "NaN",
    "Infinity",
    "-Infinity",
    "tru",
    "nul",
    "[1,]",
    "{\"a\":1,}",
    "{\"a\"}",
    "{a:1}",
    "[1 2]",
    "\"abc",
    "\"\\x\"",
    "\"\\u12\"",
    "\"\\ud800\"",
    "\"\\udc00\"",
    "\"\\ud800\\u0041\"",
    "\"\\ud800x\"",
    "\"a\u{1}b\"",
    "[",
    "]",
    "{",
    "}",
    "[1]]",
    "{}}",
    "\"\\\"",
    "'a'",
    "[1,,2]",
    "{\"a\":1 \"b\":2}",
    "1 2",
];

#[test]
fn samples_agree() {
    for text in SAMPLES {
        assert!(ours(text.as_bytes()), "{text}");
        assert!(theirs(text.as_bytes()), "{text}");
    }
    for text in INVALID {
        assert!(!ours(text.as_bytes()), "{text:?}");
        assert_eq!(ours(text.as_bytes()), theirs(text.as_bytes()), "{text:?}");
    }
}

#[test]
fn one_byte_edits_agree() {
    let alphabet = b"\"\\/{}[],:0123456789-+.eEtrufalsn \t\r\nxu\x01\x1f\x7fdD";
    for text in SAMPLES {
        let text = text.as_bytes();
        for at in 0..=text.len() {
            for &b in alphabet {
                let mut changed = text.to_vec();
                changed[at.min(text.len() - 1)] = b;
                let mut inserted = text.to_vec();
                inserted.insert(at, b);
                let mut removed = text.to_vec();
                removed.remove(at.min(text.len() - 1));
                for edit in [changed, inserted, removed] {
                    let shown = String::from_utf8_lossy(&edit);
                    assert_eq!(ours(&edit), theirs(&edit), "{shown:?}");
                }
            }
        }
    }
}

#[test]
fn string_and_number_ends() {
    assert_eq!(string_end(br#""abc" "#, 1), Ok((5, false)));
    assert_eq!(string_end(br#""a\nbcdefghijklmnop""#, 1), Ok((20, true)));
    assert_eq!(number_end(b"-12,", 0), Ok((3, true)));
    assert_eq!(number_end(b"1.5]", 0), Ok((3, false)));
    assert_eq!(number_end(b"2e3", 0), Ok((3, false)));
}

#[test]
fn nesting_is_bounded() {
    let deep = |n: usize| {
        let mut v = vec![b'['; n];
        v.extend(std::iter::repeat_n(b']', n));
        v
    };
    // the innermost container counts even when empty
    assert!(ours(&deep(STACK_BITS)));
    assert!(!ours(&deep(STACK_BITS + 1)));
    let objects = |n: usize| {
        let mut v = b"{\"a\":".repeat(n - 1);
        v.extend(b"{}");
        v.extend(std::iter::repeat_n(b'}', n - 1));
        v
    };
    assert!(ours(&objects(STACK_BITS)));
    assert!(!ours(&objects(STACK_BITS + 1)));
    // a budget below the cap, as the envelope scan passes it
    for levels in [1, 5] {
        assert_eq!(skip_nested(&deep(levels), 0, levels), Ok(2 * levels));
        assert_eq!(skip_nested(&deep(levels + 1), 0, levels), Err(Invalid));
    }
    assert_eq!(skip_nested(b"1", 0, 0), Ok(1));
    assert_eq!(skip_nested(b"[]", 0, 0), Err(Invalid));
}

#[test]
fn next_special_finds_the_first() {
    let naive = |d: &[u8], i: usize| {
        (i..d.len())
            .find(|&k| d[k] == b'"' || d[k] == b'\\' || d[k] < 0x20)
            .unwrap_or(d.len())
    };
    // lengths through every path of the SSE2 scan: the first 16, blocks of 32, a last 16, the tail
    for len in 0..88 {
        for fill in [b'a', 0x20, 0x7f, 0x80, 0xff, 0x21, 0x23, 0x5b, 0x5d] {
            let base = vec![fill; len];
            assert_eq!(next_special(&base, 0), len);
            // from every start, the last sixteen bytes (the tail read) included
            for start in 0..=len {
                assert_eq!(next_special(&base, start), len);
            }
            for pos in 0..len {
                for mark in [b'"', b'\\', 0x00, 0x1f, 0x0a] {
                    let mut d = base.clone();
                    d[pos] = mark;
                    // every start: a mark before it inside the last sixteen bytes is shifted out
                    for start in 0..=len {
                        assert_eq!(next_special(&d, start), naive(&d, start));
                        // the word-at-a-time search of other targets
                        assert_eq!(next_special_8(&d, start), naive(&d, start));
                    }
                }
            }
        }
    }
}

#[test]
fn integers_beyond_the_digit_limit_are_refused() {
    let at_limit = "9".repeat(MAX_INT_DIGITS);
    let over = "9".repeat(MAX_INT_DIGITS + 1);
    for (text, ok) in [
        (at_limit.clone(), true),
        (format!("-{at_limit}"), true),
        (over.clone(), false),
        (format!("-{over}"), false),
        (format!("{over}.5"), true),
        (format!("{over}e3"), true),
        (format!("0.{over}"), true),
    ] {
        assert_eq!(ours(text.as_bytes()), ok, "{:.20}", text);
        assert_eq!(number_end(text.as_bytes(), 0).is_ok(), ok, "{:.20}", text);
        // the shape has no limit: it is how over-long literals are found
        assert!(number_shape(text.as_bytes(), 0).is_ok_and(|(end, _)| end == text.len()));
    }
    let (_, digits) = number_shape(format!("-{over}").as_bytes(), 0).unwrap();
    assert_eq!(digits, Some(MAX_INT_DIGITS + 1));
}
