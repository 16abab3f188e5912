//! The proxy's hot path for one client session's bytes (issue 13): frames cut, each envelope
//! validated and classified, a plain request's id replaced by a fresh upstream id from the shared
//! [`IdRemap`] (spliced into the bytes: nothing else of the frame changes), a plain notification
//! passed on as it is, all into one output buffer. The first frame that needs a decision of the
//! proxy (see [`relayable`]) stops the relay for the rest of the chunk: it and every frame after it
//! are handed back whole, in order, so the proxy handles them one by one exactly as if it had
//! decoded the chunk itself, and the id map sees every change in stream order.

use std::ops::Range;

use memchr::memmem;
use num_bigint::BigInt;

use crate::correlation::{IdRemap, RequestId};
use crate::encode;
use crate::envelope::{self, Envelope, Id, Item, Kind};
use crate::framing::{Closed, Event, Framer};
use crate::splice::write_json_string;

/// Requests the proxy must see: it keeps the handshake (to replay it) and follows subscriptions.
const WATCHED_REQUESTS: [&[u8]; 3] = [
    b"initialize",
    b"resources/subscribe",
    b"resources/unsubscribe",
];

/// Notifications the proxy must see: a cancellation carries an id to rewrite, and the end of the
/// handshake is kept for a replay.
const WATCHED_NOTIFICATIONS: [&[u8]; 2] =
    [b"notifications/cancelled", b"notifications/initialized"];

/// A request whose params hold these bytes may carry a progress token to rewrite.
const TOKEN: &[u8] = b"\"progressToken\"";

/// A frame handed back for a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// A complete frame, terminator excluded (its leading BOM removed: framing).
    Frame {
        /// Stream offset of its first byte (past a dropped BOM), as a decoder reports it: the
        /// proxy's answer to a bad held frame says where it is.
        offset: u64,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// A frame over the size limit, whose bytes were never all held.
    Oversize {
        /// Stream offset of its first byte.
        offset: u64,
        /// Its first bytes, as the framer reports them.
        preview: Vec<u8>,
    },
}

/// One direction of relaying: a client session's bytes towards the upstream.
#[derive(Debug)]
pub struct Upward {
    framer: Framer,
    items: Vec<Item>,
    requests: u64,
}

impl Upward {
    /// A relay for frames of at most `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Upward {
            framer: Framer::new(max_frame),
            items: Vec::with_capacity(1),
            requests: 0,
        }
    }

    /// Requests relayed so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Relay what `chunk` completes for session `conn`: relayed frames (each with its LF) are
    /// appended to `out`, the frames from the first one needing a decision on to `held`.
    pub fn feed<D: Default>(
        &mut self,
        chunk: &[u8],
        conn: i64,
        map: &mut IdRemap<D>,
        out: &mut Vec<u8>,
        held: &mut Vec<Held>,
    ) -> Result<(), Closed> {
        let Upward {
            framer,
            items,
            requests,
        } = self;
        framer.feed(chunk, |event| {
            hold_or(event, held, |frame| {
                relay(frame, conn, map, items, requests, out)
            });
        })
    }

    /// End the stream: an unterminated last frame is relayed (or held) as if terminated.
    pub fn close<D: Default>(
        &mut self,
        conn: i64,
        map: &mut IdRemap<D>,
        out: &mut Vec<u8>,
        held: &mut Vec<Held>,
    ) -> Result<(), Closed> {
        let Upward {
            framer,
            items,
            requests,
        } = self;
        framer.close(|event| {
            hold_or(event, held, |frame| {
                relay(frame, conn, map, items, requests, out)
            });
        })
    }
}

