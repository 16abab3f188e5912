//! PyO3 bindings: the `mcpframe._core` module. Each submodule wraps one pure Rust module and
//! registers its classes and functions here.

use pyo3::prelude::*;

mod correlator;
mod decoder;
mod encoder;
mod errors;
mod ffi;
mod http_head;
mod plain_call;
mod relay;
mod span;

/// The native backend of `mcpframe.core` (see `docs/core-contract.md`).
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    ffi::init(m.py())?;
    ffi::register(m)?;
    decoder::register(m)?;
    encoder::register(m)?;
    correlator::register(m)?;
    span::register(m)?;
    relay::register(m)?;
    http_head::register(m)?;
    plain_call::register(m)?;
    Ok(())
}
