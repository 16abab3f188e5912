//! cargo-fuzz target: the input is an NDJSON byte stream. It is fed in several chunkings derived
//! from its own bytes (whole, random cuts, byte by byte when short), with the default and a small
//! frame limit; after every feed the framer must match the reference framer, and every frame it
//! hands out is validated and judged against the reference envelope rules.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpframe_fuzz::chunks::{chunkings, max_frames, Rng};
use mcpframe_fuzz::framing_ref::Seen;
use mcpframe_fuzz::{check_frame, check_stream};

fuzz_target!(|data: &[u8]| {
    let mut rng = Rng::for_input(data);
    let batches = rng.below(2) == 0;
    for max_frame in max_frames(&mut rng, data.len()) {
        let mut first = None;
        for points in chunkings(&mut rng, data.len()) {
            let seen = check_stream(data, &points, max_frame, batches);
            match &first {
                None => first = Some(seen),
                Some(one_shot) => assert_eq!(&seen, one_shot, "chunking changed the result"),
            }
        }
        for event in first.unwrap_or_default() {
            if let Seen::Frame { bytes, .. } = event {
                check_frame(&bytes, batches);
            }
        }
    }
});
