//! `plain_call`: the listening proxy's read of a POST body that is one plain request (see
//! `docs/core-contract.md`): the one request of the body, valid as the decoder validates it, that
//! the proxy may write to its child as it came, answered by the child with the client's own id
//! bytes. Nothing is built but the ranges of the id and method.

use std::ops::Range;

use memchr::memmem;

use crate::envelope::{self, Id, Item, Kind, Text};
use crate::framing::BOM;
use crate::span;

/// Where the progress token of a request sits.
const TOKEN_PATH: [&str; 3] = ["params", "_meta", "progressToken"];

/// The id of a plain call: an integer, or a string written without escapes (its content's range in
/// the body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlainId {
    /// An integer within `i64`.
    Int(i64),
    /// A larger integer: the range of its literal.
    Big(Range<usize>),
    /// A string: the range of its content (between the quotes).
    Str(Range<usize>),
}

/// What `plain_call` reads of a plain call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainCall {
    /// The request's id.
    pub id: PlainId,
    /// Its method, as decoded (a string written with escapes is decoded).
    pub method: Text,
}

/// The id and method of `body` when it is one plain call, else `None`: within `max_frame` bytes, no
/// BOM, one valid JSON-RPC request (not a batch) whose method is not `initialize`, whose id is
/// written as its encoding writes it (no escape, not `-0`), and that names no
/// `params._meta.progressToken`.
pub fn plain_call(body: &[u8], max_frame: usize) -> Option<PlainCall> {
    if body.len() > max_frame || body.starts_with(BOM) {
        return None;
    }
    let mut items = Vec::with_capacity(1);
    envelope::validate(body, true, &mut items);
    let [Item::Message(message)] = items.as_slice() else {
        return None;
    };
    if message.kind != Kind::Request || message.batch.is_some() {
        return None;
    }
    let method = message.method.clone()?;
    if method.as_bytes(body) == b"initialize" {
        return None;
    }
    let raw_id = &body[message.raw_id.clone()?];
    if raw_id.starts_with(b"-0") || memchr::memchr(b'\\', raw_id).is_some() {
        return None;
    }
    let id = match message.id.as_ref()? {
        Id::Int(value) => PlainId::Int(*value),
        Id::Big(range) => PlainId::Big(range.clone()),
        Id::Str(Text::Span(range)) => PlainId::Str(range.clone()),
        Id::Str(Text::Owned(_)) => return None,
    };
    // the token's key may be written with escapes: only a body with neither has no token for sure
    let searched =
        memmem::find(body, b"progressToken").is_some() || memchr::memchr(b'\\', body).is_some();
    if searched && !matches!(span::value_span(body, &TOKEN_PATH), Ok(None)) {
        return None;
    }
    Some(PlainCall { id, method })
}

/// `body` as one NDJSON line: trailing JSON whitespace dropped, every CR and LF inside (whitespace in
/// valid JSON) made a space, then one LF.
pub fn one_line(body: &[u8]) -> Vec<u8> {
    let end = body
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .map_or(0, |at| at + 1);
    let mut line = Vec::with_capacity(end + 1);
    line.extend(
        body[..end]
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(body: &[u8]) -> Option<PlainCall> {
        plain_call(body, 1 << 20)
    }

    #[test]
    fn a_plain_request_gives_its_id_and_method() {
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"-0"}}"#;
        let found = call(body).unwrap();
        assert_eq!(found.id, PlainId::Int(7));
        assert_eq!(found.method.as_bytes(body), b"tools/call");
        let body = br#"{"jsonrpc":"2.0","id":"x-1","method":"m"}"#;
        let PlainId::Str(range) = call(body).unwrap().id else {
            panic!("a string id")
        };
        assert_eq!(&body[range], b"x-1");
        let body = br#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"m"}"#;
        let PlainId::Big(range) = call(body).unwrap().id else {
            panic!("a big id")
        };
        assert_eq!(&body[range], b"99999999999999999999");
    }

    #[test]
    fn what_is_not_a_plain_call_is_none() {
        for body in [
            &br#"{"jsonrpc":"2.0","id":-0,"method":"m"}"#[..],
            br#"{"jsonrpc":"2.0","id":"\u0041","method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":1}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progress\u0054oken":1}}}"#,
            b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,",
            b"  ",
        ] {
            assert_eq!(call(body), None, "{}", String::from_utf8_lossy(body));
        }
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"t":"a\"progressToken"}}"#;
        assert!(call(body).is_some(), "the key in a value is no token");
        assert_eq!(
            plain_call(br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#, 10),
            None
        );
    }

    #[test]
    fn one_line_makes_one_ndjson_line() {
        assert_eq!(one_line(b"{\r\n \"a\":1}\n \t"), b"{   \"a\":1}\n");
        assert_eq!(one_line(b""), b"\n");
    }
}
