//! cargo-fuzz target: the input is one frame. `envelope::validate` (with and without batches,
//! and its pre-counted variant) must agree with the reference envelope rules built on
//! `serde_json`, and `splice_id` must replace exactly the id's bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpframe_fuzz::check_frame;

fuzz_target!(|data: &[u8]| {
    check_frame(data, true);
    check_frame(data, false);
});
