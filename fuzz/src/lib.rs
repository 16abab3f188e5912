//! Properties of the pure Rust core that the cargo-fuzz targets check on arbitrary bytes.
//!
//! Each property compares the core against a small, independent statement of
//! `docs/core-contract.md` written here: a reference framer (`framing_ref`), a reference envelope
//! judge built on `serde_json` (`envelope_ref`), and exact scans for depth and integer literals.
//! A disagreement or a panic is a finding; libFuzzer saves the input that caused it.

pub mod chunks;
pub mod envelope_ref;
pub mod framing_ref;
pub mod stream;

pub use envelope_ref::check_frame;
pub use stream::check_stream;
