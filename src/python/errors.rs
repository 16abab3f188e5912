//! Access to the exception classes of `mcpframe.errors` (pure Python), so that both backends raise
//! the very same classes and `except` clauses behave identically.

use pyo3::prelude::*;

/// Build an instance of `mcpframe.errors.<class>` carrying `message`, ready to be returned as `Err`.
/// Falls back to the import error itself if `mcpframe.errors` cannot be imported (a broken install).
pub(crate) fn new_error(py: Python<'_>, class: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    let build = || -> PyResult<PyErr> {
        let cls = py.import("mcpframe.errors")?.getattr(class)?;
        Ok(PyErr::from_value(cls.call1((message,))?))
    };
    build().unwrap_or_else(|err| err)
}
