//! Step 5 (the envelope rules), step 6 (which id a failure carries) and the integer digit limit,
//! judged on the members `serde_json` parsed (duplicate keys: the last one wins, as the contract
//! says).

use std::ops::Range;

use mcpframe_core::envelope::Kind;
use serde_json::{Map, Value};

use super::{int_text, long_int_literal, Expect, IdText, MAX_INT_DIGITS};

pub const NOT_OBJECT: &str = "Invalid Request: expected a JSON object";

/// A failure with code -32600 (never a notification: only a valid one is).
pub fn invalid(
    message: &str,
    id: Option<Option<IdText>>,
    raw: Range<usize>,
    batch: Option<u32>,
) -> Expect {
    Expect::Failure {
        code: -32600,
        message: message.into(),
        id,
        raw,
        batch,
        notification: false,
    }
}

/// The top-level id when it is a string or an integer; with `limited`, not an over-long integer.
pub fn readable_id(m: &Map<String, Value>, limited: bool) -> Option<IdText> {
    match m.get("id")? {
        Value::String(s) => Some(IdText::Str(s.clone())),
        Value::Number(n) => {
            let text = int_text(n)?;
            let digits = text.trim_start_matches('-').len();
            (!limited || digits <= MAX_INT_DIGITS).then_some(IdText::Int(text))
        }
        _ => None,
    }
}

fn is_int(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Number(n)) if int_text(n).is_some())
}

/// An id member that is present but neither null, a string nor an integer.
fn bad_id(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null | Value::String(_)) => false,
        Some(Value::Number(_)) => !is_int(v),
        Some(_) => true,
    }
}

fn judge_request(m: &Map<String, Value>) -> Result<Kind, &'static str> {
    if !matches!(m.get("method"), Some(Value::String(_))) {
        return Err("Invalid Request: \"method\" must be a string");
    }
    if m.contains_key("result") || m.contains_key("error") {
        return Err("Invalid Request: a request cannot have \"result\" or \"error\"");
    }
    if m.get("params")
        .is_some_and(|p| !(p.is_object() || p.is_array()))
    {
        return Err("Invalid Request: \"params\" must be an object or an array");
    }
    match m.get("id") {
        None => Ok(Kind::Notification),
        Some(Value::Null) => Err("Invalid Request: request id must not be null"),
        id if bad_id(id) => Err("Invalid Request: \"id\" must be a string or an integer"),
        Some(_) => Ok(Kind::Request),
    }
}

fn judge_response(m: &Map<String, Value>) -> Result<Kind, &'static str> {
    let (result, error) = (m.get("result"), m.get("error"));
    match (result, error) {
        (Some(_), Some(_)) => {
            return Err("Invalid Request: a response cannot have both \"result\" and \"error\"")
        }
        (None, None) => return Err("Invalid Request: missing \"method\", \"result\" or \"error\""),
        _ => {}
    }
    match m.get("id") {
        None => return Err("Invalid Request: a response must have an \"id\""),
        id if bad_id(id) => return Err("Invalid Request: \"id\" must be a string or an integer"),
        Some(Value::Null) if result.is_some() => {
            return Err("Invalid Request: a result must have a non-null \"id\"")
        }
        _ => {}
    }
    let Some(error) = error else {
        return Ok(Kind::Result);
    };
    let Value::Object(e) = error else {
        return Err("Invalid Request: \"error\" must be an object");
    };
    if !is_int(e.get("code")) {
        return Err("Invalid Request: \"error.code\" must be an integer");
    }
    if !matches!(e.get("message"), Some(Value::String(_))) {
        return Err("Invalid Request: \"error.message\" must be a string");
    }
    Ok(Kind::Error)
}

/// Step 5.1 then 5.2 or 5.3.
fn envelope_rules(m: &Map<String, Value>) -> Result<Kind, &'static str> {
    match m.get("jsonrpc") {
        None => return Err("Invalid Request: missing \"jsonrpc\""),
        Some(Value::String(s)) if s == "2.0" => {}
        Some(_) => return Err("Invalid Request: \"jsonrpc\" must be \"2.0\""),
    }
    if m.contains_key("method") {
        judge_request(m)
    } else {
        judge_response(m)
    }
}

/// What the object `m`, spanning `raw` in `frame`, yields.
pub fn judge(m: Map<String, Value>, frame: &[u8], raw: Range<usize>, batch: Option<u32>) -> Expect {
    match envelope_rules(&m) {
        Err(message) => {
            // an over-long integer id of an invalid envelope: the contract does not say
            let id = readable_id(&m, false);
            let unspecified = id != readable_id(&m, true);
            invalid(message, (!unspecified).then_some(id), raw, batch)
        }
        Ok(kind) if long_int_literal(&frame[raw.clone()]) => Expect::Failure {
            code: -32600,
            message: format!(
                "Invalid Request: integer literal longer than {MAX_INT_DIGITS} digits"
            ),
            id: Some(readable_id(&m, true)),
            raw,
            batch,
            notification: kind == Kind::Notification,
        },
        Ok(kind) => Expect::Message {
            kind,
            members: m,
            raw,
            batch,
        },
    }
}
