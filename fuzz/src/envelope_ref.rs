//! The validation steps of the core contract for one frame, restated on top of `serde_json` (an
//! independent, strict RFC 8259 parser), and the check that `envelope::validate` agrees with
//! them: same items in the same order, same codes, messages, ids, previews, batch indices, and
//! member spans whose bytes parse to the members' values. It states the contract as revised by
//! issue 17: invalid notifications are not notifications, and integer literals are limited.

use std::ops::Range;

use mcpframe_core::depth::{self, MAX_DEPTH};
use mcpframe_core::envelope::{
    validate, validate_counted, Envelope, Failure, Id, Item, Kind, OwnedId, Skip,
};
use mcpframe_core::framing::PREVIEW_BYTES;
use mcpframe_core::splice::{splice_id, SpliceError};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

mod judge;
mod scans;

pub use scans::{deeper_than, long_int_literal, MAX_INT_DIGITS};

/// An id as both sides can state it: an integer's canonical decimal text, or a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdText {
    /// An integer (its decimal form; `-0` is `0`).
    Int(String),
    /// A string.
    Str(String),
}

/// What the contract says one frame or element yields.
#[derive(Debug)]
pub enum Expect {
    /// A valid message of this kind, with these members, spanning `raw`.
    Message {
        kind: Kind,
        members: Map<String, Value>,
        raw: Range<usize>,
        batch: Option<u32>,
    },
    /// An invalid frame or element.
    Failure {
        code: i64,
        message: String,
        /// `None` when the contract leaves the id unspecified (an over-long integer id in an
        /// envelope failure): then it is not compared.
        id: Option<Option<IdText>>,
        raw: Range<usize>,
        batch: Option<u32>,
        notification: bool,
    },
}

fn parse_error(frame: &[u8], message: String) -> Vec<Expect> {
    vec![Expect::Failure {
        code: -32700,
        message,
        id: Some(None),
        raw: 0..frame.len(),
        batch: None,
        notification: false,
    }]
}

