//! Unit tests of the envelope scan and classification.

use super::rules::*;
use super::*;

fn items(frame: &[u8]) -> Vec<Item> {
    let mut out = Vec::new();
    validate(frame, true, &mut out);
    out
}

fn one(frame: &[u8]) -> Item {
    let mut v = items(frame);
    assert_eq!(v.len(), 1, "{:?}", String::from_utf8_lossy(frame));
    v.pop().unwrap()
}

fn msg(frame: &[u8]) -> Envelope {
    match one(frame) {
        Item::Message(e) => e,
        Item::Failure(f) => panic!("{:?}: {}", String::from_utf8_lossy(frame), f.message),
    }
}

fn fail(frame: &[u8]) -> Failure {
    match one(frame) {
        Item::Failure(f) => f,
        Item::Message(e) => panic!("{:?}: {:?}", String::from_utf8_lossy(frame), e),
    }
}

fn slice<'a>(frame: &'a [u8], r: &Option<Range<usize>>) -> &'a [u8] {
    &frame[r.clone().unwrap()]
}

#[test]
fn request_spans() {
    let f = br#" {"jsonrpc":"2.0","id": 7 ,"method":"tools/call","params":{"a":[1,2]}} "#;
    let e = msg(f);
    assert_eq!(e.kind, Kind::Request);
    assert_eq!(e.id, Some(Id::Int(7)));
    assert_eq!(e.method.as_ref().unwrap().as_str(f), "tools/call");
    assert_eq!(e.raw, 0..f.len());
    assert_eq!(slice(f, &e.raw_id), b"7");
    assert_eq!(slice(f, &e.raw_params), br#"{"a":[1,2]}"#);
    assert_eq!((e.raw_result, e.raw_error, e.batch), (None, None, None));
}

#[test]
fn kinds() {
    assert_eq!(
        msg(br#"{"jsonrpc":"2.0","method":"x"}"#).kind,
        Kind::Notification
    );
    assert_eq!(
        msg(br#"{"jsonrpc":"2.0","method":"x","params":[]}"#).kind,
        Kind::Notification
    );
    let r = br#"{"jsonrpc":"2.0","id":"a","result":null}"#;
    let e = msg(r);
    assert_eq!(e.kind, Kind::Result);
    assert_eq!(slice(r, &e.raw_result), b"null");
    assert_eq!(e.id, Some(Id::Str(Text::Span(23..24))));
    let er = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m","data":[{}]}}"#;
    let e = msg(er);
    assert_eq!((e.kind, e.id.clone()), (Kind::Error, None));
    assert_eq!(slice(er, &e.raw_id), b"null");
    assert_eq!(
        slice(er, &e.raw_error),
        br#"{"code":-1,"message":"m","data":[{}]}"#
    );
}

#[test]
fn escaped_and_big_ids() {
    let f = br#"{"jsonrpc":"2.0","id":"a\u00e9\"","method":"m\/x"}"#;
    let e = msg(f);
    assert_eq!(e.id, Some(Id::Str(Text::Owned("a\u{e9}\"".into()))));
    assert_eq!(e.method, Some(Text::Owned("m/x".into())));
    let big = br#"{"jsonrpc":"2.0","id":-123456789012345678901234567890,"result":1}"#;
    let e = msg(big);
    assert_eq!(slice(big, &e.raw_id), b"-123456789012345678901234567890");
    assert!(matches!(e.id, Some(Id::Big(_))));
    assert_eq!(
        msg(br#"{"jsonrpc":"2.0","id":-0,"result":1}"#).id,
        Some(Id::Int(0))
    );
}

#[test]
fn escaped_keys_and_duplicates() {
    let e = msg(br#"{"jsonrpc":"2.0","\u006dethod":"x","id":true,"id":3}"#);
    assert_eq!((e.kind, e.id), (Kind::Request, Some(Id::Int(3))));
    let f = fail(br#"{"jsonrpc":"2.0","method":"x","id":3,"id":1.5}"#);
    assert_eq!(f.message, ID_TYPE);
}

#[test]
fn frame_level_failures() {
    let f = fail(b"{\"a\":\"\xff\"}");
    assert_eq!(
        (f.code, f.message.as_ref()),
        (
            PARSE_ERROR,
            "Parse error: invalid UTF-8 at byte 6 of the frame"
        )
    );
    let deep = [vec![b'['; 129], vec![b']'; 129]].concat();
    assert_eq!(
        fail(&deep).message,
        "Parse error: nesting deeper than 128 levels"
    );
    for bad in [
        &b"{"[..],
        b"{\"a\":1,}",
        b"[1,]",
        b"{} x",
        b"NaN",
        b"[Infinity]",
        b"{\"a\":\"\\ud800\"}",
        b"{\"a\":\"\\udc00\"}",
        b"\"a\tb\"",
        b"01",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\":tru}}",
        b"\xEF\xBB\xBF{}",
    ] {
        let f = fail(bad);
        assert_eq!(
            (f.code, f.message.as_ref(), f.id.clone()),
            (PARSE_ERROR, INVALID_JSON, None),
            "{bad:?}"
        );
    }
    for not_object in [&b"1"[..], b"\"x\"", b"null", b" 1e400 "] {
        let f = fail(not_object);
        assert_eq!((f.code, f.message.as_ref()), (INVALID_REQUEST, NOT_OBJECT));
    }
}

#[test]
fn envelope_rules_in_order() {
    let cases: &[(&[u8], &str)] = &[
        (br#"{"id":1,"method":"x"}"#, NO_JSONRPC),
        (br#"{"jsonrpc":2.0,"method":"x"}"#, BAD_JSONRPC),
        (br#"{"jsonrpc":"1.0","method":"x"}"#, BAD_JSONRPC),
        (br#"{"jsonrpc":"2.0","method":1,"result":1}"#, METHOD_TYPE),
        (br#"{"jsonrpc":"2.0","method":null}"#, METHOD_TYPE),
        (
            br#"{"jsonrpc":"2.0","method":"x","error":1,"params":1}"#,
            REQUEST_RESULT,
        ),
        (
            br#"{"jsonrpc":"2.0","method":"x","params":1,"id":null}"#,
            PARAMS_TYPE,
        ),
        (
            br#"{"jsonrpc":"2.0","method":"x","params":null}"#,
            PARAMS_TYPE,
        ),
        (
            br#"{"jsonrpc":"2.0","method":"x","id":null}"#,
            NULL_REQUEST_ID,
        ),
        (br#"{"jsonrpc":"2.0","method":"x","id":false}"#, ID_TYPE),
        (br#"{"jsonrpc":"2.0","method":"x","id":1.0}"#, ID_TYPE),
        (br#"{"jsonrpc":"2.0","method":"x","id":[1]}"#, ID_TYPE),
        (br#"{"jsonrpc":"2.0","result":1,"error":{}}"#, BOTH),
        (br#"{"jsonrpc":"2.0","id":1}"#, NEITHER),
        (br#"{"jsonrpc":"2.0","result":1}"#, NO_ID),
        (br#"{"jsonrpc":"2.0","result":1,"id":{}}"#, ID_TYPE),
        (br#"{"jsonrpc":"2.0","result":1,"id":null}"#, NULL_RESULT_ID),
        (br#"{"jsonrpc":"2.0","error":[],"id":1}"#, ERROR_TYPE),
        (
            br#"{"jsonrpc":"2.0","error":{"message":"m"},"id":1}"#,
            CODE_TYPE,
        ),
        (
            br#"{"jsonrpc":"2.0","error":{"code":1.5,"message":"m"},"id":1}"#,
            CODE_TYPE,
        ),
        (
            br#"{"jsonrpc":"2.0","error":{"code":"1","message":"m"},"id":1}"#,
            CODE_TYPE,
        ),
        (
            br#"{"jsonrpc":"2.0","error":{"code":1},"id":1}"#,
            MESSAGE_TYPE,
        ),
        (
            br#"{"jsonrpc":"2.0","error":{"code":1,"message":null},"id":1}"#,
            MESSAGE_TYPE,
        ),
    ];
    for (frame, expected) in cases {
        let f = fail(frame);
        assert_eq!(
            (f.code, f.message.as_ref()),
            (INVALID_REQUEST, *expected),
            "{:?}",
            String::from_utf8_lossy(frame)
        );
    }
    let e =
        msg(br#"{"jsonrpc":"2.0","error":{"code":99999999999999999999999,"message":"m"},"id":1}"#);
    assert_eq!(e.kind, Kind::Error);
}

#[test]
fn failure_id_and_notification_flag() {
    let f = fail(br#"{"jsonrpc":"1.0","method":"x","id":"q"}"#);
    assert_eq!(
        (f.id, f.notification),
        (Some(OwnedId::Str("q".into())), false)
    );
    // an invalid notification is an Invalid Request like any other (JSON-RPC 2.0 section 5)
    let f = fail(br#"{"jsonrpc":"1.0","method":"x"}"#);
    assert_eq!((f.id, f.notification), (None, false));
    let f = fail(br#"{"method":"x","params":3}"#);
    assert!(!f.notification);
    let f = fail(br#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#);
    assert_eq!(
        (f.code, f.id, f.notification),
        (INVALID_REQUEST, None, false)
    );
    let f = fail(br#"{"jsonrpc":"2.0","resul":1,"id":12345678901234567890123}"#);
    assert_eq!(f.id, Some(OwnedId::Big("12345678901234567890123".into())));
    assert!(!fail(b"[1]").notification);
}

#[test]
fn batches() {
    let f = br#"[ {"jsonrpc":"2.0","method":"a"} , 5, [], {"jsonrpc":"2.0","id":2,"result":{}}]"#;
    let v = items(f);
    assert_eq!(v.len(), 4);
    let Item::Message(a) = &v[0] else { panic!() };
    assert_eq!(
        (&f[a.raw.clone()], a.batch),
        (&br#"{"jsonrpc":"2.0","method":"a"}"#[..], Some(0))
    );
    let Item::Failure(b) = &v[1] else { panic!() };
    assert_eq!(
        (b.message.as_ref(), b.start, b.batch, b.preview.as_slice()),
        (NOT_OBJECT, 35, Some(1), &b"5"[..])
    );
    let Item::Failure(c) = &v[2] else { panic!() };
    assert_eq!((c.message.as_ref(), c.batch), (NOT_OBJECT, Some(2)));
    let Item::Message(d) = &v[3] else { panic!() };
    assert_eq!((d.kind, d.batch), (Kind::Result, Some(3)));
    assert_eq!(fail(b" [ ] ").message, EMPTY_BATCH);
    assert_eq!(fail(b"[{},1,]").message, INVALID_JSON);
    let mut out = Vec::new();
    validate(br#"[{"jsonrpc":"2.0","method":"a"}]"#, false, &mut out);
    assert!(matches!(&out[..], [Item::Failure(f)] if f.message == NO_BATCHES && f.batch.is_none()));
}

/// A `Payloads` that builds the text of each value, to check what the scan hands it.
struct Texts;

impl Payloads for Texts {
    type Value = String;
    fn take(&mut self, frame: &[u8], at: usize, levels: usize) -> Scan<(Option<String>, usize)> {
        let end = scan::skip_nested(frame, at, levels)?;
        let text = String::from_utf8_lossy(&frame[at..end]).into_owned();
        Ok((Some(text), end))
    }
}

#[test]
fn payloads_are_built_during_the_scan() {
    let mut out = Vec::new();
    let f = br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1]}}"#;
    validate_with(f, true, &mut Texts, &mut out);
    assert!(matches!(&out[..], [Item::Message(e)] if e.payload.as_deref() == Some(r#"{"a":[1]}"#)));
    out.clear();
    let r = br#"[{"jsonrpc":"2.0","id":1,"result":"x","params":[2]},{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}]"#;
    validate_with(r, true, &mut Texts, &mut out);
    assert!(matches!(&out[0], Item::Message(e) if e.payload.as_deref() == Some("\"x\"")));
    assert!(matches!(&out[1], Item::Message(e) if e.payload.is_none()));
    out.clear();
    // a bad value anywhere makes the whole frame invalid, whatever was built before it
    validate_with(
        br#"{"jsonrpc":"2.0","id":1,"result":[1],"x":[}"#,
        true,
        &mut Texts,
        &mut out,
    );
    assert!(matches!(&out[..], [Item::Failure(f)] if f.message == INVALID_JSON));
}

#[test]
fn invalid_utf8_index() {
    assert_eq!(invalid_utf8_at("é日😀".as_bytes()), None);
    assert_eq!(invalid_utf8_at(b"ab\xc3"), Some(2));
    assert_eq!(invalid_utf8_at(b"\xed\xa0\x80"), Some(0));
}

#[test]
fn invalid_utf8_index_matches_std_everywhere() {
    // a chunk cut inside a character, or bad bytes at every place of a 64-byte run of mixed text
    let text = "ab é日😀 cd ".repeat(4);
    let bad: [&[u8]; 6] = [
        b"\xc3",
        b"\xff",
        b"\xed\xa0\x80",
        b"\xe6\x97",
        b"\xf0\x9f\x98",
        b"\x80",
    ];
    for cut in 0..=text.len() {
        for b in bad {
            let mut bytes = text.as_bytes()[..cut].to_vec();
            bytes.extend_from_slice(b);
            bytes.extend_from_slice(&text.as_bytes()[cut..]);
            let want = std::str::from_utf8(&bytes).err().map(|e| e.valid_up_to());
            assert_eq!(invalid_utf8_at(&bytes), want, "{bytes:?}");
        }
    }
}

#[test]
fn integer_ids_read_like_str_parse() {
    for literal in [
        "0",
        "-0",
        "7",
        "-42",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "123456789012345678901234567890",
    ] {
        let want = literal.parse::<i64>().ok();
        assert_eq!(walk::int_literal(literal.as_bytes()), want, "{literal}");
    }
}

#[test]
fn preview_is_first_bytes() {
    let mut frame = br#"{"jsonrpc":"2.0","method":"x","params":["#.to_vec();
    frame.extend(std::iter::repeat_n(b'1', 100));
    let f = fail(&frame);
    assert_eq!(f.preview, frame[..PREVIEW_BYTES].to_vec());
}

/// `n` digits (the first one not a zero).
fn digits(n: usize) -> String {
    format!("1{}", "7".repeat(n - 1))
}

#[test]
fn long_integer_message_names_the_limit() {
    let expected = format!(
        "Invalid Request: integer literal longer than {} digits",
        crate::digits::MAX_INT_DIGITS
    );
    assert_eq!(LONG_INTEGER, expected);
}

#[test]
fn integers_at_the_limit_are_fine() {
    let n = digits(crate::digits::MAX_INT_DIGITS);
    let f = format!(r#"{{"jsonrpc":"2.0","id":-{n},"method":"m","params":[{n}]}}"#);
    let e = msg(f.as_bytes());
    assert_eq!(e.kind, Kind::Request);
    assert!(matches!(e.id, Some(Id::Big(_))));
}

#[test]
fn a_long_integer_anywhere_fails_the_message() {
    let n = digits(crate::digits::MAX_INT_DIGITS + 1);
    let cases = [
        (
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"m","params":[{n}]}}"#),
            Some(OwnedId::Int(7)),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":"a","result":{{"x":[-{n}]}}}}"#),
            Some(OwnedId::Str("a".into())),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":-{n},"method":"m"}}"#),
            None,
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":{n},"message":"m"}}}}"#),
            Some(OwnedId::Int(1)),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":1,"message":"m","data":{n}}}}}"#),
            Some(OwnedId::Int(1)),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","other":{n}}}"#),
            Some(OwnedId::Int(1)),
        ),
    ];
    for (frame, id) in cases {
        let f = fail(frame.as_bytes());
        assert_eq!(
            (f.code, f.message.as_ref()),
            (INVALID_REQUEST, LONG_INTEGER),
            "{frame:.60}"
        );
        assert_eq!((f.id, f.notification), (id, false));
        assert_eq!((f.start, f.end), (0, frame.len()));
        assert_eq!(f.preview, &frame.as_bytes()[..PREVIEW_BYTES]);
    }
    let f = fail(format!(r#"{{"jsonrpc":"2.0","method":"m","params":{{"n":{n}}}}}"#).as_bytes());
    assert!(f.notification, "a valid notification rejected by the limit");
}

#[test]
fn other_failures_come_first() {
    let n = digits(5000);
    // invalid JSON elsewhere: a parse error
    let f = fail(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":[{n}],}}"#).as_bytes());
    assert_eq!((f.code, f.message.as_ref()), (PARSE_ERROR, INVALID_JSON));
    // not an object, or an invalid envelope: those messages, with the id only when it is short
    let f = fail(format!("[{n}]").as_bytes());
    assert_eq!((f.message.as_ref(), f.batch), (NOT_OBJECT, Some(0)));
    let f = fail(format!(r#"{{"jsonrpc":"2.0","id":{n},"method":1}}"#).as_bytes());
    assert_eq!(
        (f.message.as_ref(), f.id, f.notification),
        (METHOD_TYPE, None, false)
    );
    let f = fail(format!(r#"{{"jsonrpc":"2.0","id":"x","method":"m","result":{n}}}"#).as_bytes());
    assert_eq!(
        (f.message.as_ref(), f.id),
        (REQUEST_RESULT, Some(OwnedId::Str("x".into())))
    );
}

#[test]
fn long_integers_fail_only_their_batch_element() {
    let n = digits(100_000);
    let frame = format!(
        r#"[{{"jsonrpc":"2.0","id":1,"method":"a"}}, {{"jsonrpc":"2.0","id":2,"method":"b","params":[{n}]}}, {{"jsonrpc":"2.0","method":"c","params":[{n}.5, "{n}"]}}]"#
    );
    let v = items(frame.as_bytes());
    assert_eq!(v.len(), 3);
    let (Item::Message(a), Item::Failure(b), Item::Message(c)) = (&v[0], &v[1], &v[2]) else {
        panic!("{v:?}");
    };
    assert_eq!(
        (a.id.clone(), c.kind),
        (Some(Id::Int(1)), Kind::Notification)
    );
    assert_eq!(
        (b.message.as_ref(), b.id.clone(), b.batch),
        (LONG_INTEGER, Some(OwnedId::Int(2)), Some(1))
    );
    assert_eq!(
        &frame.as_bytes()[b.start..b.end],
        &frame.as_bytes()[a.raw.end + 2..c.raw.start - 2]
    );
    // the spans of the message after it point into the original frame
    assert!(frame.as_bytes()[c.raw.clone()].ends_with(b"\"]}"));
}

#[test]
fn long_integers_with_batches_refused() {
    let n = digits(5000);
    let mut out = Vec::new();
    validate(format!("[{{\"x\":{n}}}]").as_bytes(), false, &mut out);
    let [Item::Failure(f)] = out.as_slice() else {
        panic!("{out:?}");
    };
    assert_eq!((f.message.as_ref(), f.batch), (NO_BATCHES, None));
}

#[test]
fn a_bare_long_integer_element_spans_the_whole_literal() {
    let n = digits(4301);
    let frame = format!(r#"[-{n} , {{"jsonrpc":"2.0","method":"x"}}]"#);
    let v = items(frame.as_bytes());
    let [Item::Failure(f), Item::Message(m)] = v.as_slice() else {
        panic!("{v:?}");
    };
    assert_eq!((f.message.as_ref(), f.batch), (NOT_OBJECT, Some(0)));
    assert_eq!(
        &frame.as_bytes()[f.start..f.end],
        format!("-{n}").as_bytes()
    );
    assert_eq!(f.preview, frame.as_bytes()[1..1 + PREVIEW_BYTES].to_vec());
    assert_eq!(m.kind, Kind::Notification);
}

#[test]
fn envelope_keys_fast_path_agrees_with_the_full_key_scan() {
    let names = [
        "jsonrpc",
        "method",
        "id",
        "params",
        "result",
        "error",
        "i",
        "idx",
        "ids",
        "param",
        "params2",
        "jsonrpc ",
        "e",
        "errors",
        "m",
        "resul",
        "j",
        "meth\\u006fd",
        "i\\u0064",
        "x",
        "",
        "r\\\"",
        "p\\n",
    ];
    let ends = [":1", " : 1", "\t:\n1", "1", " ", "", ",", "\"", "\" :"];
    for name in names {
        for end in ends {
            // with the rest of a frame after it (the 8-byte fast path) and without (cut short)
            for (close, rest) in [
                ("\"", ""),
                ("", ""),
                ("\"", ",\"more\":[1]}"),
                ("", ",\"z\":1}"),
            ] {
                let text = format!("\"{name}{close}{end}{rest}");
                let d = text.as_bytes();
                let slow = walk::key(d, 0).map(|(t, at)| (walk::field(t.as_bytes(d)), at));
                assert_eq!(walk::field_key(d, 0), slow, "{text:?}");
            }
        }
    }
    // names cut by the end of the frame, and a control byte inside a name
    for text in [
        "\"jsonrpc",
        "\"id",
        "\"i",
        "\"",
        "\"method\u{1}\":1",
        "x\"id\":1",
    ] {
        let d = text.as_bytes();
        let slow = walk::key(d, 0).map(|(t, at)| (walk::field(t.as_bytes(d)), at));
        assert_eq!(walk::field_key(d, 0), slow, "{text:?}");
    }
}

/// What a frame yields, without positions: for comparing frames that differ only in whitespace.
fn summary(frame: &[u8]) -> Vec<String> {
    let text = |r: &Option<Range<usize>>| r.clone().map(|r| String::from_utf8_lossy(&frame[r]));
    items(frame)
        .into_iter()
        .map(|item| match item {
            Item::Message(e) => format!(
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                e.kind,
                e.id.map(|id| id.owned(frame)),
                e.method.map(|m| m.as_str(frame).to_owned()),
                text(&e.raw_params),
                text(&e.raw_result),
                text(&e.raw_error),
                e.batch,
            ),
            Item::Failure(f) => format!("{} {} {:?} {:?}", f.code, f.message, f.id, f.batch),
        })
        .collect()
}

#[test]
fn the_compact_jsonrpc_head_reads_like_any_other_spelling() {
    let rests = [
        r#""id":1,"method":"m","params":{"a":[1,"x"]}}"#,
        r#""method":"n"}"#,
        r#""id":"r","result":null}"#,
        r#""id":2,"error":{"code":-1,"message":"m"}}"#,
        r#""jsonrpc":"1.0","id":1,"result":2}"#,
        r#""id":1,"jsonrpc":"2.0","result":2}"#,
        r#" "id" : 3 , "result" : [] }"#,
        r#"}"#,
        r#","id":1,"result":1}"#,
        r#""id":1,"result":1"#,
        r#""id":1,"result":1}}"#,
        r#""id":1,"result":1} x"#,
        r#""id":01,"result":1}"#,
        "",
        " ",
    ];
    for rest in rests {
        for (before, after) in [("", ""), (" \t", "\r "), ("[", "]"), ("[{}, ", "]")] {
            // the block compare reads `{"jsonrpc":"2.0",`; a space before the comma makes the
            // scan read the same member member by member
            let compact = format!(r#"{before}{{"jsonrpc":"2.0",{rest}{after}"#);
            let spaced = format!(r#"{before}{{"jsonrpc":"2.0" ,{rest}{after}"#);
            let (c, s) = (compact.as_bytes(), spaced.as_bytes());
            assert_eq!(summary(c), summary(s), "{compact:?}");
        }
    }
    // near misses of the head take the member-by-member path and are judged as before
    assert_eq!(
        fail(br#"{"jsonrpc":"2.1","id":1,"result":1}"#).message,
        BAD_JSONRPC
    );
    assert_eq!(
        fail(br#"{"jsonrpc":"2.0"}"#.as_slice()).code,
        INVALID_REQUEST
    );
    assert_eq!(fail(br#"{"jsonrpc":"2.0","#).code, PARSE_ERROR);
    assert_eq!(
        fail(br#"{"jsonrpc":"2.0",,"id":1,"result":1}"#).code,
        PARSE_ERROR
    );
}

/// `n` nested arrays, the innermost empty (`[[...[]...]]`), or holding `inner`.
fn nest(n: usize, inner: &str) -> String {
    format!("{}{inner}{}", "[".repeat(n), "]".repeat(n))
}

#[test]
fn depth_is_bounded_wherever_the_nesting_is() {
    // the scan bounds each value by what is left of the limit where it sits (the envelope object
    // or the batch is level 1): exactly 128 levels pass, 129 are the depth failure, in every place
    // a value can be, with an empty innermost container counted like any other
    let frames = |n: usize| {
        [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}}}"#,
                nest(n - 1, "")
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
                nest(n - 2, "{}")
            ),
            format!(r#"{{"jsonrpc":"2.0","id":{},"result":1}}"#, nest(n - 1, "")),
            format!(
                r#"{{"x":{},"jsonrpc":"2.0","id":1,"result":1}}"#,
                nest(n - 1, "")
            ),
            format!(r#"{{"jsonrpc":{},"id":1,"method":"m"}}"#, nest(n - 1, "")),
            format!(r#"{{"jsonrpc":"2.0","method":{}}}"#, nest(n - 1, "")),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":1,"message":"m","data":{}}}}}"#,
                nest(n - 2, "")
            ),
            format!(r#"{{"jsonrpc":"2.0","id":1,"error":{}}}"#, nest(n - 1, "")),
            format!(
                r#"[{{"jsonrpc":"2.0","method":"m","params":{}}}]"#,
                nest(n - 2, "")
            ),
            format!(r#"[{}]"#, nest(n - 1, "")),
            nest(n, ""),
        ]
    };
    for (within, over) in frames(MAX_DEPTH).iter().zip(frames(MAX_DEPTH + 1).iter()) {
        let deep = fail(over.as_bytes());
        assert_eq!(
            (deep.code, deep.message.as_ref()),
            (PARSE_ERROR, "Parse error: nesting deeper than 128 levels"),
            "{over}"
        );
        for item in items(within.as_bytes()) {
            if let Item::Failure(f) = item {
                assert!(!f.message.contains("nesting"), "{within}: {}", f.message);
            }
        }
    }
    // the depth failure still comes before a syntax error met earlier in the frame
    let early = format!(r#"{{"a":x,"b":{}}}"#, nest(MAX_DEPTH, ""));
    assert_eq!(fail(early.as_bytes()).code, PARSE_ERROR);
    assert!(fail(early.as_bytes()).message.contains("nesting"));
    // and so for a frame gathered from several chunks (its brackets counted by the framer)
    let mut out: Vec<Item> = Vec::new();
    let over = nest(MAX_DEPTH + 1, "");
    let counted = (true, MAX_DEPTH + 1);
    validate_counted(
        over.as_bytes(),
        counted,
        true,
        &mut Skip::default(),
        &mut out,
    );
    assert!(matches!(&out[..], [Item::Failure(f)] if f.message.contains("nesting")));
}

#[test]
fn ids_read_whole_frames_like_str_parse() {
    // the short-integer path and `number_end` agree, at the 18-digit edge and beyond
    let mut literals: Vec<String> = ["0", "-0", "7", "-42", "1.5", "1e3", "10E2", "01", "1x"]
        .map(String::from)
        .to_vec();
    for digits in 1..=21 {
        literals.push("9".repeat(digits));
        literals.push(format!("1{}", "0".repeat(digits - 1)));
    }
    for literal in literals {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":{literal},"result":1}}"#);
        let got = items(frame.as_bytes());
        let valid_json = is_json_number(&literal);
        match (&got[..], literal.parse::<i64>()) {
            ([Item::Message(e)], Ok(v)) => assert_eq!(e.id, Some(Id::Int(v)), "{literal}"),
            ([Item::Message(e)], Err(_)) => {
                assert!(matches!(e.id, Some(Id::Big(_))), "{literal}")
            }
            ([Item::Failure(f)], _) if !valid_json => assert_eq!(f.message, INVALID_JSON),
            ([Item::Failure(f)], _) => assert_eq!(f.message, ID_TYPE, "{literal}"),
            _ => panic!("{literal}: {got:?}"),
        }
    }
}

/// Whether `literal` is a JSON number (the cases of the test above).
fn is_json_number(literal: &str) -> bool {
    !(literal == "01" || literal == "1x")
}