/// One framer event of either direction: while nothing is held, `relay` may take the frame (true);
/// else the frame is held whole, as is everything after it in the chunk (stream order).
fn hold_or(event: Event<'_>, held: &mut Vec<Held>, relay: impl FnOnce(&[u8]) -> bool) {
    let (frame, offset): (&[u8], u64) = match &event {
        Event::Frame { bytes, offset } => (bytes, *offset),
        Event::Assembled { bytes, offset, .. } => (bytes, *offset),
        Event::Oversize { offset, preview } => {
            held.push(Held::Oversize {
                offset: *offset,
                preview: preview.to_vec(),
            });
            return;
        }
    };
    if held.is_empty() && relay(frame) {
        return;
    }
    held.push(Held::Frame {
        offset,
        bytes: match event {
            Event::Assembled { bytes, .. } => bytes,
            _ => frame.to_vec(),
        },
    });
}

/// Relay one frame into `out` if it is a plain request or notification (true), else leave
/// everything as it was (false).
fn relay<D: Default>(
    frame: &[u8],
    conn: i64,
    map: &mut IdRemap<D>,
    items: &mut Vec<Item>,
    requests: &mut u64,
    out: &mut Vec<u8>,
) -> bool {
    items.clear();
    envelope::validate(frame, true, items);
    let [Item::Message(message)] = items.as_slice() else {
        return false;
    };
    if !relayable(frame, message) {
        return false;
    }
    if message.kind == Kind::Notification {
        out.extend_from_slice(frame);
        out.push(b'\n');
        return true;
    }
    let (Some(id), Some(span)) = (&message.id, &message.raw_id) else {
        return false;
    };
    if !canonical_id(&frame[span.clone()]) {
        return false; // the proxy keeps its bytes, for its answer
    }
    let Some(key) = request_id(frame, id) else {
        return false;
    };
    let Ok(upstream) = map.outbound(conn, key, D::default()) else {
        return false; // a duplicate or the limit: the proxy answers it
    };
    splice(frame, span.clone(), upstream, out);
    *requests += 1;
    true
}

/// Whether a valid message goes through without a decision: a request or notification outside a
/// batch, of no watched method, and (a request) with no progress token in its params.
pub fn relayable(frame: &[u8], message: &Envelope) -> bool {
    if message.batch.is_some() {
        return false;
    }
    let Some(method) = &message.method else {
        return false;
    };
    let method = method.as_bytes(frame);
    match message.kind {
        Kind::Request => {
            !WATCHED_REQUESTS.contains(&method)
                && message
                    .raw_params
                    .as_ref()
                    .is_none_or(|p| memmem::find(&frame[p.clone()], TOKEN).is_none())
        }
        Kind::Notification => !WATCHED_NOTIFICATIONS.contains(&method),
        Kind::Result | Kind::Error => false,
    }
}

/// Whether an id's bytes are the ones [`write_id`] writes for its value: no escape in a string, no
/// `-0`. A request whose id is written otherwise is held, so that the proxy gives its answer the
/// client's own bytes back (the map keys ids by value: `"A"` and `"\u0041"` are one id).
pub fn canonical_id(raw: &[u8]) -> bool {
    // ids are short: a plain scan costs less than setting up `memchr`
    !raw.starts_with(b"-0") && !raw.contains(&b'\\')
}

/// The id as the id map keys it.
fn request_id(frame: &[u8], id: &Id) -> Option<RequestId> {
    Some(match id {
        Id::Int(i) => RequestId::Int(*i),
        Id::Big(r) => RequestId::from_bigint(BigInt::parse_bytes(&frame[r.clone()], 10)?),
        Id::Str(text) => RequestId::Str(text.as_str(frame).into()),
    })
}

/// Append `frame` with the bytes at `id` replaced by the digits of `upstream`, and an LF.
fn splice(frame: &[u8], id: Range<usize>, upstream: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(&frame[..id.start]);
    encode::write_i64(out, upstream);
    out.extend_from_slice(&frame[id.end..]);
    out.push(b'\n');
}