/// Parse `frame` as one JSON text with no depth limit (the caller checked the depth).
fn parse<'a, T: Deserialize<'a>>(frame: &'a [u8]) -> Option<T> {
    let mut de = serde_json::Deserializer::from_slice(frame);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

/// Steps 1 to 6 of "Validation of one frame", and "Batches".
pub fn expect(frame: &[u8], batches: bool) -> Vec<Expect> {
    if let Err(e) = std::str::from_utf8(frame) {
        let at = e.valid_up_to();
        return parse_error(
            frame,
            format!("Parse error: invalid UTF-8 at byte {at} of the frame"),
        );
    }
    if deeper_than(frame, MAX_DEPTH) {
        return parse_error(
            frame,
            format!("Parse error: nesting deeper than {MAX_DEPTH} levels"),
        );
    }
    let Some(value) = parse::<Value>(frame) else {
        return parse_error(frame, "Parse error: invalid JSON".into());
    };
    let whole = 0..frame.len();
    match value {
        Value::Object(members) => vec![judge::judge(members, frame, whole, None)],
        Value::Array(elements) if batches && !elements.is_empty() => {
            let raws: Vec<&RawValue> = parse(frame).expect("an array parses as raw values");
            let spans = raws.iter().map(|r| {
                let start = r.get().as_ptr() as usize - frame.as_ptr() as usize;
                start..start + r.get().len()
            });
            let indexed = elements.into_iter().zip(spans).zip(0u32..);
            indexed
                .map(|((element, raw), index)| match element {
                    Value::Object(m) => judge::judge(m, frame, raw, Some(index)),
                    _ => judge::invalid(judge::NOT_OBJECT, None, raw, Some(index)),
                })
                .collect()
        }
        Value::Array(elements) => {
            let message = if batches {
                "Invalid Request: empty batch"
            } else {
                "Invalid Request: batches are not supported"
            };
            debug_assert!(!batches || elements.is_empty());
            vec![judge::invalid(message, None, whole, None)]
        }
        _ => vec![judge::invalid(judge::NOT_OBJECT, None, whole, None)],
    }
}

fn id_text(id: &Id, frame: &[u8]) -> IdText {
    match id {
        Id::Int(i) => IdText::Int(i.to_string()),
        Id::Big(r) => IdText::Int(String::from_utf8_lossy(&frame[r.clone()]).into()),
        Id::Str(t) => IdText::Str(t.as_str(frame).into()),
    }
}

fn owned_id_text(id: &OwnedId) -> IdText {
    match id {
        OwnedId::Int(i) => IdText::Int(i.to_string()),
        OwnedId::Big(s) => IdText::Int(s.to_string()),
        OwnedId::Str(s) => IdText::Str(s.to_string()),
    }
}

/// The member's value parsed from its span, which must be present exactly when the member is.
fn span_value(frame: &[u8], span: &Option<Range<usize>>, member: Option<&Value>, name: &str) {
    match (span, member) {
        (Some(r), Some(v)) => {
            let parsed: Option<Value> = parse(&frame[r.clone()]);
            assert_eq!(parsed.as_ref(), Some(v), "bytes of {name} at {r:?}");
        }
        (None, None) => {}
        _ => panic!("span of {name}: {span:?}, member: {member:?}"),
    }
}

fn check_message(frame: &[u8], got: &Envelope, want: &Expect) {
    let Expect::Message {
        kind,
        members,
        raw,
        batch,
    } = want
    else {
        panic!("validate gave a message, the contract says {want:?}");
    };
    assert_eq!(
        (got.kind, &got.raw, got.batch),
        (*kind, raw, *batch),
        "message"
    );
    let id = got.id.as_ref().map(|i| id_text(i, frame));
    assert_eq!(id, judge::readable_id(members, false), "message id");
    let method = got.method.as_ref().map(|t| t.as_str(frame).to_owned());
    let want_method = members
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    assert_eq!(method, want_method, "method");
    span_value(frame, &got.raw_id, members.get("id"), "id");
    span_value(frame, &got.raw_params, members.get("params"), "params");
    span_value(frame, &got.raw_result, members.get("result"), "result");
    span_value(frame, &got.raw_error, members.get("error"), "error");
}

fn check_failure(frame: &[u8], got: &Failure, want: &Expect) {
    let Expect::Failure {
        code,
        message,
        id,
        raw,
        batch,
        notification,
    } = want
    else {
        panic!("validate gave {got:?}, the contract says {want:?}");
    };
    assert_eq!(
        (got.code, got.message.as_ref()),
        (*code, message.as_str()),
        "failure"
    );
    assert_eq!(
        (got.start, got.batch),
        (raw.start, *batch),
        "failure position"
    );
    let preview = &frame[raw.start..raw.end.min(raw.start + PREVIEW_BYTES)];
    assert_eq!(got.preview, preview, "failure preview");
    assert_eq!(
        got.notification, *notification,
        "notification flag of {message:?}"
    );
    if let Some(want_id) = id {
        assert_eq!(&got.id.as_ref().map(owned_id_text), want_id, "failure id");
    }
}

/// Check `envelope::validate` (and its variants, and `splice_id`) on `frame` against the contract.
pub fn check_frame(frame: &[u8], batches: bool) {
    let mut items = Vec::new();
    validate(frame, batches, &mut items);
    let want = expect(frame, batches);
    assert_eq!(items.len(), want.len(), "item count: {items:?} vs {want:?}");
    for (got, want) in items.iter().zip(&want) {
        match got {
            Item::Message(m) => check_message(frame, m, want),
            Item::Failure(f) => check_failure(frame, f, want),
        }
    }
    let utf8 = std::str::from_utf8(frame).is_ok();
    for known in [(utf8, depth::opening(frame)), (false, 0)] {
        let mut counted = Vec::new();
        validate_counted(frame, known, batches, &mut Skip::default(), &mut counted);
        assert_eq!(counted, items, "validate_counted with {known:?}");
    }
    if batches {
        check_splice(frame, &items);
    }
}

/// `splice_id` replaces exactly the id's bytes of a single message with an id, else says why not.
fn check_splice(frame: &[u8], items: &[Item]) {
    if frame.starts_with(mcpframe_core::framing::BOM) {
        return; // splice_id drops a BOM that validate treats as content
    }
    let new_id = br#""fuzz""#;
    let spliced = splice_id(frame, new_id);
    match items {
        [Item::Message(m)] if m.batch.is_none() && m.id.is_some() => {
            let r = m.raw_id.clone().expect("an id has a span");
            let want = [&frame[..r.start], &new_id[..], &frame[r.end..]].concat();
            assert_eq!(spliced.as_ref(), Ok(&want), "splice_id bytes");
            let mut again = Vec::new();
            validate(&want, true, &mut again);
            match again.as_slice() {
                [Item::Message(n)] => assert_eq!(n.kind, m.kind, "kind after splice"),
                other => panic!("a spliced message no longer validates: {other:?}"),
            }
        }
        [Item::Message(m)] if m.batch.is_none() => assert_eq!(spliced, Err(SpliceError::NoId)),
        _ => assert_eq!(
            spliced,
            Err(SpliceError::NotAMessage),
            "splice of a non-message"
        ),
    }
}

/// An integer literal's canonical text (`-0` is `0`), for ids and the digit limit.
fn int_text(n: &Number) -> Option<String> {
    let literal = n.as_str();
    if literal.contains(['.', 'e', 'E']) {
        return None;
    }
    Some(match literal.parse::<i64>() {
        Ok(i) => i.to_string(),
        Err(_) => literal.to_owned(),
    })
}
