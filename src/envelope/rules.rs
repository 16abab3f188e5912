//! The envelope rules of the core contract (validation step 5): what kind of message an object's
//! members make, or the message of the first rule they break.

use super::{ErrShape, IdTag, Kind, Members};

// The contract's messages of the step-5 failures.
pub(super) const NO_JSONRPC: &str = "Invalid Request: missing \"jsonrpc\"";
pub(super) const BAD_JSONRPC: &str = "Invalid Request: \"jsonrpc\" must be \"2.0\"";
pub(super) const METHOD_TYPE: &str = "Invalid Request: \"method\" must be a string";
pub(super) const REQUEST_RESULT: &str =
    "Invalid Request: a request cannot have \"result\" or \"error\"";
pub(super) const PARAMS_TYPE: &str = "Invalid Request: \"params\" must be an object or an array";
pub(super) const NULL_REQUEST_ID: &str = "Invalid Request: request id must not be null";
pub(super) const ID_TYPE: &str = "Invalid Request: \"id\" must be a string or an integer";
pub(super) const BOTH: &str =
    "Invalid Request: a response cannot have both \"result\" and \"error\"";
pub(super) const NEITHER: &str = "Invalid Request: missing \"method\", \"result\" or \"error\"";
pub(super) const NO_ID: &str = "Invalid Request: a response must have an \"id\"";
pub(super) const NULL_RESULT_ID: &str = "Invalid Request: a result must have a non-null \"id\"";
pub(super) const ERROR_TYPE: &str = "Invalid Request: \"error\" must be an object";
pub(super) const CODE_TYPE: &str = "Invalid Request: \"error.code\" must be an integer";
pub(super) const MESSAGE_TYPE: &str = "Invalid Request: \"error.message\" must be a string";

/// Judge the members by the envelope rules (step 5): the kind, or the failure message.
pub(super) fn judge<V>(m: &Members<V>) -> Result<Kind, &'static str> {
    match m.jsonrpc {
        None => return Err(NO_JSONRPC),
        Some(false) => return Err(BAD_JSONRPC),
        Some(true) => {}
    }
    match &m.method {
        Some(method) => judge_request(m, method.is_some()),
        None => judge_response(m),
    }
}

fn judge_request<V>(m: &Members<V>, method_is_str: bool) -> Result<Kind, &'static str> {
    if !method_is_str {
        return Err(METHOD_TYPE);
    }
    if m.result.is_some() || m.error.is_some() {
        return Err(REQUEST_RESULT);
    }
    if matches!(m.params, Some((_, false))) {
        return Err(PARAMS_TYPE);
    }
    match &m.id {
        None => Ok(Kind::Notification),
        Some((_, IdTag::Null)) => Err(NULL_REQUEST_ID),
        Some((_, IdTag::Bad)) => Err(ID_TYPE),
        Some(_) => Ok(Kind::Request),
    }
}

fn judge_response<V>(m: &Members<V>) -> Result<Kind, &'static str> {
    match (&m.result, &m.error) {
        (Some(_), Some(_)) => return Err(BOTH),
        (None, None) => return Err(NEITHER),
        _ => {}
    }
    match &m.id {
        None => return Err(NO_ID),
        Some((_, IdTag::Bad)) => return Err(ID_TYPE),
        Some((_, IdTag::Null)) if m.result.is_some() => return Err(NULL_RESULT_ID),
        _ => {}
    }
    match m.error {
        None => Ok(Kind::Result),
        Some((_, ErrShape::NotObject)) => Err(ERROR_TYPE),
        Some((_, ErrShape::Object { code: false, .. })) => Err(CODE_TYPE),
        Some((_, ErrShape::Object { message: false, .. })) => Err(MESSAGE_TYPE),
        Some(_) => Ok(Kind::Error),
    }
}