/// The other direction: the upstream's bytes towards the client sessions. An answer to a request
/// the map knows, and whose mapping is not marked (`data` true: the proxy follows that request), gets
/// its client's own id back (the mapping is removed) and goes to that client's buffer; everything
/// else (server requests, notifications, unknown or marked answers, bad frames) is held as upward.
#[derive(Debug)]
pub struct Downward {
    framer: Framer,
    items: Vec<Item>,
}

/// Where [`Downward`] relays to: one buffer per connection, in first-use order.
pub type PerConn = Vec<(i64, Vec<u8>)>;

impl Downward {
    /// A relay for frames of at most `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Downward {
            framer: Framer::new(max_frame),
            items: Vec::with_capacity(1),
        }
    }

    /// Relay what `chunk` completes into `out`, or hold it (from the first held frame on).
    pub fn feed(
        &mut self,
        chunk: &[u8],
        map: &mut IdRemap<bool>,
        out: &mut PerConn,
        held: &mut Vec<Held>,
    ) -> Result<(), Closed> {
        let Downward { framer, items } = self;
        framer.feed(chunk, |event| {
            hold_or(event, held, |frame| answer(frame, map, items, out));
        })
    }

    /// End the stream: an unterminated last frame is relayed (or held) as if terminated.
    pub fn close(
        &mut self,
        map: &mut IdRemap<bool>,
        out: &mut PerConn,
        held: &mut Vec<Held>,
    ) -> Result<(), Closed> {
        let Downward { framer, items } = self;
        framer.close(|event| {
            hold_or(event, held, |frame| answer(frame, map, items, out));
        })
    }
}

/// Relay one answer to its client (true), or change nothing (false).
fn answer(frame: &[u8], map: &mut IdRemap<bool>, items: &mut Vec<Item>, out: &mut PerConn) -> bool {
    items.clear();
    envelope::validate(frame, true, items);
    let [Item::Message(message)] = items.as_slice() else {
        return false;
    };
    let (Some(Id::Int(upstream)), Some(span), None) = (&message.id, &message.raw_id, message.batch)
    else {
        return false;
    };
    if !matches!(message.kind, Kind::Result | Kind::Error) {
        return false;
    }
    match map.peek(*upstream) {
        Some((_, _, false)) => {}
        _ => return false, // unknown (late, cancelled, not ours) or followed by the proxy
    }
    let Some((conn, id, _)) = map.inbound(&RequestId::Int(*upstream)) else {
        return false;
    };
    let buffer = match out.iter().position(|(c, _)| *c == conn) {
        Some(at) => &mut out[at].1,
        None => {
            out.push((conn, Vec::with_capacity(frame.len() + 1)));
            &mut out.last_mut().expect("just pushed").1
        }
    };
    buffer.extend_from_slice(&frame[..span.start]);
    write_id(buffer, &id);
    buffer.extend_from_slice(&frame[span.end..]);
    buffer.push(b'\n');
    true
}

