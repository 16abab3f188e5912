//! The scan of a frame's JSON (step 4 of the contract) that records the envelope members on the
//! way (for step 5), built on the allocation-free scanner of `crate::scan`.

use std::ops::Range;

use jiter::Jiter;

use super::{classify, classify_element, frame_failure, ErrShape, IdTag, Item, Members, Payloads};
use super::{Text, EMPTY_BATCH, INVALID_REQUEST, NOT_OBJECT, NO_BATCHES};
use crate::depth::MAX_DEPTH;
use crate::scan::{number_end, skip_nested, string_end, ws, ws_then, Invalid, Scan};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Field {
    Jsonrpc,
    Method,
    Id,
    Params,
    Result,
    Error,
    Other,
}

pub(super) fn field(key: &[u8]) -> Field {
    match key {
        b"jsonrpc" => Field::Jsonrpc,
        b"method" => Field::Method,
        b"id" => Field::Id,
        b"params" => Field::Params,
        b"result" => Field::Result,
        b"error" => Field::Error,
        _ => Field::Other,
    }
}

/// The decoded text of the (valid, escaped) string token `quoted`, quotes included.
fn unescaped(quoted: &[u8]) -> Scan<Box<str>> {
    Jiter::new(quoted)
        .next_str()
        .map(Into::into)
        .map_err(|_| Invalid)
}

/// A key at `i` (its opening quote), its colon and the whitespace after it: the key's text (in
/// place unless escaped) and the index of the member's value.
pub(super) fn key(d: &[u8], i: usize) -> Scan<(Text, usize)> {
    if d.get(i) != Some(&b'"') {
        return Err(Invalid);
    }
    let (end, escaped) = string_end(d, i + 1)?;
    let text = if escaped {
        Text::Owned(unescaped(&d[i..end])?)
    } else {
        Text::Span(i + 1..end - 1)
    };
    let colon = ws(d, end);
    if d.get(colon) != Some(&b':') {
        return Err(Invalid);
    }
    Ok((text, ws(d, colon + 1)))
}

/// An envelope object's key at `i` (its opening quote), told apart as a [`Field`], and the index
/// of the member's value. The six envelope names, written without escapes, are recognised by
/// their first byte and one comparison of the name and its closing quote, without scanning the
/// string for its end; any other key (or an escaped name) goes through [`key`] and [`field`].
/// Both ways accept and refuse exactly the same bytes: a name matched here is a complete string
/// token with no escape, no control byte and no inner quote.
// inlined into its one caller: every key of every message comes through here, and a call's
// set-up and a result returned through memory were a third of its cost
#[inline(always)]
pub(super) fn field_key(d: &[u8], i: usize) -> Scan<(Field, usize)> {
    // the opening quote and the next 8 bytes in one bounds check (the key is followed by at least
    // `:` and a value, so they are there but near the very end of a frame), then the name and
    // its closing quote as one masked word compared with the entry its first byte selects
    if let Some(chunk) = d.get(i..i + 9) {
        let slot = usize::from(chunk[1].wrapping_sub(b'e'));
        if let (b'"', Some(&(word, mask, len, f))) = (chunk[0], NAMES.get(slot)) {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&chunk[1..]);
            if u64::from_le_bytes(bytes) & mask == word {
                return match ws_then(d, i + 1 + len) {
                    (colon, Some(b':')) => Ok((f, ws(d, colon + 1))),
                    _ => Err(Invalid),
                };
            }
        }
    }
    let (name, start) = key(d, i)?;
    Ok((field(name.as_bytes(d)), start))
}

/// One entry of [`NAMES`]: the name and its closing quote as a word, the mask of its bytes, its
/// length with the quote and its field.
type Name = (u64, u64, usize, Field);

/// The envelope names by first byte, `e` to `r`; a byte with no name has a mask of 0 and a word
/// that is not 0, so nothing matches it.
const NAMES: [Name; 14] = {
    let none: Name = (1, 0, 0, Field::Other);
    let mut t = [none; 14];
    t[0] = name(b"error\"", Field::Error);
    t[(b'i' - b'e') as usize] = name(b"id\"", Field::Id);
    t[(b'j' - b'e') as usize] = name(b"jsonrpc\"", Field::Jsonrpc);
    t[(b'm' - b'e') as usize] = name(b"method\"", Field::Method);
    t[(b'p' - b'e') as usize] = name(b"params\"", Field::Params);
    t[(b'r' - b'e') as usize] = name(b"result\"", Field::Result);
    t
};

