//! The stream property: feeding a stream in any chunking gives, after every `feed`, exactly what
//! the reference framer says that prefix must give (so the result never depends on the chunking
//! and never lags behind the bytes), holds exactly the bytes of the incomplete frame (never more
//! than `max_frame + 1`), and an assembled frame's running checks agree with a fresh validation.

use mcpframe_core::depth;
use mcpframe_core::envelope::{validate, validate_counted, Skip};
use mcpframe_core::framing::{Event, Framer};

use crate::framing_ref::{expected, Seen};

/// Own `event`, checking what the framer learned about an assembled frame on the way.
fn own(event: Event<'_>, batches: bool) -> Seen {
    match event {
        Event::Frame { offset, bytes, .. } => Seen::Frame {
            offset,
            bytes: bytes.to_vec(),
        },
        Event::Assembled {
            offset,
            bytes,
            checked,
            ..
        } => {
            if checked.utf8 {
                assert!(
                    std::str::from_utf8(&bytes).is_ok(),
                    "checked.utf8 on invalid UTF-8"
                );
            }
            assert_eq!(checked.opening, depth::opening(&bytes), "checked.opening");
            let mut counted = Vec::new();
            let known = (checked.utf8, checked.opening);
            validate_counted(&bytes, known, batches, &mut Skip::default(), &mut counted);
            let mut fresh = Vec::new();
            validate(&bytes, batches, &mut fresh);
            assert_eq!(counted, fresh, "validate_counted differs from validate");
            Seen::Frame { offset, bytes }
        }
        Event::Oversize {
            offset, preview, ..
        } => Seen::Oversize {
            offset,
            preview: preview.to_vec(),
        },
    }
}

/// Feed `stream` cut at `points` (sorted) to a framer with `max_frame`; check it after every
/// feed and after close; return every event, in order.
pub fn check_stream(stream: &[u8], points: &[usize], max_frame: usize, batches: bool) -> Vec<Seen> {
    let mut framer = Framer::new(max_frame);
    let mut seen = Vec::new();
    let mut fed = 0;
    for &end in points.iter().chain(std::iter::once(&stream.len())) {
        framer
            .feed(&stream[fed..end], |e| seen.push(own(e, batches)))
            .expect("feed before close");
        fed = end;
        let (want, held) = expected(&stream[..fed], max_frame, false);
        assert_eq!(
            seen, want,
            "after {fed} bytes, chunk ends {points:?}, max_frame {max_frame}"
        );
        assert_eq!(framer.buffered(), held, "buffered after {fed} bytes");
        assert!(held <= max_frame.saturating_add(1));
        assert_eq!(framer.offset(), fed as u64, "offset");
    }
    framer
        .close(|e| seen.push(own(e, batches)))
        .expect("first close");
    let (want, _) = expected(stream, max_frame, true);
    assert_eq!(
        seen, want,
        "after close, chunk ends {points:?}, max_frame {max_frame}"
    );
    assert!(framer.is_closed());
    assert!(framer.feed(b"x", |_| ()).is_err(), "feed after close");
    assert!(framer.close(|_| ()).is_err(), "close after close");
    seen
}
