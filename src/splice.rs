//! Id replacement in a raw frame without re-encoding anything else (for proxies), and the small
//! JSON writers it needs: every byte outside the top-level `id` value is kept as it was.

use std::ops::Range;

use crate::envelope::{self, Item};
use crate::framing::BOM;

/// Why a frame's id cannot be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpliceError {
    /// The frame does not decode to exactly one valid message.
    NotAMessage,
    /// The message is a notification or an error with `id: null`.
    NoId,
}

impl SpliceError {
    /// The contract's `ValueError` message.
    pub fn message(self) -> &'static str {
        match self {
            Self::NotAMessage => "frame is not a valid JSON-RPC message",
            Self::NoId => "message has no id",
        }
    }
}

/// Append `s` as a JSON string: UTF-8 kept as is; `"`, `\` and U+0000..U+001F escaped (`\n`, `\r`,
/// `\t`, `\b`, `\f`, else `\u00XX`), as the encoders of the core contract write it.
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ],
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(escape);
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// `raw` with the bytes at `id` (a range inside `raw`) replaced by `new_id` (JSON text).
pub fn replace(raw: &[u8], id: Range<usize>, new_id: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() - id.len() + new_id.len());
    out.extend_from_slice(&raw[..id.start]);
    out.extend_from_slice(new_id);
    out.extend_from_slice(&raw[id.end..]);
    out
}

/// Validate `frame` as one message (a leading BOM dropped, as `decode` does) and return the frame
/// without that BOM and the range of its top-level `id` value (the last one, if duplicated).
pub fn locate_id(frame: &[u8]) -> Result<(&[u8], Range<usize>), SpliceError> {
    let frame = frame.strip_prefix(&BOM[..]).unwrap_or(frame);
    let mut items = Vec::with_capacity(1);
    envelope::validate(frame, true, &mut items);
    match items.as_slice() {
        [Item::Message(m)] if m.batch.is_none() => match (&m.id, &m.raw_id) {
            (Some(_), Some(r)) => Ok((frame, r.clone())),
            _ => Err(SpliceError::NoId),
        },
        _ => Err(SpliceError::NotAMessage),
    }
}

/// `frame` with its top-level id replaced by `new_id` (JSON text, already encoded).
pub fn splice_id(frame: &[u8], new_id: &[u8]) -> Result<Vec<u8>, SpliceError> {
    let (frame, id) = locate_id(frame)?;
    Ok(replace(frame, id, new_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(s: &str) -> String {
        let mut v = Vec::new();
        write_json_string(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn json_strings() {
        assert_eq!(js("abc"), "\"abc\"");
        assert_eq!(
            js("a\"b\\c\n\r\t\u{8}\u{c}\u{1}\u{1f}é\u{7f}"),
            "\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001fé\u{7f}\""
        );
        assert_eq!(js(""), "\"\"");
    }

    #[test]
    fn splice_keeps_every_other_byte() {
        let f = br#"{ "id" : 1 , "jsonrpc":"2.0","method":"x","params":{"id":2}}"#;
        assert_eq!(
            splice_id(f, b"\"abc\"").unwrap(),
            br#"{ "id" : "abc" , "jsonrpc":"2.0","method":"x","params":{"id":2}}"#
        );
        let big = br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":[]}"#;
        assert_eq!(
            splice_id(big, b"7").unwrap(),
            br#"{"jsonrpc":"2.0","id":7,"result":[]}"#
        );
        let dup = br#"{"jsonrpc":"2.0","id":"a","id":"b","result":[]}"#;
        assert_eq!(
            splice_id(dup, b"1").unwrap(),
            br#"{"jsonrpc":"2.0","id":"a","id":1,"result":[]}"#
        );
        let bom = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":0}";
        assert_eq!(
            splice_id(bom, b"6").unwrap(),
            b"{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":0}"
        );
    }

    #[test]
    fn splice_errors() {
        assert_eq!(
            splice_id(br#"{"jsonrpc":"2.0","method":"x"}"#, b"1"),
            Err(SpliceError::NoId)
        );
        let null_error = br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#;
        assert_eq!(splice_id(null_error, b"1"), Err(SpliceError::NoId));
        for bad in [
            &b"{"[..],
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":0}]",
            b"",
            b"  ",
            br#"{"jsonrpc":"2.0","id":1}"#,
        ] {
            assert_eq!(splice_id(bad, b"1"), Err(SpliceError::NotAMessage));
        }
    }
}
