//! The byte span of a value inside a raw message, found by a key path from the top-level object
//! (for proxies: `params._meta.progressToken` of a request, `params.progressToken` of a progress
//! notification, `params.requestId` of a cancellation), so a new value can be spliced in while
//! every other byte of the frame is kept as it was.

use std::ops::Range;

use jiter::Jiter;

use crate::framing::BOM;
use crate::scan::{self, string_end, ws, Invalid, Scan};
use crate::splice::{self, SpliceError};

/// The span of the value at `path` in `frame`, a frame holding one valid message (validated here,
/// as `splice_id` does; a leading BOM is skipped and counted in the offsets). `Ok(None)` when a key
/// is missing or a value on the way is not an object. Duplicate keys: the last one wins, as in a
/// decoded message.
pub fn value_span(frame: &[u8], path: &[&str]) -> Result<Option<Range<usize>>, SpliceError> {
    let skipped = if frame.starts_with(&BOM[..]) {
        BOM.len()
    } else {
        0
    };
    match splice::locate_id(frame) {
        Ok(_) | Err(SpliceError::NoId) => {}
        Err(e) => return Err(e),
    }
    let body = &frame[skipped..];
    let found = span_in(body, path).map_err(|Invalid| SpliceError::NotAMessage)?;
    Ok(found.map(|r| r.start + skipped..r.end + skipped))
}

/// [`value_span`] on text already known to be one valid JSON value (no validation of the rest).
pub fn span_in(d: &[u8], path: &[&str]) -> Scan<Option<Range<usize>>> {
    let mut start = ws(d, 0);
    let mut end = scan::skip_value(d, start)?;
    for key in path {
        match member(d, start, key)? {
            Some(r) => (start, end) = (r.start, r.end),
            None => return Ok(None),
        }
    }
    Ok(Some(start..end))
}

/// The span of the last member `key` of the object at `i`; `None` if it is not an object or has
/// no such member.
fn member(d: &[u8], i: usize, key: &str) -> Scan<Option<Range<usize>>> {
    if d.get(i) != Some(&b'{') {
        return Ok(None);
    }
    let mut found = None;
    let mut at = ws(d, i + 1);
    if d.get(at) == Some(&b'}') {
        return Ok(None);
    }
    loop {
        if d.get(at) != Some(&b'"') {
            return Err(Invalid);
        }
        let (key_end, escaped) = string_end(d, at + 1)?;
        let matches = if escaped {
            Jiter::new(&d[at..key_end])
                .next_str()
                .map_err(|_| Invalid)?
                == key
        } else {
            &d[at + 1..key_end - 1] == key.as_bytes()
        };
        let colon = ws(d, key_end);
        if d.get(colon) != Some(&b':') {
            return Err(Invalid);
        }
        let value = ws(d, colon + 1);
        let value_end = scan::skip_value(d, value)?;
        if matches {
            found = Some(value..value_end);
        }
        at = ws(d, value_end);
        match d.get(at) {
            Some(b',') => at = ws(d, at + 1),
            Some(b'}') => return Ok(found),
            _ => return Err(Invalid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &[&str] = &["params", "_meta", "progressToken"];

    fn text(frame: &[u8], path: &[&str]) -> Option<String> {
        let r = value_span(frame, path).unwrap()?;
        Some(String::from_utf8(frame[r].to_vec()).unwrap())
    }

    #[test]
    fn progress_tokens() {
        let f = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"a":{"progressToken":9},"progressToken" : "t\"1" },"arguments":{}}}"#;
        assert_eq!(text(f, TOKEN).as_deref(), Some(r#""t\"1""#));
        let big = br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":18446744073709551616}}}"#;
        assert_eq!(text(big, TOKEN).as_deref(), Some("18446744073709551616"));
        let escaped_key =
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progress\u0054oken":5}}}"#;
        assert_eq!(text(escaped_key, TOKEN).as_deref(), Some("5"));
        let dup = br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":1,"progressToken":2}}}"#;
        assert_eq!(text(dup, TOKEN).as_deref(), Some("2"));
    }

    #[test]
    fn missing_or_not_objects() {
        let in_string = br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"q":"{\"_meta\":{\"progressToken\":1}}"}}"#;
        assert_eq!(text(in_string, TOKEN), None);
        let list =
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":[{"_meta":{"progressToken":1}}]}"#;
        assert_eq!(text(list, TOKEN), None);
        let empty = br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#;
        assert_eq!(text(empty, TOKEN), None);
        let note = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}"#;
        assert_eq!(
            text(note, &["params", "progressToken"]).as_deref(),
            Some("3")
        );
    }

    #[test]
    fn bom_is_counted_and_bad_frames_refused() {
        let f = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m\"}";
        assert_eq!(value_span(f, &["id"]), Ok(Some(25..26)));
        assert_eq!(
            value_span(b"{\"id\":1}", &["id"]),
            Err(SpliceError::NotAMessage)
        );
    }
}