/// The [`NAMES`] entry of `quoted` (a name and its closing quote, at most 8 bytes).
const fn name(quoted: &[u8], f: Field) -> Name {
    let mut bytes = [0u8; 8];
    let mut k = 0;
    while k < quoted.len() {
        bytes[k] = quoted[k];
        k += 1;
    }
    let mask = u64::MAX >> (8 * (8 - quoted.len()));
    (u64::from_le_bytes(bytes), mask, quoted.len(), f)
}

/// After an object member's value (ending at `i`): the index of the next key, or `None` at the
/// end of the object (then the index after its `}`).
fn next_member(d: &[u8], i: usize) -> Scan<(Option<usize>, usize)> {
    let (i, next) = ws_then(d, i);
    match next {
        Some(b',') => Ok((Some(ws(d, i + 1)), i + 1)),
        Some(b'}') => Ok((None, i + 1)),
        _ => Err(Invalid),
    }
}

/// The first key of the object whose `{` is at `i`, or `None` (then the index after its `}`).
fn first_member(d: &[u8], i: usize) -> (Option<usize>, usize) {
    let (i, next) = ws_then(d, i + 1);
    if next == Some(b'}') {
        (None, i + 1)
    } else {
        (Some(i), i)
    }
}

/// Scan the whole frame (steps 4 and 5), appending its items to `out`.
/// `long` holds the positions of integer literals beyond the digit limit (see `classify`).
///
/// Every value is scanned with what is left of the depth limit where it sits (the frame's first
/// `{` or `[` is level 1), so a frame accepted here is never too deep; one refused may be, which
/// the caller then measures (step 2 comes before step 4 in the contract).
// inlined into the validation of every frame: its own call's set-up was ~20 instructions a frame
#[inline(always)]
pub(super) fn scan_frame<P: Payloads>(
    frame: &[u8],
    batches: bool,
    p: &mut P,
    out: &mut Vec<Item<P::Value>>,
    long: &[usize],
) -> Scan<()> {
    let at = ws(frame, 0);
    let finish = |end: usize| -> Scan<()> {
        if ws(frame, end) == frame.len() {
            Ok(())
        } else {
            Err(Invalid)
        }
    };
    match frame.get(at) {
        Some(b'{') => {
            let mut members = Members::default();
            let end = scan_object(frame, at, p, MAX_DEPTH - 1, &mut members)?;
            finish(end)?;
            out.push(classify(members, 0..frame.len(), None, frame, long));
        }
        Some(b'[') => {
            let (elements, end) = scan_batch(frame, at, p)?;
            finish(end)?;
            if !batches {
                out.push(frame_failure(frame, INVALID_REQUEST, NO_BATCHES.into()));
            } else if elements.is_empty() {
                out.push(frame_failure(frame, INVALID_REQUEST, EMPTY_BATCH.into()));
            } else {
                for (index, (range, members)) in elements.into_iter().enumerate() {
                    out.push(classify_element(members, range, index as u32, frame, long));
                }
            }
        }
        _ => {
            finish(skip_nested(frame, at, MAX_DEPTH)?)?;
            out.push(frame_failure(frame, INVALID_REQUEST, NOT_OBJECT.into()));
        }
    }
    Ok(())
}

type Element<V> = (Range<usize>, Option<Members<V>>);

/// Scan a batch whose `[` is at `i`: its elements, and the index after its `]`.
fn scan_batch<P: Payloads>(d: &[u8], i: usize, p: &mut P) -> Scan<(Vec<Element<P::Value>>, usize)> {
    let mut elements = Vec::new();
    let mut i = ws(d, i + 1);
    if d.get(i) == Some(&b']') {
        return Ok((elements, i + 1));
    }
    loop {
        // the batch is level 1, its elements level 2
        let (members, end) = if d.get(i) == Some(&b'{') {
            let mut m = Members::default();
            let end = scan_object(d, i, p, MAX_DEPTH - 2, &mut m)?;
            (Some(m), end)
        } else {
            (None, skip_nested(d, i, MAX_DEPTH - 1)?)
        };
        elements.push((i..end, members));
        let after = ws(d, end);
        match d.get(after) {
            Some(b',') => i = ws(d, after + 1),
            Some(b']') => return Ok((elements, after + 1)),
            _ => return Err(Invalid),
        }
    }
}

