//! Build script: with the `python` feature, emit PyO3's interpreter cfgs (`Py_3_11`, `Py_3_12`, ...)
//! for this crate too, so that `src/python/ffi/` can compile each use of CPython internals only for
//! the minor versions it was verified on (the extension is built per interpreter, not for abi3).

fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
