//! mcpframe core: NDJSON framing, JSON-RPC 2.0 envelope validation and classification, JSON encoding
//! and request-id correlation for MCP. The modules at this level are pure Rust (no PyO3) so that
//! `cargo test` runs without a Python interpreter; the bindings live in `python/` behind the
//! `python` cargo feature. The behaviour is specified in `docs/core-contract.md`.

pub mod correlation;
pub mod depth;
pub mod digits;
pub mod encode;
pub mod envelope;
pub mod framing;
pub mod http_head;
pub mod pages;
pub mod plain_call;
pub mod relay;
pub mod scan;
pub mod span;
pub mod splice;

#[cfg(feature = "python")]
mod python;