/// A downstream id as JSON text, as the encoders write it.
fn write_id(out: &mut Vec<u8>, id: &RequestId) {
    match id {
        RequestId::Int(i) => encode::write_i64(out, *i),
        RequestId::Big(b) => out.extend_from_slice(b.to_str_radix(10).as_bytes()),
        RequestId::Str(s) => write_json_string(out, s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]]) -> (Vec<u8>, Vec<Held>, IdRemap<()>) {
        let mut map = IdRemap::new(8, 1).unwrap();
        let mut relay = Upward::new(64);
        let (mut out, mut held) = (Vec::new(), Vec::new());
        for chunk in chunks {
            relay.feed(chunk, 7, &mut map, &mut out, &mut held).unwrap();
        }
        relay.close(7, &mut map, &mut out, &mut held).unwrap();
        (out, held, map)
    }

    fn frame_at(offset: u64, bytes: &[u8]) -> Held {
        Held::Frame {
            offset,
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn plain_requests_and_notifications_are_relayed() {
        let (out, held, map) = run(&[
            b"{\"jsonrpc\":\"2.0\", \"id\" : \"a\",\"method\":\"x\"}\r\n{\"jsonrpc\":\"2.0\",\"met",
            b"hod\":\"n\"}\n{\"id\":12345678901234567890123,\"jsonrpc\":\"2.0\",\"method\":\"x\"}",
        ]);
        let want: &[u8] = b"{\"jsonrpc\":\"2.0\", \"id\" : 1,\"method\":\"x\"}\n\
            {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n{\"id\":2,\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n";
        assert_eq!(out, want);
        assert!(held.is_empty());
        assert_eq!(map.upstream(7, &RequestId::from("a")), Some(1));
    }

    #[test]
    fn the_first_decision_holds_the_rest() {
        let (out, held, map) = run(&[
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"params\":{\"_meta\":{\"progressToken\":1}}}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\"}\n",
            &[b'x'; 70],
            b"\n[]\n",
        ]);
        assert_eq!(out, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n");
        assert_eq!(held.len(), 4);
        assert!(
            matches!(&held[1], Held::Frame { offset: 115, bytes } if bytes.ends_with(b"\"id\":3,\"method\":\"x\"}"))
        );
        assert!(matches!(&held[2], Held::Oversize { offset: 153, .. }));
        assert_eq!(
            held[3],
            Held::Frame {
                offset: 224,
                bytes: b"[]".to_vec()
            }
        );
        assert_eq!(map.len(), 1);
    }

    #[test]
    fn watched_methods_duplicates_and_answers_are_held() {
        for frame in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/\\u0073ubscribe\"}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":1}",
        ] {
            let (out, held, _) = run(&[frame]);
            assert!(out.is_empty(), "{}", String::from_utf8_lossy(frame));
            assert_eq!(held, vec![frame_at(0, frame)]);
        }
        let twice = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n";
        let (out, held, _) = run(&[twice, twice]);
        assert_eq!(out, twice);
        assert_eq!(
            held,
            vec![frame_at(twice.len() as u64, &twice[..twice.len() - 1])]
        );
    }

    #[test]
    fn ids_written_unlike_their_encoding_are_held() {
        for frame in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"x\"}"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":\"\\u0041\",\"method\":\"x\"}",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\\/b\",\"method\":\"x\"}",
        ] {
            let (out, held, map) = run(&[frame]);
            assert!(out.is_empty(), "{}", String::from_utf8_lossy(frame));
            assert_eq!(held, vec![frame_at(0, frame)]);
            assert!(map.is_empty());
        }
        assert!(canonical_id(b"-1"));
        assert!(canonical_id(b"0"));
        assert!(canonical_id(b"\"a\xC3\xA9/\""));
    }

    #[test]
    fn answers_get_their_clients_ids_back() {
        let mut map: IdRemap<bool> = IdRemap::new(8, 1).unwrap();
        let mut up = Upward::new(1000);
        let (mut sent, mut held) = (Vec::new(), Vec::new());
        let requests = b"{\"jsonrpc\":\"2.0\",\"id\":\"a\xC3\xA9\",\"method\":\"x\"}\n\
            {\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"x\"}\n";
        up.feed(requests, 4, &mut map, &mut sent, &mut held)
            .unwrap();
        up.feed(
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\"}\n",
            9,
            &mut map,
            &mut sent,
            &mut held,
        )
        .unwrap();
        *map.data_mut(3).unwrap() = true; // the proxy follows request 3
        let mut down = Downward::new(1000);
        let mut out = Vec::new();
        down.feed(
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"m\"}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":1}\n{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":1}\n",
            &mut map,
            &mut out,
            &mut held,
        )
        .unwrap();
        let want: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"result\":{}}\n\
            {\"jsonrpc\":\"2.0\",\"id\":\"a\xC3\xA9\",\"error\":{\"code\":1,\"message\":\"m\"}}\n";
        assert_eq!(out, vec![(4, want.to_vec())]);
        assert_eq!(held.len(), 2);
        assert_eq!(map.len(), 1); // 3 is still mapped: the proxy takes its answer
    }
}