/// The string at `i` as text, or `None` (the value, which may nest `levels` deep, skipped) when
/// it is not a string; and the index after the value.
// inlined: the method of every request and notification comes through here
#[inline(always)]
fn take_str(d: &[u8], i: usize, levels: usize) -> Scan<(Option<Text>, usize)> {
    if d.get(i) != Some(&b'"') {
        return Ok((None, skip_nested(d, i, levels)?));
    }
    let (end, escaped) = string_end(d, i + 1)?;
    let text = if escaped {
        Text::Owned(unescaped(&d[i..end])?)
    } else {
        Text::Span(i + 1..end - 1)
    };
    Ok((Some(text), end))
}

/// Scan an object whose `{` is at `i`, recording the envelope members (whose values may nest
/// `levels` deep) in `m` (fresh, all unset); the index after it.
// `m` is the caller's, not a returned value: returning the members moved them once more (a
// `memcpy` call of their whole size) for every message
fn scan_object<P: Payloads>(
    d: &[u8],
    i: usize,
    p: &mut P,
    levels: usize,
    m: &mut Members<P::Value>,
) -> Scan<usize> {
    let (mut next, mut end) = match jsonrpc_first(d, i) {
        Some(after) => {
            m.jsonrpc = Some(true);
            (Some(ws(d, after)), after)
        }
        None => first_member(d, i),
    };
    while let Some(at) = next {
        let (f, start) = field_key(d, at)?;
        let value_end = member(d, (start, levels), f, m, p)?;
        (next, end) = next_member(d, value_end)?;
    }
    Ok(end)
}

/// The object whose `{` is at `i` opens with the usual first member, compact `"jsonrpc":"2.0"`
/// and the comma after it: the index after that comma. Read as one 16-byte and one 1-byte
/// comparison, where the member by member scan matched the key, compared the value and looked
/// for the comma in three steps (with an indirect jump on the key); it records exactly what that
/// scan records for these bytes (`jsonrpc` is `"2.0"`), which then reads on from the same index.
// inlined into the scan of every object
#[inline(always)]
fn jsonrpc_first(d: &[u8], i: usize) -> Option<usize> {
    const HEAD: &[u8; 17] = b"{\"jsonrpc\":\"2.0\",";
    let chunk = d.get(i..i + HEAD.len())?;
    let mut word = [0u8; 16];
    word.copy_from_slice(&chunk[..16]);
    let mut head = [0u8; 16];
    head.copy_from_slice(&HEAD[..16]);
    (u128::from_le_bytes(word) == u128::from_le_bytes(head) && chunk[16] == HEAD[16])
        .then_some(i + HEAD.len())
}

/// Scan the value at `start` (which may nest `levels` deep) of the member `f`, recording it in
/// `m`; the index after it.
fn member<P: Payloads>(
    d: &[u8],
    (start, levels): (usize, usize),
    f: Field,
    m: &mut Members<P::Value>,
    p: &mut P,
) -> Scan<usize> {
    let end = match f {
        // the usual `"2.0"`, a complete string token, read as one comparison
        Field::Jsonrpc if d.get(start..start + 5) == Some(b"\"2.0\"") => {
            m.jsonrpc = Some(true);
            start + 5
        }
        Field::Jsonrpc => {
            let (text, end) = take_str(d, start, levels)?;
            m.jsonrpc = Some(text.is_some_and(|t| t.as_bytes(d) == b"2.0"));
            end
        }
        Field::Method => {
            let (text, end) = take_str(d, start, levels)?;
            m.method = Some(text);
            end
        }
        Field::Id => {
            let (tag, end) = scan_id(d, start, levels)?;
            m.id = Some((start..end, tag));
            end
        }
        Field::Params => {
            let (value, end) = p.take(d, start, levels)?;
            set_value(&mut m.params_value, value);
            m.params = Some((start..end, matches!(d[start], b'{' | b'[')));
            end
        }
        Field::Result => {
            let (value, end) = p.take(d, start, levels)?;
            set_value(&mut m.result_value, value);
            m.result = Some(start..end);
            end
        }
        Field::Error => {
            let (shape, end) = if d.get(start) == Some(&b'{') && levels > 0 {
                scan_error(d, start, levels - 1)?
            } else {
                (ErrShape::NotObject, skip_nested(d, start, levels)?)
            };
            m.error = Some((start..end, shape));
            end
        }
        Field::Other => skip_nested(d, start, levels)?,
    };
    Ok(end)
}

/// Store a built payload value in `slot` (the last duplicate member wins). Dropping a value an
/// earlier duplicate left there is kept out of line: with Python values, a drop reads the
/// interpreter's thread state, and that read, hoisted by the compiler to the start of the scan of
/// every object, cost a thread-local look-up per message even where no value is ever built.
#[inline(always)]
fn set_value<V>(slot: &mut Option<V>, value: Option<V>) {
    if slot.is_some() {
        replace_value(slot, value);
    } else if value.is_some() {
        // `slot` is empty: nothing is dropped here
        *slot = value;
    }
}

#[cold]
#[inline(never)]
fn replace_value<V>(slot: &mut Option<V>, value: Option<V>) {
    *slot = value;
}

/// The id value at `i` (which may nest `levels` deep) and the index after it.
// inlined: the id of every message but a notification comes through here
#[inline(always)]
fn scan_id(d: &[u8], i: usize, levels: usize) -> Scan<(IdTag, usize)> {
    match d.get(i) {
        Some(b'"') => {
            let (text, end) = take_str(d, i, levels)?;
            Ok((text.map_or(IdTag::Bad, IdTag::Str), end))
        }
        Some(b'-' | b'0'..=b'9') => {
            if let Some((value, end)) = short_int(d, i) {
                return Ok((IdTag::Int(value), end));
            }
            let (end, int) = number_end(d, i)?;
            let tag = if !int {
                IdTag::Bad
            } else {
                int_literal(&d[i..end]).map_or(IdTag::Big, IdTag::Int)
            };
            Ok((tag, end))
        }
        Some(b'n') => {
            let end = skip_nested(d, i, levels)?;
            Ok((IdTag::Null, end))
        }
        _ => Ok((IdTag::Bad, skip_nested(d, i, levels)?)),
    }
}

/// The usual id, a positive integer of at most 18 digits (so it fits in `i64`) at `i`, read in
/// one pass: its value and the index after it; `None` for anything else (a sign, a leading zero,
/// more digits, a fraction or an exponent), which `number_end` then reads.
// inlined into the id scan; the digits read through an iterator (one bounds check in all)
#[inline(always)]
fn short_int(d: &[u8], i: usize) -> Option<(i64, usize)> {
    let rest = d.get(i..)?;
    if !matches!(rest.first(), Some(b'1'..=b'9')) {
        return None;
    }
    let (mut value, mut n) = (0i64, 0);
    for &c in rest {
        let digit = c.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        if n == 18 {
            return None;
        }
        value = value * 10 + i64::from(digit);
        n += 1;
    }
    match rest.get(n) {
        Some(b'.' | b'e' | b'E') => None,
        _ => Some((value, i + n)),
    }
}

/// The value of an integer literal (an optional `-`, then ASCII digits, as `number_end` found
/// it), or `None` when it does not fit in `i64`. Read digit by digit: the literal is known to be
/// ASCII, so neither a UTF-8 check nor `str::parse`'s generality is needed.
pub(super) fn int_literal(literal: &[u8]) -> Option<i64> {
    let (negative, digits) = match literal.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, literal),
    };
    let mut magnitude: u64 = 0;
    for &c in digits {
        let digit = u64::from(c.wrapping_sub(b'0'));
        magnitude = magnitude.checked_mul(10)?.checked_add(digit)?;
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Scan an error object whose `{` is at `i` (its members' values may nest `levels` deep): is
/// `code` an integer, is `message` a string; and the index after it.
fn scan_error(d: &[u8], i: usize, levels: usize) -> Scan<(ErrShape, usize)> {
    let (mut code, mut message) = (false, false);
    let (mut next, mut end) = first_member(d, i);
    while let Some(at) = next {
        let (name, start) = key(d, at)?;
        let value_end = match name.as_bytes(d) {
            b"code" if matches!(d.get(start), Some(b'-' | b'0'..=b'9')) => {
                let (end, int) = number_end(d, start)?;
                code = int;
                end
            }
            b"code" => {
                code = false;
                skip_nested(d, start, levels)?
            }
            b"message" => {
                message = d.get(start) == Some(&b'"');
                skip_nested(d, start, levels)?
            }
            _ => skip_nested(d, start, levels)?,
        };
        (next, end) = next_member(d, value_end)?;
    }
    Ok((ErrShape::Object { code, message }, end))
}
